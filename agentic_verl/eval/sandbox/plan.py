"""What a sandboxed program may use (`Limits`) and what isolation it gets (`Isolation`); see `sandbox/__init__.py`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 15.0  # wall clock
    cpu_s: int = 10  # CPU seconds
    memory_mb: int = 1024  # address space
    file_mb: int = 16  # largest file the program may write (and the size of its /program and /tmp)
    max_processes: int = 64  # RLIMIT_NPROC of the run's own uid (full isolation): processes and threads
    output_chars: int = 2000  # stderr/stdout tail kept in the result

    def __post_init__(self):
        if self.timeout_s <= 0 or self.cpu_s < 1 or self.memory_mb < 64 or self.file_mb < 1 or self.max_processes < 4:
            raise ValueError(f"bad sandbox limits: {self}")


@dataclass(frozen=True)
class Isolation:
    """The isolation `run_program` gives each program here, found by `detect_isolation`."""

    full: bool  # every mechanism of the full sandbox works here
    mechanisms: tuple[str, ...]  # what each program gets, one phrase each
    missing: str = ""  # full=False: why the full sandbox could not start here
    landlock: str = ""  # the kernel's Landlock, as found (not used: the mount namespace already limits the view)
    read_only: tuple[str, ...] = field(default=())  # host folders visible read-only inside the sandbox

    @property
    def namespaces(self) -> bool:
        return self.full

    def describe(self) -> str:
        """One line for logs and result files."""
        head = "full" if self.full else f"REDUCED ({self.missing})"
        return f"{head}: " + "; ".join(self.mechanisms)

    def as_dict(self) -> dict:
        return {"full": self.full, "mechanisms": list(self.mechanisms), "missing": self.missing,
                "landlock": self.landlock, "read_only": list(self.read_only), "text": self.describe()}


class SandboxUnavailable(ValueError):
    """The full sandbox cannot run here and reduced isolation was not allowed (`isolation(allow_reduced=True)`,
    `--allow-reduced-isolation`). A ValueError, like CodeExecutionNotAllowed: the CLI prints it and exits 2."""


class CodeExecutionNotAllowed(ValueError):
    """Code would run without the caller's explicit opt-in (`allow_code_execution`): nothing was loaded or run."""
