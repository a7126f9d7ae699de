"""Run code and bring back what it printed: `run_cells`, the sandbox's entry point for tools (a pass/fail verdict is
`run_program`'s job).

    run = run_cells(["x = 2"], "print(x * 21)", Limits(timeout_s=5), plan=isolation(), max_chars=4000)
    run.status, run.stdout, run.stderr, run.exception   # 'completed', '42\\n', '', ''

The cells run in one fresh sandboxed interpreter (`runner.run_with`, every limit and isolation of `sandbox/`): the
earlier `replay` cells first, their output discarded (how a tool carries state across calls without keeping a
process alive), then `cell`, whose stdout and stderr are captured in memory (the first `max_chars` characters of
each, with the total counted) and whose exception is formatted from its own frames on. A small driver program does
this inside the sandbox and writes one record (JSON after RECORD_MARK) to stderr when it ends; the supervisor reads
it from the tail the runner keeps. Without a record (timeout, a kill, `os._exit`) the result carries the raw tail:
the cell's stdout streams to the real stdout as it runs, so a timed-out loop still shows what it printed.

Statuses: completed (the driver ran to its end; `exception` says whether the cell raised), replay_error (an earlier
cell raised when replayed), timeout (wall clock or CPU seconds), killed (a signal, the memory limit, or the process
ended before the driver did), sandbox_error (the sandbox could not start).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agentic_verl.eval.sandbox.plan import Isolation, Limits
from agentic_verl.eval.sandbox.runner import run_with

CELL_STATUSES = ("completed", "replay_error", "timeout", "killed", "sandbox_error")
RECORD_MARK = "\n\x00agentic_verl_cell_record\x00"
_FROM_RUN_STATUS = {"timeout": "timeout", "cpu_limit": "timeout", "sandbox_error": "sandbox_error"}

# Runs inside the sandbox as program.py. Everything it needs after the cell starts is bound before it starts.
_DRIVER = r'''
import io as _io, json as _json, os as _os, sys as _sys, traceback as _tb
_CELLS, _MAX, _MARK, _TB_LINES = _json.loads(%(payload)r)
_write, _getpid, _exit, _dumps, _me = _os.write, _os.getpid, _os._exit, _json.dumps, _os.getpid()

class _Capture(_io.TextIOBase):
    def __init__(self, fd):
        self.fd, self.kept, self.total = fd, [], 0
    def writable(self):
        return True
    def write(self, s):
        s = s if isinstance(s, str) else str(s)
        room = _MAX - sum(map(len, self.kept)) if self.total < _MAX else 0
        if room > 0:
            self.kept.append(s[:room])
            if self.fd >= 0:
                _write(self.fd, s[:room].encode("utf-8", "backslashreplace"))
        self.total += len(s)
        return len(s)
    def text(self):
        return "".join(self.kept)

class _Sink(_io.TextIOBase):
    def writable(self):
        return True
    def write(self, s):
        return len(s)

def _format(e):
    lines = _tb.format_exception(type(e), e, e.__traceback__.tb_next)  # from the cell's frames on
    return "".join(lines[:1] + lines[1:][-_TB_LINES:]) if len(lines) > _TB_LINES + 1 else "".join(lines)

_scope = {"__name__": "__main__", "__builtins__": __builtins__}
_out, _err = _Capture(1), _Capture(-1)
_record = {"replayed": 0, "replay_error": "", "exception": ""}
_real = (_sys.stdout, _sys.stderr)
for _i, _source in enumerate(_CELLS):
    _last = _i == len(_CELLS) - 1
    _sys.stdout, _sys.stderr = (_out, _err) if _last else (_Sink(), _Sink())
    try:
        exec(compile(_source, "<cell>" if _last else "<cell %%d>" %% (_i + 1), "exec"), _scope)
    except BaseException as _e:  # the cell's own failure, SystemExit included: an observation, not a crash
        _scope.clear()  # free what a memory hog holds before formatting
        _text = _format(_e)
        if _getpid() != _me:  # a process the cell forked: never report for the cell, never run on
            _exit(1)
        _record["exception" if _last else "replay_error"] = _text
        break
    if _getpid() != _me:
        _exit(0)
    if not _last:
        _record["replayed"] += 1
_sys.stdout, _sys.stderr = _real
_record.update(stdout=_out.text(), stderr=_err.text(), stdout_total=_out.total, stderr_total=_err.total)
_write(2, (_MARK + _dumps(_record)).encode("utf-8", "backslashreplace"))
'''


@dataclass(frozen=True)
class CellRun:
    status: str  # one of CELL_STATUSES
    stdout: str = ""  # the first max_chars characters
    stderr: str = ""
    exception: str = ""  # the cell's traceback (its last lines), empty when it did not raise
    stdout_total: int = 0  # characters written, kept or not
    stderr_total: int = 0
    replay_error: str = ""  # replay_error: the traceback of the earlier cell that failed
    seconds: float = 0.0
    detail: str = ""  # no record: how the run ended, and the raw output tail

    @property
    def truncated(self) -> bool:
        return self.stdout_total > len(self.stdout) or self.stderr_total > len(self.stderr)


def run_cells(replay: list[str] | tuple[str, ...], cell: str, limits: Limits, plan: Isolation,
              max_chars: int = 4000, traceback_lines: int = 12) -> CellRun:
    """Run `replay` (output discarded) and then `cell` in one fresh sandboxed interpreter; see the module docstring."""
    payload = json.dumps([[*replay, cell], max_chars, RECORD_MARK, traceback_lines])  # ASCII: any text survives
    # the record holds two streams of max_chars and a traceback, JSON-escaped (up to 6 characters per character)
    keep = 6 * (2 * max_chars + 200 * traceback_lines) + 4096
    sized = Limits(timeout_s=limits.timeout_s, cpu_s=limits.cpu_s, memory_mb=limits.memory_mb, file_mb=limits.file_mb,
                   max_processes=limits.max_processes, output_chars=max(limits.output_chars, keep))
    result = run_with(_DRIVER % {"payload": payload}, sized, plan)
    record = _record(result.output) if result.status == "passed" else None
    if record is None:
        status = _FROM_RUN_STATUS.get(result.status, "killed")
        detail = f"{result.status} (exit status {result.returncode}) after {result.seconds:.1f} s"
        return CellRun(status, seconds=result.seconds, detail=f"{detail}\n{result.output[-max_chars:]}".rstrip())
    status = "replay_error" if record["replay_error"] else "completed"
    return CellRun(status, record["stdout"], record["stderr"], record["exception"], record["stdout_total"],
                   record["stderr_total"], record["replay_error"], result.seconds)


def _record(output: str) -> dict | None:
    at = output.rfind(RECORD_MARK)
    if at < 0:
        return None
    try:
        record = json.loads(output[at + len(RECORD_MARK):])
    except ValueError:
        return None
    fields = {"stdout": str, "stderr": str, "exception": str, "replay_error": str, "stdout_total": int,
              "stderr_total": int}
    if not isinstance(record, dict) or any(not isinstance(record.get(k), t) for k, t in fields.items()):
        return None
    return record
