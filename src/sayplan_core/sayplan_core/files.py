"""Reading a file named by a user, a parameter or a config: a regular file only, and never more than a limit.

A size check on `stat` alone let `/dev/zero` through (its size reads as 0) and two runs grew to about 24 GB before
the kernel killed them; a FIFO would block the reader forever. So the file is opened without blocking, must be a
regular file, and is read with a cap whatever its size claims to be.

YAML read from such a file goes through `load_yaml`: `yaml.safe_load` without aliases (a 277 KB metadata.yaml whose
aliases expand to millions of nodes took 43 s and 1.37 GB) and no deeper than MAX_YAML_DEPTH. `inside` refuses a
path that leaves the folder it was found in (a symlink to /etc/passwd in a run folder).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml


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


#: How deep a YAML document read from a file may nest (the project's files nest a few levels).
MAX_YAML_DEPTH = 64


class _NoAliasLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses aliases (an alias bomb expands a small file a million-fold) and nesting deeper
    than MAX_YAML_DEPTH (the composer recurses once per level)."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        mark: Any = event.start_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}"
        if isinstance(event, yaml.AliasEvent):
            problem = f"YAML alias *{event.anchor} at {where} refused: aliases are not read, write the value out"
            raise yaml.composer.ComposerError(None, None, problem, mark)
        if self._depth >= MAX_YAML_DEPTH:
            problem = f"YAML nested deeper than {MAX_YAML_DEPTH} levels at {where} refused"
            raise yaml.composer.ComposerError(None, None, problem, mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_yaml(text: str | bytes) -> Any:
    """`yaml.safe_load` for text read from a file no one vouches for: a yaml.YAMLError (with line and column) for an
    alias or for nesting deeper than MAX_YAML_DEPTH, as for any other malformed YAML."""
    return yaml.load(text, Loader=_NoAliasLoader)


def inside(path: str | Path, folder: str | Path, what: str = "file") -> Path:
    """`path` with its symlinks resolved, when that stays inside `folder` (resolved too); FileReadError naming
    `what` and `path` when it leads elsewhere (a symlink to a host file or a device)."""
    real, base = Path(path).resolve(), Path(folder).resolve()
    if not real.is_relative_to(base):
        raise FileReadError(f"cannot read {what} {path}: it leads outside {folder} (to {real})")
    return real
