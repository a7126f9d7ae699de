"""The BFCL environment server's `/check` beside bfcl-eval's multi-turn checker run directly, on every multi-turn
question (or the first N of each category) with its ground truth and four mutations.

    .venv/bin/python scripts/agreement/bfcl_env_agreement.py [--questions N] [--concurrency 16]

Starts the server in `.venv-bfcl` (created or updated on first use), sends every trajectory to `/check` through
`BfclEnvClient` (`--concurrency` at once), runs bfcl-eval's `multi_turn_checker` on the same trajectories in one
process of its own, and prints the verdicts by kind and error type, the disagreements, and both wall times.
Exit code 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bfcl_mt_cases import all_cases, decoded, official_checks  # noqa: E402

from agentic_verl.bfcl_env import BfclEnvClient, BfclEnvProcess  # noqa: E402
from agentic_verl.bfcl_env.venv import ensure_venv  # noqa: E402


async def _ours(url: str, cases: list, concurrency: int) -> list[dict]:
    client, gate = BfclEnvClient(url), asyncio.Semaphore(concurrency)

    async def one(entry, strings):
        async with gate:
            return await client.check(entry=entry, model_calls=decoded(strings))

    try:
        return await asyncio.gather(*(one(entry, strings) for entry, _, strings in cases))
    finally:
        await client.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=None, help="the first N questions of each category")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)
    ensure_venv()
    cases = all_cases(args.questions)
    with BfclEnvProcess() as server:
        started = time.perf_counter()
        ours = asyncio.run(_ours(server.url, cases, args.concurrency))
        ours_s = time.perf_counter() - started
    started = time.perf_counter()
    theirs = official_checks(cases)
    theirs_s = time.perf_counter() - started
    differ = [(entry["id"], kind, mine["error_type"], official["error_type"])
              for (entry, kind, _), mine, official in zip(cases, ours, theirs, strict=True)
              if (mine["valid"], mine["error_type"]) != (official["valid"], official["error_type"])]
    print(f"{len(cases)} trajectories ({len(cases) // 5} questions x 5), {len(differ)} verdicts differ")
    for (kind, error_type), n in sorted(Counter((kind, mine["error_type"] or "valid")
                                                for (_, kind, _), mine in zip(cases, ours, strict=True)).items()):
        print(f"  {kind:17s} {error_type:42s} {n:5d}")
    print(f"server /check: {ours_s:.1f} s at concurrency {args.concurrency} ({1000 * ours_s / len(cases):.1f} ms "
          f"each); bfcl-eval's checker directly, one process: {theirs_s:.1f} s")
    for row in differ[:10]:
        print("  differs:", row)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
