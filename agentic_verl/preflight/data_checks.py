"""Preflight: the train/val parquet files and the mode their prompts were written for."""

from __future__ import annotations

from pathlib import Path

from agentic_verl.preflight.settings import Report

_RL_COLUMNS = ("prompt", "reward_model", "data_source")


def data_paths(value: str | None) -> list[str]:
    """verl's data.*_files: one path or a hydra list `[a,b]`."""
    if value is None:
        return [""]
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        return [p.strip().strip("'\"") for p in value[1:-1].split(",") if p.strip()]
    return [value]


def readable_parquet(report: Report, topic: str, path: str, hint: str) -> tuple[int, set[str]] | None:
    """(rows, columns) of a local parquet file, or None after reporting why not (`hint`: the command that writes
    it)."""
    import pyarrow.parquet as pq

    if not path:
        report.problem(topic, "no file given")
        return None
    if "://" in path:
        report.note(topic, f"{path}: a remote path, not checked here")
        return None
    if not Path(path).is_file():
        report.problem(topic, f"{path} does not exist (write it with `{hint}`)")
        return None
    try:
        return pq.ParquetFile(path).metadata.num_rows, set(pq.read_schema(path).names)
    except Exception as exc:
        report.problem(topic, f"{path} is not a readable parquet file ({type(exc).__name__}: {exc})")
        return None


def check_data(report: Report, topic: str, path: str, *, rl: bool) -> str | None:
    """Readable parquet with the stage's columns; returns the rag_r1 mode of RL data (None when unknown)."""
    hint = "agentic-verl data rag-r1 --questions ... --out DIR" if rl else \
        "agentic-verl data sft-trajectories ... --out FILE"
    found = readable_parquet(report, topic, path, hint)
    if found is None:
        return None
    num_rows, columns = found
    if num_rows == 0:
        report.problem(topic, f"{path} has no rows")
        return None
    if not rl:
        if not ({"input_ids", "loss_mask"} <= columns or "messages" in columns):
            report.problem(topic, f"{path} has neither input_ids + loss_mask (agentic-verl data sft-trajectories) "
                                  f"nor messages columns; found {sorted(columns)}")
        else:
            report.ok(topic, f"{path}: {num_rows} rows")
        return None
    missing = [c for c in _RL_COLUMNS if c not in columns]
    if missing:
        report.problem(topic, f"{path} lacks the verl columns {missing} (found {sorted(columns)}): not rag_r1 RL "
                              "data (agentic-verl data rag-r1 writes it)")
        return None
    first = _first_row(path, [c for c in ("prompt", "agent_name") if c in columns])
    prompt = first.get("prompt")
    if not (isinstance(prompt, list) and prompt and all(isinstance(m, dict) and "role" in m for m in prompt)):
        report.problem(topic, f"{path}: `prompt` is not a list of chat messages ({str(prompt)[:80]!r})")
        return None
    agent = first.get("agent_name")
    if agent is not None and not str(agent).startswith("rag_r1"):
        report.problem(topic, f"{path}: rows are for the {agent!r} agent loop, not rag_r1")
        return None
    from agentic_verl.data.rag_r1_parquet import read_mode

    try:
        mode = read_mode(path)
    except ValueError as exc:
        report.problem(topic, str(exc))
        return None
    report.ok(topic, f"{path}: {num_rows} rows, mode {mode}")
    return mode


def _first_row(path: str, columns: list[str]) -> dict:
    """The first row's `columns`, reading only the first row group (training files can be large)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read_row_group(0, columns=columns).slice(0, 1).to_pylist()[0]


def check_modes(report: Report, modes: dict[str, str], run_mode: str | None) -> None:
    found = set(modes.values())
    if len(found) > 1:
        listing = ", ".join(f"{where}: {mode}" for where, mode in modes.items())
        report.problem("mode", f"the data files were written for different modes ({listing}); write them with the "
                               "same `agentic-verl data rag-r1 --mode`")
        return
    if run_mode and found and run_mode not in found:
        [data_mode] = found
        report.problem("mode", f"the run's mode {run_mode} but the data's prompts were written for {data_mode} "
                               f"(extra_info.rag_r1.mode). Drop the mode override (the recipes read the data's "
                               f"mode), or "
                               f"regenerate the data: agentic-verl data rag-r1 --questions ... --out DIR --mode "
                               f"{run_mode}")
    elif found:
        report.ok("mode", f"{found.pop()} (the data's)" + (" = the run's" if run_mode else ""))


def first_question(train: str | None) -> str | None:
    """The first training row's question (extra_info.question, else its last user message), for a test search."""
    try:
        row = _first_row(data_paths(train)[0], ["prompt", "extra_info"])
    except Exception:
        return None
    question = (row.get("extra_info") or {}).get("question")
    if not question:
        users = [m.get("content") for m in row.get("prompt") or [] if isinstance(m, dict) and m.get("role") == "user"]
        question = users[-1] if users else None
    return str(question)[:200] if question else None
