"""Reading a file named by a user, a parameter or a config: a regular file only, and never more than a limit.

A size check on `stat` alone let `/dev/zero` through (its size reads as 0) and two runs grew to about 24 GB before
the kernel killed them; a FIFO would block the reader forever. So the file is opened without blocking, must be a
regular file, and is read with a cap whatever its size claims to be.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class FileReadError(OSError):
    """The file cannot be read; the message names it and says why."""


def open_regular(path: str | Path, what: str = "file") -> int:
    """A descriptor of `path` opened for reading, in blocking mode, when it is a regular file; FileReadError
    otherwise (opened without blocking first: opening a FIFO would wait for a writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise FileReadError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise FileReadError(f"cannot read {what} {path}: it is a folder")
        if not stat.S_ISREG(mode):
            raise FileReadError(f"cannot read {what} {path}: not a regular file (a device, FIFO or socket)")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: str | Path, limit: int, what: str = "file") -> bytes:
    """At most `limit` bytes of a regular file; FileReadError naming `what` and `path` otherwise."""
    path = Path(path)
    fd = open_regular(path, what)
    try:
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileReadError(f"cannot read {what} {path}: over the {_size(limit)} limit")
        return b"".join(chunks)
    except FileReadError:
        raise
    except OSError as exc:
        raise FileReadError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def read_text(path: str | Path, limit: int, what: str = "file") -> str:
    """`read_bytes` decoded as UTF-8; a file that is not UTF-8 is a FileReadError naming it and the byte."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileReadError(f"cannot read {what} {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _size(limit: int) -> str:
    return f"{limit / 1e6:.0f} MB" if limit >= 1_000_000 else f"{limit} byte"
