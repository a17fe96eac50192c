"""Record any run to a JSON transcript and replay it deterministically.

A transcript is {"format": "sayplan-transcript", "version": 1, "backend": ..., "instruction": ..., "calls": [...]}.
It records the instruction it was made for, and replay refuses a run for another one, so a
transcript never answers a task it was not made for (a hand-written one names its
instruction too; only a transcript that names none answers any).
Each call holds the request messages, the schema name, and either the response or
the transient error the backend raised, so replay reproduces failures too.
Replay checks that the run asks the same questions in the same order; a transcript
written by hand may leave out "messages" to skip that check for a call.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sayplan_core import files
from sayplan_core.llm.types import (
    BackendInfo,
    LlmBackend,
    LlmFatalError,
    LlmRequest,
    LlmResponse,
    LlmTransientError,
)

TRANSCRIPT_FORMAT = "sayplan-transcript"


class ReplayMismatchError(LlmFatalError):
    """The run diverged from the transcript (a different prompt, or more calls than recorded)."""


#: The largest transcript read back (a long bench run's is a few MB).
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024


class RecordingBackend:
    """Wraps a backend and keeps every exchange for `save`."""

    def __init__(self, inner: LlmBackend) -> None:
        self.inner = inner
        self.info = inner.info
        self.calls: list[dict[str, Any]] = []
        self.instruction: str | None = None
        #: the wrapped backend's deadline per call, so a session bounds a recorded call the same way
        self.timeout_s: float | None = getattr(inner, "timeout_s", None)

    def start_task(self, instruction: str) -> None:
        if self.instruction is not None and instruction != self.instruction:
            raise LlmFatalError("a transcript records one instruction; record each task to a transcript of its own")
        self.instruction = instruction
        self.inner.start_task(instruction)

    def complete(self, request: LlmRequest) -> LlmResponse:
        entry: dict[str, Any] = {"schema_name": request.schema_name, "messages": request.messages}
        if request.images:
            entry["images_sha256"] = [hashlib.sha256(i).hexdigest() for i in request.images]
        try:
            response = self.inner.complete(request)
        except LlmTransientError as exc:
            entry["error"] = {"kind": exc.kind, "message": str(exc)}
            self.calls.append(entry)
            raise
        entry["response"] = asdict(response)
        self.calls.append(entry)
        return response

    def transcript(self) -> dict[str, Any]:
        return {
            "format": TRANSCRIPT_FORMAT,
            "version": 1,
            "backend": {"name": self.info.name, "model": self.info.model, "base_url": self.info.base_url},
            "instruction": self.instruction,
            "calls": self.calls,
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.transcript(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    def save_new(self, folder: str | Path, prefix: str, number: int) -> Path:
        """Write the transcript as `<prefix>_<NNN>.json` in `folder`, NNN the first free number from `number` on:
        never over an earlier file (a restarted planner starts counting at 1 again), and whole or not at all (it
        is written and fsynced under a temporary name, then linked in; a full disk leaves no truncated file)."""
        folder = Path(folder)
        data = (json.dumps(self.transcript(), indent=1, ensure_ascii=False) + "\n").encode("utf-8")
        tmp = folder / f".{prefix}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with tmp.open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            while True:
                path = folder / f"{prefix}_{number:03d}.json"
                try:
                    os.link(tmp, path)  # fails if the name exists, whoever made it
                    return path
                except FileExistsError:
                    number += 1
        finally:
            tmp.unlink(missing_ok=True)


class ReplayBackend:
    """Answers from a transcript, in order."""

    def __init__(self, transcript: dict[str, Any], source: str = "<transcript>", check_messages: bool = True) -> None:
        if transcript.get("format") != TRANSCRIPT_FORMAT or not isinstance(transcript.get("calls"), list):
            raise LlmFatalError(f"{source}: not a {TRANSCRIPT_FORMAT} file")
        backend = transcript.get("backend") or {}
        self.info = BackendInfo("replay", str(backend.get("model", "replay")), source)
        self.calls: list[dict[str, Any]] = transcript["calls"]
        instruction = transcript.get("instruction")
        self.instruction = instruction if isinstance(instruction, str) else None
        self.source = source
        self.check_messages = check_messages
        self.position = 0

    @classmethod
    def from_file(cls, path: str | Path, check_messages: bool = True) -> ReplayBackend:
        path = Path(path)
        try:
            data = json.loads(files.read_bytes(path, MAX_TRANSCRIPT_BYTES, "transcript").decode("utf-8"))
        except files.FileReadError as exc:  # missing, not a regular file (/dev/zero, a FIFO) or too large
            raise LlmFatalError(str(exc)) from exc
        except OSError as exc:
            raise LlmFatalError(f"cannot read transcript {path}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise LlmFatalError(f"transcript {path} is not valid JSON: {exc.msg} at line {exc.lineno}") from exc
        except UnicodeDecodeError as exc:
            raise LlmFatalError(f"transcript {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
        except RecursionError:
            raise LlmFatalError(f"transcript {path} is nested too deeply to be a transcript") from None
        return cls(data, str(path), check_messages)

    def start_task(self, instruction: str) -> None:
        if self.instruction is not None and instruction.strip() != self.instruction.strip():
            raise ReplayMismatchError(
                f"{self.source} was recorded for the instruction {self.instruction!r}, not {instruction!r}"
            )

    @property
    def exhausted(self) -> bool:
        return self.position >= len(self.calls)

    def complete(self, request: LlmRequest) -> LlmResponse:
        if self.exhausted:
            raise ReplayMismatchError(
                f"{self.source}: the run made more LLM calls than the {len(self.calls)} recorded "
                f"({request.schema_name})"
            )
        entry = self.calls[self.position]
        self.position += 1
        recorded = entry.get("messages")
        if self.check_messages and recorded is not None and recorded != request.messages:
            diverged = _first_difference(recorded, request.messages)
            raise ReplayMismatchError(
                f"{self.source}: call {self.position - 1} diverged from the recording: {diverged}"
            )
        recorded_images = entry.get("images_sha256")
        if self.check_messages and recorded_images is not None:
            actual = [hashlib.sha256(i).hexdigest() for i in request.images]
            if actual != recorded_images:
                raise ReplayMismatchError(f"{self.source}: call {self.position - 1} was recorded with other images")
        if "error" in entry:
            error = entry["error"]
            raise LlmTransientError(str(error.get("kind", "error")), str(error.get("message", "recorded error")))
        raw = entry.get("response")
        if not isinstance(raw, dict) or "text" not in raw:
            raise LlmFatalError(f"{self.source}: call {self.position - 1} has neither 'response' nor 'error'")
        known = {k: raw[k] for k in LlmResponse.__dataclass_fields__ if k in raw}
        return LlmResponse(**known)


def _first_difference(recorded: list[Any], actual: list[Any]) -> str:
    if len(recorded) != len(actual):
        return f"{len(actual)} messages instead of the {len(recorded)} recorded"
    for index, (a, b) in enumerate(zip(recorded, actual, strict=True)):
        if a != b:
            text_a, text_b = str(a.get("content", "")), str(b.get("content", ""))
            at = next((i for i, (x, y) in enumerate(zip(text_a, text_b, strict=False)) if x != y), None)
            at = min(len(text_a), len(text_b)) if at is None else at
            recorded_part, actual_part = text_a[at : at + 60], text_b[at : at + 60]
            return f"message {index} differs at character {at}: recorded {recorded_part!r}, got {actual_part!r}"
    return "no difference"
