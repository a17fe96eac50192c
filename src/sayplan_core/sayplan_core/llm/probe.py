"""Is the configured LLM reachable? A check that costs no tokens, for start-up and diagnostics.

A planner that comes up with nothing to ask fails at its first goal, long after the operator
left; this answers the question at activation, in one line a person can act on. Each backend
is asked the cheapest thing that proves it would answer: an OpenAI-compatible server its model
list, Ollama its installed models (and whether the configured one is among them), a replay its
transcript file, the embedded model its runtime and GGUF file. No completion is ever sent.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from sayplan_core.graph import limits
from sayplan_core.llm.config import DEFAULT_MODELS, LlmConfig, resolve_backend_name
from sayplan_core.llm.http import (
    BodyTooLargeError,
    deadline,
    deadline_transport,
    network_cause,
    one_line,
)
from sayplan_core.llm.types import LlmFatalError, redact_url

#: the largest model list read (OpenAI's is tens of kB; a server sending more is not an LLM server)
MAX_PROBE_BODY_BYTES = 4 * 1024 * 1024
OPENAI_URL = "https://api.openai.com/v1"
#: the longest `auto` waits for an Ollama server to answer before choosing the embedded model
AUTO_OLLAMA_WAIT_S = 1.5


@dataclass(frozen=True)
class LlmProbe:
    """ok: the backend would answer; backend: which one was checked (`auto` resolved); detail: one line."""

    ok: bool
    backend: str
    detail: str


class _Progress:
    """What the probe is doing now, so a probe cut off by its deadline can still say where it was."""

    def __init__(self, backend: str, timeout_s: float) -> None:
        self.backend = backend
        self.where = f"the {backend} backend"
        self.timeout_s = timeout_s


def probe_llm(config: LlmConfig, timeout_s: float, deep: bool = False) -> LlmProbe:
    """Check, without generating, that `config`'s backend would answer; returns within `timeout_s`.

    deep: also check what costs more than a look (the embedded model's SHA-256, about 1 s per GB); the planner
    node's periodic probe leaves it out, `sayplan llm check` does it.

    Never raises: every failure is an LlmProbe with ok=False and a line saying what to do.
    """
    if not timeout_s > 0:
        return LlmProbe(False, config.backend, f"the probe timeout must be positive, got {timeout_s}")
    end = time.monotonic() + timeout_s
    progress = _Progress(config.backend, timeout_s)
    result: list[LlmProbe] = []

    def work() -> None:
        try:
            result.append(_probe(config, end, progress, deep))
        except LlmFatalError as exc:  # a setting that cannot work: its own line says which and why
            result.append(LlmProbe(False, progress.backend, str(exc)))
        except Exception as exc:  # a probe reports, it never raises into the node calling it
            result.append(LlmProbe(False, progress.backend, f"{progress.where}: {network_cause(exc)}"))

    # Local files and imports have no timeout of their own: a thread bounds them too (it is a
    # daemon, and whatever it still does after the deadline changes nothing the caller sees).
    worker = threading.Thread(target=work, name="llm-probe", daemon=True)
    worker.start()
    worker.join(max(0.0, end - time.monotonic()))
    if result:
        return result[0]
    return LlmProbe(False, progress.backend, f"{progress.where} gave no answer within {timeout_s:g} s")


def _left(end: float) -> float:
    """Time left for a network call: a little before the probe's end, so its own error is the one reported."""
    left = end - time.monotonic()
    return max(0.0, left - min(0.1, 0.1 * left))


def _probe(config: LlmConfig, end: float, progress: _Progress, deep: bool) -> LlmProbe:
    try:
        config.validate()
    except LlmFatalError as exc:
        return LlmProbe(False, config.backend, str(exc))
    progress.where = (
        "choosing the backend for llm=auto" if config.backend == "auto" else f"checking llm={config.backend}"
    )
    name, why = resolve_backend_name(config, min(AUTO_OLLAMA_WAIT_S, _left(end)))
    progress.backend = name
    chosen = f" (auto: {why})" if config.backend == "auto" else ""
    if name == "openai":
        probe = _probe_openai(config, end, progress)
    elif name == "ollama":
        probe = _probe_ollama(config, end, progress)
    elif name == "local":
        probe = _probe_local(config, progress, deep)
    else:
        probe = _probe_replay(config, progress)
    return LlmProbe(probe.ok, name, probe.detail + chosen)


def _get_json(url: str, headers: dict[str, str], end: float) -> tuple[int, Any]:
    """GET `url` within the probe's deadline: the status and the JSON body (None when it is not JSON)."""
    import httpx

    left = _left(end)
    with (
        deadline(left),
        httpx.Client(timeout=max(left, 0.001), transport=deadline_transport(httpx, MAX_PROBE_BODY_BYTES)) as client,
    ):
        response = client.get(url, headers=headers)
    try:
        return response.status_code, json.loads(response.content)
    except (ValueError, RecursionError):
        return response.status_code, None


def _http_failure(backend: str, where: str, exc: Exception, hint: str, timeout_s: float) -> LlmProbe:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return LlmProbe(False, backend, f"{where} did not answer within {timeout_s:g} s{hint}")
    if isinstance(exc, BodyTooLargeError):
        too_long = f"sent over {exc.limit_bytes} bytes for a model list: is it an LLM server?"
        return LlmProbe(False, backend, f"{where} {too_long}")
    return LlmProbe(False, backend, f"{where} {network_cause(exc)}{hint}")


def _probe_openai(config: LlmConfig, end: float, progress: _Progress) -> LlmProbe:
    import httpx

    base = (config.base_url or OPENAI_URL).rstrip("/")
    where = f"the OpenAI-compatible server at {redact_url(base)}"
    progress.where = where
    key = os.environ.get(config.api_key_env)
    if not key and not config.base_url:
        return LlmProbe(
            False, "openai", f"the openai backend needs {config.api_key_env} set (or base_url for a local server)"
        )
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        status, body = _get_json(f"{base}/models", headers, end)
    except (httpx.HTTPError, BodyTooLargeError) as exc:
        return _http_failure(
            "openai", where, exc, ": is the server running? check the LLM base_url", progress.timeout_s
        )
    if status in (401, 403):
        return LlmProbe(False, "openai", f"{where} rejected the API key (HTTP {status}): check {config.api_key_env}")
    if status == 404:
        return LlmProbe(
            False, "openai", f"{where} has no /models (HTTP 404): is the base_url right? (it usually ends in /v1)"
        )
    if status != 200:
        return LlmProbe(False, "openai", f"{where} answered HTTP {status} to GET /models")
    model = limits.shown(config.model or DEFAULT_MODELS["openai"])  # echoed bounded
    served = _ids(body, "data", ("id",))
    if served is None:
        return LlmProbe(False, "openai", f"{where} answered GET /models with no model list: is it an LLM server?")
    if served and (config.model or DEFAULT_MODELS["openai"]) not in served:
        return LlmProbe(False, "openai", f"{where} does not serve model '{model}' (it serves: {_some(served)})")
    return LlmProbe(True, "openai", f"{where} answers and serves '{model}'")


def _probe_ollama(config: LlmConfig, end: float, progress: _Progress) -> LlmProbe:
    import httpx

    from sayplan_core.llm.ollama_backend import ollama_host

    host = ollama_host(config.base_url or None)
    where = f"ollama at {redact_url(host)}"
    progress.where = where
    try:
        status, body = _get_json(f"{host}/api/tags", {}, end)
    except (httpx.HTTPError, BodyTooLargeError) as exc:
        hint = ": is `ollama serve` running there? set OLLAMA_HOST (or the LLM base_url) to where it listens"
        return _http_failure("ollama", where, exc, hint, progress.timeout_s)
    if status != 200:
        return LlmProbe(False, "ollama", f"{where} answered HTTP {status} to GET /api/tags: is it an Ollama server?")
    installed = _ids(body, "models", ("name", "model"))
    if installed is None:
        return LlmProbe(False, "ollama", f"{where} answered GET /api/tags with no model list: is it Ollama?")
    wanted = config.model or DEFAULT_MODELS["ollama"]
    model = limits.shown(wanted)  # echoed bounded
    if _tagged(wanted) not in {_tagged(m) for m in installed}:
        have = f" (it has: {_some(installed)})" if installed else " (it has no models)"
        return LlmProbe(False, "ollama", f"{where} does not have model '{model}': run `ollama pull {model}`{have}")
    return LlmProbe(True, "ollama", f"{where} answers and has '{model}'")


def _probe_local(config: LlmConfig, progress: _Progress, deep: bool) -> LlmProbe:
    """The runtime loads and the model file is there; `deep`: its SHA-256 is checked too (about 1 s a GB)."""
    from sayplan_core.llm import model_packs
    from sayplan_core.llm.local_backend import INSTALL_HINT

    progress.where = "the embedded model's runtime (llama-cpp-python)"
    try:
        llama_cpp = importlib.import_module("llama_cpp")  # loads libllama: a broken build fails here, not later
    except ImportError as exc:
        why = one_line(str(exc), 100)
        return LlmProbe(False, "local", f"llama-cpp-python cannot be loaded ({why}); {INSTALL_HINT}")
    runtime = f"llama-cpp-python {getattr(llama_cpp, '__version__', '?')}"
    progress.where = "the embedded model's GGUF file"
    try:
        if deep:
            progress.where = "the SHA-256 check of the embedded model's GGUF file"
            resolved = model_packs.resolve_model(config.model)
            state = "SHA-256 verified" if resolved.verified else resolved.note
            return LlmProbe(True, "local", f"{resolved.path} ({state}); {runtime} loads")
        found = model_packs.locate_model(config.model)
    except model_packs.ModelPackError as exc:
        return LlmProbe(False, "local", str(exc))
    return LlmProbe(True, "local", f"{found}; {runtime} loads")


def _probe_replay(config: LlmConfig, progress: _Progress) -> LlmProbe:
    from sayplan_core.llm.replay import ReplayBackend

    progress.where = f"the replay transcript {config.replay_path}"
    try:
        backend = ReplayBackend.from_file(config.replay_path)
    except LlmFatalError as exc:
        return LlmProbe(False, "replay", one_line(str(exc), 300))
    return LlmProbe(True, "replay", f"the replay transcript {config.replay_path} holds {len(backend.calls)} call(s)")


def _ids(body: Any, key: str, fields: tuple[str, ...]) -> list[str] | None:
    """The model names in a list body ({key: [{field: name}, ...]}), or None when it is not one."""
    entries = body.get(key) if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return None
    names: list[str] = []
    for entry in entries:
        if isinstance(entry, dict):
            names.extend(str(entry[f]) for f in fields if isinstance(entry.get(f), str))
    return names


def _tagged(model: str) -> str:
    """An Ollama model name with its implicit `:latest` tag written out."""
    last = model.rsplit("/", 1)[-1]
    return model if ":" in last else f"{model}:latest"


def _some(names: list[str], shown: int = 5) -> str:
    unique = list(dict.fromkeys(names))
    more = f" and {len(unique) - shown} more" if len(unique) > shown else ""
    return ", ".join(limits.shown(name) for name in unique[:shown]) + more  # a server's names, bounded
