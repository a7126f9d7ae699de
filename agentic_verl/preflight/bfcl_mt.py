"""Preflight for recipes/funreason_mt/ (grpo.sh: stage grpo; sft.sh: stage sft): what would make a launched
multi-turn function-calling run fail, checked in seconds.

- data (grpo): the train/val files are parquet verl can read with the columns `agentic-verl data bfcl-multi-turn`
  writes (`prompt`, `reward_model`, `data_source`, `extra_info`), rows for the `bfcl_multi_turn` loop, the first
  row's `extra_info` a BFCL entry `parse_entry` accepts (its ground truth included: the reward needs it). Rows that
  share a user turn or a class state with one of BFCL's 800 multi-turn questions (the generator's own rule,
  `data.bfcl_multi_turn.overlap`; checked on the first OVERLAP_ROWS rows) are refused as training rows: BFCL's
  questions are its test set; as validation rows they are noted (an evaluation inside training);
- data (sft): `input_ids` + `loss_mask` (the `sft.parquet` that `data bfcl-multi-turn --tokenizer MODEL` writes);
- model: a local folder has config.json, weights and a tokenizer; a Hub id is checked as every recipe's;
- environment (grpo): the BFCL environment server at the run's env_url answers `/health` and serves the classes
  the first training row involves; without an env_url, `.venv-bfcl` must exist (the recipe starts the server from
  it);
- GPU memory: the budget every recipe checks (`check_gpu_memory`), skipped on CPU.
"""

from __future__ import annotations

from agentic_verl.preflight.data_checks import _first_row, data_paths, readable_parquet
from agentic_verl.preflight.gpu_memory import check_gpu_memory
from agentic_verl.preflight.model_checks import check_model
from agentic_verl.preflight.settings import RagR1Settings, Report

STAGES = ("grpo", "sft")
AGENT_NAME = "bfcl_multi_turn"
_RL_COLUMNS = ("prompt", "reward_model", "data_source", "extra_info")
OVERLAP_ROWS = 256  # rows compared with BFCL's questions (a data file is all generated or all BFCL's, in practice)
_DATA_HINT = "agentic-verl data bfcl-multi-turn --out DIR --seed S --count N (--tokenizer MODEL | --no-sft)"


def check_bfcl_mt(settings: RagR1Settings, stage: str) -> Report:
    """Every check for one grpo.sh (`stage` "grpo") or sft.sh ("sft") launch; see the module docstring."""
    if stage not in STAGES:
        raise ValueError(f"unknown bfcl-mt preflight stage {stage!r}; known: {', '.join(STAGES)}")
    report = Report()
    classes = None
    for role, path in (("train", settings.train), ("val", settings.val)):
        if path is None and role == "val":
            continue
        for one in data_paths(path):
            if stage == "sft":
                check_sft_data(report, f"{role} data", one)
            else:
                found = check_rl_data(report, f"{role} data", one, training=role == "train")
                classes = classes or found
    check_model(report, "model", settings.model, tokenizer=True)
    if stage == "grpo":
        check_environment(report, settings.env_url, classes)
    check_gpu_memory(report, settings)
    return report


def check_rl_data(report: Report, topic: str, path: str, *, training: bool) -> list[str] | None:
    """A readable parquet of `bfcl_multi_turn` rows; returns the first row's involved classes (None when unknown)."""
    from agentic_verl.rewards.bfcl.multi_turn_entry import EntryError, parse_entry

    found = readable_parquet(report, topic, path, _DATA_HINT)
    if found is None:
        return None
    rows, columns = found
    missing = [c for c in _RL_COLUMNS if c not in columns]
    if rows == 0 or missing:
        what = "has no rows" if rows == 0 else f"lacks the columns {missing} (found {sorted(columns)})"
        report.problem(topic, f"{path} {what}: not bfcl_multi_turn RL data ({_DATA_HINT} writes rl.parquet)")
        return None
    first = _first_row(path, [c for c in (*_RL_COLUMNS, "agent_name") if c in columns])
    agent = first.get("agent_name")
    if agent is not None and agent != AGENT_NAME:
        report.problem(topic, f"{path}: rows are for the {agent!r} agent loop, not {AGENT_NAME}")
        return None
    try:
        entry = parse_entry(first.get("extra_info"), need_ground_truth=True)
    except EntryError as exc:
        report.problem(topic, f"{path}: the first row is not a BFCL multi-turn entry: {exc}")
        return None
    shared = bfcl_overlap(path, OVERLAP_ROWS)
    if shared:
        message = (f"{path}: {len(shared)} of its first {min(rows, OVERLAP_ROWS)} rows share user turns or states "
                   f"with BFCL's multi-turn questions, its test set (e.g. {shared[0]})")
        if training:
            report.problem(topic, f"{message}: never train on them; generate training tasks with `{_DATA_HINT}`")
            return None
        report.note(topic, f"{message}: validation on them evaluates on BFCL's test set during training")
    report.ok(topic, f"{path}: {rows} rows, first {entry.id} ({entry.num_turns} turns, {', '.join(entry.involved_classes)})")
    return entry.involved_classes


