"""probe_llm against real local servers: up, down, silent past the deadline, Ollama without the model."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest_httpserver import HTTPServer
from test_llm_backends import free_port

from sayplan_core.llm.ollama_backend import OllamaBackend, ollama_host
from sayplan_core.llm.selection import LlmConfig, LlmProbe, probe_llm
from sayplan_core.llm.types import LlmFatalError

#: run alone (make pytest's serial phase): it bounds probes and refusals in wall-clock seconds
pytestmark = pytest.mark.serial

KEY_ENV = "SAYPLAN_TEST_PROBE_KEY"  # never set outside these tests


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A server whose kernel accepts connections that nobody ever reads or answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv(KEY_ENV, raising=False)


def tags(*names: str) -> dict[str, object]:
    return {"models": [{"name": n, "model": n, "size": 1} for n in names]}


def paths(httpserver: HTTPServer) -> list[str]:
    return [request.path for request, _ in httpserver.log]


# ------------------------------------------------------------------ Ollama
def test_ollama_with_the_model_is_ok_and_only_lists_models(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/tags", method="GET").respond_with_json(tags("llama3.1:8b", "qwen3:4b"))
    probe = probe_llm(LlmConfig(backend="ollama", base_url=httpserver.url_for("")), timeout_s=5)
    assert probe == LlmProbe(True, "ollama", probe.detail)
    assert httpserver.url_for("").rstrip("/") in probe.detail and "llama3.1:8b" in probe.detail
    assert paths(httpserver) == ["/api/tags"]  # nothing that generates, nothing that costs tokens


def test_ollama_without_the_model_says_what_to_pull(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/tags").respond_with_json(tags("qwen3:4b", "gemma3:1b"))
    probe = probe_llm(LlmConfig(backend="ollama", model="llama3.2:3b", base_url=httpserver.url_for("")), 5)
    assert not probe.ok and probe.backend == "ollama"
    assert "ollama pull llama3.2:3b" in probe.detail
    assert "qwen3:4b" in probe.detail and "gemma3:1b" in probe.detail
    assert "\n" not in probe.detail


def test_ollama_model_without_a_tag_means_latest(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/tags").respond_with_json(tags("mistral:latest"))
    url = httpserver.url_for("")
    assert probe_llm(LlmConfig(backend="ollama", model="mistral", base_url=url), 5).ok
    assert not probe_llm(LlmConfig(backend="ollama", model="mistral:7b", base_url=url), 5).ok


def test_ollama_down_names_the_host_and_what_to_do() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    probe = probe_llm(LlmConfig(backend="ollama", base_url=url), timeout_s=30)
    assert time.monotonic() - start < 10.0  # a refusal is an answer: no waiting for the timeout
    assert not probe.ok and probe.backend == "ollama"
    assert url in probe.detail and "refused the connection" in probe.detail
    assert "ollama serve" in probe.detail and "OLLAMA_HOST" in probe.detail


def test_ollama_probe_follows_OLLAMA_HOST_and_an_explicit_url_wins(
    httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    httpserver.expect_request("/api/tags").respond_with_json(tags("llama3.1:8b"))
    # host:port without a scheme, as the Jetson compose file writes it
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{httpserver.port}")
    assert probe_llm(LlmConfig(backend="ollama"), 5).ok
    dead = f"http://127.0.0.1:{free_port()}"
    probe = probe_llm(LlmConfig(backend="ollama", base_url=dead), 5)
    assert not probe.ok and dead in probe.detail


def test_a_silent_server_is_cut_off_at_the_deadline(silent_server: str) -> None:
    for config in (
        LlmConfig(backend="ollama", base_url=silent_server),
        LlmConfig(backend="openai", base_url=f"{silent_server}/v1"),
    ):
        start = time.monotonic()
        probe = probe_llm(config, timeout_s=0.6)
        took = time.monotonic() - start
        # the server never answers: ending at all shows the cut-off; the margin is for a loaded machine
        assert took < 0.6 + 10, f"{config.backend}: the probe took {took:.2f} s"
        assert not probe.ok and silent_server in probe.detail and "did not answer within 0.6 s" in probe.detail


def test_ollama_that_is_not_ollama(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/tags").respond_with_data("<html>nginx</html>", status=404)
    probe = probe_llm(LlmConfig(backend="ollama", base_url=httpserver.url_for("")), 5)
    assert not probe.ok and "HTTP 404" in probe.detail


# ------------------------------------------------------------------ OpenAI-compatible
def test_openai_compatible_lists_models_with_the_key(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-probe")
    httpserver.expect_request(
        "/v1/models", method="GET", headers={"Authorization": "Bearer sk-probe"}
    ).respond_with_json(
        {"object": "list", "data": [{"id": "gpt-test", "object": "model"}, {"id": "other", "object": "model"}]}
    )
    config = LlmConfig(backend="openai", model="gpt-test", base_url=httpserver.url_for("/v1"), api_key_env=KEY_ENV)
    probe = probe_llm(config, 5)
    assert probe.ok and probe.backend == "openai" and "gpt-test" in probe.detail
    assert "sk-probe" not in probe.detail
    assert paths(httpserver) == ["/v1/models"]
    missing = probe_llm(LlmConfig(backend="openai", model="gpt-x", base_url=config.base_url, api_key_env=KEY_ENV), 5)
    assert not missing.ok and "gpt-x" in missing.detail and "gpt-test" in missing.detail


def test_openai_rejected_key_and_wrong_base_url(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    httpserver.expect_request("/v1/models").respond_with_json({"error": {"message": "bad key"}}, status=401)
    bad_key = probe_llm(LlmConfig(backend="openai", base_url=httpserver.url_for("/v1"), api_key_env=KEY_ENV), 5)
    assert not bad_key.ok and "HTTP 401" in bad_key.detail and KEY_ENV in bad_key.detail
    httpserver.expect_request("/models").respond_with_data("404 page not found", status=404)
    wrong = probe_llm(LlmConfig(backend="openai", base_url=httpserver.url_for("/"), api_key_env=KEY_ENV), 5)
    assert not wrong.ok and "/v1" in wrong.detail


def test_openai_without_key_or_url_and_openai_down() -> None:
    probe = probe_llm(LlmConfig(backend="openai", api_key_env=KEY_ENV), 5)
    assert not probe.ok and KEY_ENV in probe.detail
    url = f"http://127.0.0.1:{free_port()}/v1"
    down = probe_llm(LlmConfig(backend="openai", base_url=url, api_key_env=KEY_ENV), 5)
    assert not down.ok and url in down.detail and "refused the connection" in down.detail


def test_a_huge_model_list_is_not_read_whole(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/models").respond_with_data("[" * (5 * 1024 * 1024))
    probe = probe_llm(LlmConfig(backend="openai", base_url=httpserver.url_for("/v1")), 5)
    assert not probe.ok and "bytes" in probe.detail


# ------------------------------------------------------------------ auto, replay, local, config
def test_auto_probes_the_backend_auto_picks(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    httpserver.expect_request("/api/version").respond_with_json({"version": "0.12.0"})
    httpserver.expect_request("/api/tags").respond_with_json(tags("llama3.1:8b"))
    probe = probe_llm(LlmConfig(backend="auto", base_url=httpserver.url_for(""), api_key_env=KEY_ENV), 5)
    assert probe.ok and probe.backend == "ollama" and "auto" in probe.detail
    monkeypatch.setenv(KEY_ENV, "sk-x")
    httpserver.expect_request("/models").respond_with_json({"data": [{"id": "gpt-4o-mini"}]})
    probe = probe_llm(LlmConfig(backend="auto", base_url=httpserver.url_for(""), api_key_env=KEY_ENV), 5)
    assert probe.ok and probe.backend == "openai" and KEY_ENV in probe.detail


def test_auto_with_nothing_reachable_is_not_ok_and_bounded() -> None:
    config = LlmConfig(backend="auto", base_url=f"http://127.0.0.1:{free_port()}", api_key_env=KEY_ENV)
    start = time.monotonic()
    probe = probe_llm(config, 3)
    assert time.monotonic() - start < 3.5
    # auto falls back to the embedded model; it is reachable only with its runtime and model installed
    assert probe.backend == "local" and "auto" in probe.detail
    if importlib.util.find_spec("llama_cpp") is None:
        assert not probe.ok and "install_local_llm" in probe.detail


def test_replay_transcript_readable_or_not(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": "sayplan-transcript", "version": 1, "calls": [{}, {}]}))
    probe = probe_llm(LlmConfig(backend="replay", replay_path=str(path)), 5)
    assert probe == LlmProbe(True, "replay", probe.detail) and "2 call" in probe.detail
    missing = probe_llm(LlmConfig(backend="replay", replay_path=str(tmp_path / "gone.json")), 5)
    assert not missing.ok and "gone.json" in missing.detail
    path.write_text("{not json")
    broken = probe_llm(LlmConfig(backend="replay", replay_path=str(path)), 5)
    assert not broken.ok and "not valid JSON" in broken.detail


def test_local_needs_its_runtime_and_a_gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 a zip, not a model")
    probe = probe_llm(LlmConfig(backend="local", model=str(not_gguf)), 5)
    assert not probe.ok and probe.backend == "local"
    if importlib.util.find_spec("llama_cpp") is None:
        assert "llama-cpp-python" in probe.detail and "install_local_llm" in probe.detail
    else:
        assert "not a GGUF" in probe.detail


def test_invalid_config_and_timeout() -> None:
    assert not probe_llm(LlmConfig(backend="gpt5"), 5).ok
    assert "unknown LLM backend" in probe_llm(LlmConfig(backend="gpt5"), 5).detail
    assert not probe_llm(LlmConfig(backend="replay"), 5).ok
    assert not probe_llm(LlmConfig(backend="ollama"), 0).ok


# ------------------------------------------------------------------ OLLAMA_HOST semantics
def test_ollama_host_reads_hosts_as_the_official_client_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Oracle: the examples in the docstring of the ollama SDK's own host parser, run through both."""
    client = importlib.import_module("ollama._client")
    examples = re.findall(r">>> _parse_host\('([^']*)'\)", client._parse_host.__doc__ or "")
    assert len(examples) >= 20
    for example in examples:
        assert ollama_host(example) == client._parse_host(example), example
        monkeypatch.setenv("OLLAMA_HOST", example)
        assert ollama_host(None) == client._parse_host(example), example
        assert ollama_host("http://10.1.2.3:5000") == "http://10.1.2.3:5000"  # an explicit URL wins
    monkeypatch.delenv("OLLAMA_HOST")
    assert ollama_host(None) == client._parse_host(None) == "http://127.0.0.1:11434"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("127.0.0.1:notaport", "the port 'notaport' is not a number"),
        ("http://[::1", "the IPv6 '[' is not closed"),
        ("http://host:99999", "the port '99999' is not a number from 0 to 65535"),
        ("::", "an IPv6 address goes in brackets"),
        ("ex ample:11434", "a space, a control character"),
        ("h/p?q#frag", "a space, a control character, '?' or '#'"),
        ("[1.2.3.4]", "is no host name"),
        ("h" * 10_000, "10000 characters (at most 512)"),
        # read by the official client as a default, refused here (hostile review)
        ("//host:5", "it names no host, only a path"),
        ("http://", "a scheme with no host"),
        ("http://:80", "a scheme with no host"),
        ("127.0.0.1:0", "port 0 is no server's port"),
        ("http://user:s3cret@host:1234", "credentials are not read from it"),
    ],
)
def test_a_malformed_ollama_host_is_refused_in_one_bounded_line(
    monkeypatch: pytest.MonkeyPatch, value: str, why: str
) -> None:
    """It used to become a default silently (`127.0.0.1:notaport` -> port 11434, `http://[::1` -> 127.0.0.1:80)
    and a 10 kB value was echoed whole."""
    monkeypatch.setenv("OLLAMA_HOST", value)
    with pytest.raises(LlmFatalError) as caught:
        ollama_host(None)
    message = str(caught.value)
    assert message.startswith("OLLAMA_HOST ") and why in message and len(message) < 250 and "\n" not in message
    assert "s3cret" not in message
    probe = probe_llm(LlmConfig(backend="ollama"), 5)
    assert not probe.ok and why in probe.detail and "llm=auto" not in probe.detail
    with pytest.raises(LlmFatalError, match="OLLAMA_HOST"):
        OllamaBackend("qwen2.5:1.5b")
    monkeypatch.delenv("OLLAMA_HOST")
    with pytest.raises(LlmFatalError, match="the LLM base_url"):
        ollama_host(value)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab1:[]/.-_ \t9%@x"), max_size=24))
