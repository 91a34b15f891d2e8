"""One writer per run folder: an OS-level lock that training and resuming hold while they write.

The lock is `fcntl.flock` on the folder's `.lock` file. The kernel releases it when the holding
process exits, however it exits (SIGKILL included), so there is no stale lock to guess about; the
file keeps the holder's PID only to name it in the message a second writer gets. Readers (eval,
export, the dashboard) never take it: every file a writer replaces is replaced atomically.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

LOCK_FILE = ".lock"


class RunLockedError(ValueError):
    """Another process is writing this run folder."""


#: What a second writer of a run folder is told ({folder}: the folder, {holder}: the PID holding it).
RUN_FOLDER_BUSY = (
    "{folder} is being written by process {holder} (one writer per run folder); wait for it to finish, stop it "
    "(`touch STOP` in the folder, or the dashboard's Stop), or choose another --run-dir"
)


class RunLock:
    """`with RunLock(folder):` holds the folder's write lock, or raises RunLockedError naming the holder in
    `refusal` (a run folder's sentence unless told another: a sweep folder has its own). `name`: the lock file's
    (another name locks one file of a folder that others write too, e.g. a bench's results)."""

    def __init__(self, run_dir: Path, refusal: str = RUN_FOLDER_BUSY, name: str = LOCK_FILE) -> None:
        self.path = Path(run_dir) / name
        self.refusal = refusal
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunLockedError(self.refusal.format(folder=self.path.parent, holder=holder)) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        os.register_at_fork(after_in_child=self._not_in_a_forked_child)
        return self

    def _not_in_a_forked_child(self) -> None:
        """A forked child (a sweep's worker) drops its copy of the descriptor: the lock is this process's
        alone, so the folder is free the moment this process ends, whatever its children still do."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None


def is_locked(run_dir: Path) -> bool:
    """True while some process holds the folder's write lock (a training or resume in progress)."""
    path = Path(run_dir) / LOCK_FILE
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
