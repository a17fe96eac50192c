"""One writer per output folder: an advisory lock that a second process is refused, and that a crash releases.

Two `sayplan bench` runs on the same `--out` both appended every run to one results.jsonl and both reported
success. The lock is `flock` on a `.lock` file in the folder: the kernel drops it when the process ends, however it
ends (kill -9 included), so a crashed run never leaves a stale lock behind. Within one process the lock is
re-entrant (the CLI holds it around the bench and its report; the bench takes it again).
"""

from __future__ import annotations

import fcntl
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = ".lock"

_held: dict[Path, tuple[int, int]] = {}  # resolved folder -> (fd, depth), this process's locks
_guard = threading.Lock()


class FolderInUseError(ValueError):
    """Another process writes to this folder."""


@contextmanager
def folder_lock(folder: Path, what: str = "folder") -> Iterator[None]:
    """Hold `folder` (created if missing) for this process; FolderInUseError naming the other process if held."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder.resolve()
    with _guard:
        if key in _held:
            fd, depth = _held[key]
            _held[key] = (fd, depth + 1)
        else:
            _held[key] = (_acquire(key, what), 1)
    try:
        yield
    finally:
        with _guard:
            fd, depth = _held[key]
            if depth > 1:
                _held[key] = (fd, depth - 1)
            else:
                del _held[key]
                os.close(fd)  # releases the flock


def _acquire(folder: Path, what: str) -> int:
    path = folder / LOCK_FILE
    try:  # never through a link: a planted `.lock -> somefile` must not get that file truncated
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise FolderInUseError(f"{what} {folder}: cannot open its lock file {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FolderInUseError(f"{what} {folder}: its lock file {path} is not a regular file")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "another process"
        os.close(fd)
        raise FolderInUseError(
            f"{what} {folder} is in use by process {holder}; wait for it to end or choose another folder"
        ) from None
    except OSError:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
    return fd
