"""Fake LLM servers for the core and ROS tests: the protocols' answer bodies, and raw-socket servers that misbehave
in ways no HTTP library's per-read timeout notices (headers trickled a byte at a time, a pooled keep-alive
connection that stops answering)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

#: one header byte this often: every read succeeds long before the per-read timeout
TRICKLE_S = 0.4
HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"z" * 200 + b"\r\n"


def completion(content: str, prompt: int = 21, completion_tokens: int = 7) -> dict[str, Any]:
    """An OpenAI /v1/chat/completions answer."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        },
    }


def ollama_reply(content: str) -> dict[str, Any]:
    """An Ollama /api/chat answer."""
    return {
        "model": "llama-test",
        "created_at": "2026-11-22T00:00:00Z",
        "message": {"role": "assistant", "content": content},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 30,
        "eval_count": 6,
    }


def read_request(conn: socket.socket) -> bool:
    """Read one whole HTTP request (headers and a Content-Length body); False when the peer closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return False
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        more = conn.recv(65536)
        if not more:
            return False
        body += more
    return True


class HeaderTrickler:
    """A raw TCP server that reads a request and then sends its response headers one byte at a time.

    Neither SDK nor httpx's per-read timeout notices: each read gets a byte well within it. It stops
    (closing the connection) after `max_s` per connection, so a client without a whole-call deadline fails in
    bounded time.
    """

    def __init__(self, max_s: float = 12.0, port: int = 0) -> None:
        self.max_s = max_s
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", port))
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5.0)
            try:
                conn.recv(65536)  # the request (small; the SDKs send it in one write)
                end = time.monotonic() + self.max_s
                for byte in HEADERS:
                    if self._stop.is_set() or time.monotonic() > end:
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(TRICKLE_S)
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._server.close()


class KeepAliveServer:
    """A raw HTTP/1.1 server answering on keep-alive connections until `stall` is set; then requests get no answer.

    A stalled request is held for at most `hold_s`, then the connection is closed (so a client that cannot cancel
    fails in bounded time).
    """

    def __init__(self, body: bytes, hold_s: float = 12.0, port: int = 0) -> None:
        self.body, self.hold_s = body, hold_s
        self.connections = 0
        self.requests = 0
        self.stalled = 0
        self.stall = threading.Event()
        self._stop = threading.Event()
        self._server = socket.create_server(("127.0.0.1", port))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(self.body)}\r\n\r\n"
        with conn:
            conn.settimeout(self.hold_s)
            try:
                while read_request(conn):
                    self.requests += 1
                    if not self.stall.is_set():
                        conn.sendall(head.encode() + self.body)
                    else:
                        self.stalled += 1
                        self._stop.wait(self.hold_s)
                        return
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._server.close()


def local_backend(protocol: str, port: int, timeout_s: float) -> Any:
    """An OpenAI ("openai") or Ollama backend of the real SDK, for a server on 127.0.0.1:`port`."""
    from sayplan_core.llm.ollama_backend import OllamaBackend
    from sayplan_core.llm.openai_backend import OpenAIBackend

    if protocol == "openai":
        return OpenAIBackend("gpt-test", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=timeout_s)
    return OllamaBackend("llama-test", base_url=f"http://127.0.0.1:{port}", timeout_s=timeout_s)