def bfcl_overlap(path: str, limit: int) -> list[str]:
    """`row id: what it shares` for the first `limit` rows whose entry shares a user turn or a class state with one
    of BFCL's multi-turn questions."""
    import pyarrow.parquet as pq

    from agentic_verl.data.bfcl_multi_turn.overlap import BfclMultiTurnSet
    from agentic_verl.rewards.bfcl.multi_turn_entry import EntryError, parse_entry

    bfcl = BfclMultiTurnSet.load()
    batch = next(pq.ParquetFile(path).iter_batches(batch_size=limit, columns=["extra_info"]), None)
    shared = []
    for extra_info in batch.column("extra_info").to_pylist() if batch is not None else []:
        try:
            entry = parse_entry(extra_info)
        except EntryError:
            continue  # the first row's entry is checked on its own; this check is about BFCL's questions only
        found = bfcl.overlap({"question": entry.question, "initial_config": entry.initial_config})
        if found:
            shared.append(f"{entry.id}: {', '.join(found)}")
    return shared


def check_sft_data(report: Report, topic: str, path: str) -> None:
    hint = _DATA_HINT.replace("(--tokenizer MODEL | --no-sft)", "--tokenizer MODEL")
    found = readable_parquet(report, topic, path, hint)
    if found is None:
        return
    rows, columns = found
    if rows == 0 or not {"input_ids", "loss_mask"} <= columns:
        what = "has no rows" if rows == 0 else f"has no input_ids + loss_mask columns (found {sorted(columns)})"
        report.problem(topic, f"{path} {what}: not the sft.parquet of `data bfcl-multi-turn --tokenizer MODEL`")
    else:
        report.ok(topic, f"{path}: {rows} rows")


def check_environment(report: Report, url: str | None, classes: list[str] | None, timeout_s: float = 10.0) -> None:
    """The BFCL environment server answers /health and serves `classes`; with no URL, `.venv-bfcl` exists."""
    import httpx

    from agentic_verl.bfcl_env.venv import MAKE_TARGET, available, venv_dir

    topic = "environment"
    if not url:
        if available():
            report.ok(topic, f"no BFCL_ENV_URL: the recipe starts the server from {venv_dir()}")
        else:
            report.problem(topic, f"no BFCL_ENV_URL, and no {venv_dir()} to start the server from: `{MAKE_TARGET}`")
        return
    start = "start one: bash scripts/launch_bfcl_env.sh bash recipes/funreason_mt/grpo.sh (grpo.sh does it without BFCL_ENV_URL)"
    try:
        response = httpx.get(url.rstrip("/") + "/health", timeout=timeout_s, trust_env=False)
        health = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        report.problem(topic, f"no answer from {url}/health ({type(exc).__name__}: {exc}); {start}")
        return
    if response.status_code != 200 or health.get("status") != "ok":
        report.problem(topic, f"{url}/health answered {response.status_code}: {str(health)[:200]}")
        return
    served = health.get("classes")
    if served is None:  # a server with a token answers only its status without one
        report.note(topic, f"{url}: /health ok (classes not shown without the token)")
        return
    lacking = sorted(set(classes or ()) - set(served))
    if lacking:
        report.problem(topic, f"{url} does not serve {lacking}, which the training data involves (it serves {served})")
        return
    report.ok(topic, f"{url}: /health ok, bfcl-eval {health.get('bfcl_eval')}, {health.get('sessions')} session(s) open")