def test_a_host_the_official_client_refuses_is_refused_never_defaulted(value: str) -> None:
    """Oracle: the ollama SDK's own parser. Where it raises, ours refuses with one line; where ours answers,
    it is a URL with a port in range."""
    client = importlib.import_module("ollama._client")
    try:
        theirs: str | None = client._parse_host(value)
    except ValueError:
        theirs = None
    try:
        ours: str | None = ollama_host(value)
    except LlmFatalError as exc:
        assert len(str(exc)) < 250 and "\n" not in str(exc)
        ours = None
    if theirs is None:
        assert ours is None, value
    if ours is not None:
        url = urlsplit(ours)
        assert url.scheme in ("http", "https") and url.port is not None and 0 < url.port <= 65535, value


# ------------------------------------------------------------------ the backend itself, and `sayplan llm check`
def test_the_ollama_backend_and_auto_follow_OLLAMA_HOST(
    httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sayplan_core.llm.ollama_backend import OllamaBackend
    from sayplan_core.llm.selection import resolve_backend_name
    from sayplan_core.llm.types import LlmRequest

    reply = {"model": "m", "created_at": "2026-11-22T00:00:00Z", "message": {"role": "assistant", "content": "{}"}}
    httpserver.expect_request("/api/chat", method="POST").respond_with_json({**reply, "done": True})
    httpserver.expect_request("/api/version").respond_with_json({"version": "0.12.0"})
    monkeypatch.setenv("OLLAMA_HOST", f"localhost:{httpserver.port}")
    backend = OllamaBackend("m")
    assert backend.info.base_url == f"http://localhost:{httpserver.port}"
    assert backend.complete(LlmRequest([{"role": "user", "content": "hi"}])).text == "{}"
    assert resolve_backend_name(LlmConfig(backend="auto", api_key_env=KEY_ENV)) == (
        "ollama",
        "an Ollama server answers",
    )


def sayplan(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The installed `sayplan` command as a user runs it (`python -m` from a source tree)."""
    command = (
        [shutil.which("sayplan") or "", *args]
        if shutil.which("sayplan")
        else [sys.executable, "-m", "sayplan_core.cli", *args]
    )
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=60)


def test_sayplan_llm_check(httpserver: HTTPServer) -> None:
    """The README's `OLLAMA_HOST=... sayplan llm check --llm ollama`, against a server with and without the model."""
    httpserver.expect_request("/api/tags").respond_with_json(tags("llama3.1:8b"))
    env = {"OLLAMA_HOST": f"127.0.0.1:{httpserver.port}"}
    done = sayplan(["llm", "check", "--llm", "ollama"], env)
    assert done.returncode == 0 and done.stdout.startswith("ollama: ok: ollama at http://127.0.0.1:"), done.stderr
    done = sayplan(["llm", "check", "--llm", "ollama", "--model", "qwen3:4b", "--json"], env)
    answer = json.loads(done.stdout)
    assert done.returncode == 1 and not answer["ok"] and "ollama pull qwen3:4b" in answer["detail"]
    done = sayplan(["llm", "check", "--llm", "ollama", "--probe-timeout", "0"], env)
    assert done.returncode == 2 and done.stderr.startswith("sayplan: error: --probe-timeout")


def test_a_malformed_ollama_host_is_refused_even_beside_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found in review: the ollama SDK reads OLLAMA_HOST when it is imported, so `--base-url` could not win over a
    malformed one: `plan` failed while `llm check` passed. Both refuse it now, naming the variable."""
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:notaport")
    with pytest.raises(LlmFatalError, match=r"OLLAMA_HOST .*reads it even when base_url is set"):
        ollama_host("http://127.0.0.1:11434")
    probe = probe_llm(LlmConfig(backend="ollama", base_url="http://127.0.0.1:11434"), 5)
    assert not probe.ok and "notaport" in probe.detail
