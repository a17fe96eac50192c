"""Fake model packs for the tests: real importable part packages written to a folder, pinned with hashlib."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sayplan_core.llm.model_packs import ModelPack, Part

NEVER_IMPORTED = 'raise RuntimeError("a part package is found, never imported")\n'


def write_pack(root: Path, name: str, pieces: list[bytes], prefix: str = "fakepart") -> ModelPack:
    """Part packages `<prefix>1..N` under `root`, and the pack they make, pinned to the bytes written."""
    parts = []
    for number, piece in enumerate(pieces, 1):
        package = root / f"{prefix}{number}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text(NEVER_IMPORTED, encoding="utf-8")
        (package / "data" / f"part{number:02d}.bin").write_bytes(piece)
        parts.append(Part(f"{prefix}-dist{number}", "0.0.1", f"{prefix}{number}", f"data/part{number:02d}.bin"))
    whole = b"".join(pieces)
    return ModelPack(
        name=name,
        file_name=f"{name}.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        parts=tuple(parts),
        licence="test only",
        upstream="nowhere",
        summary="a fake pack",
    )
