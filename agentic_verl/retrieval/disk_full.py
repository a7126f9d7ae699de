"""A long index build or encode that runs out of disk stops saying what it was writing and how to resume: its
finished steps are kept, so freeing space and resuming loses nothing."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def resumable_when_disk_full(doing: str, resume_command: str) -> Iterator[None]:
    """Re-raise ENOSPC inside the block as an OSError that names `doing` and `resume_command`; other errors pass."""
    try:
        yield
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise OSError(errno.ENOSPC, f"no space left on the device while {doing}; free some space, then resume "
                          f"with: {resume_command}") from exc
        raise
