"""The monitor page and its server, without ROS: the page is self-contained, and the server hands out that page only.

What the page shows in a browser is checked by test/ros/test_monitor_page.py (headless Chromium against a demo).
"""

from __future__ import annotations

import errno
import http.client
import re
import socket
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from sayplan_core.viz.monitor_page import MAX_CONNECTIONS, PAGE_FILE, PageServer, page_html

#: run alone (make pytest's serial phase): it waits on wall-clock deadlines for the page server's slots
pytestmark = pytest.mark.serial

WAIT_S = 60.0  # a hang guard only


def test_the_page_loads_nothing_from_elsewhere() -> None:
    text = PAGE_FILE.read_text(encoding="utf-8")
    # no external script, style, image, font or frame: every src/href is absent, and the policy refuses any
    assert not re.search(r"""\b(src|href)\s*=""", text)
    assert not re.search(r"@import|url\(", text)
    policy = re.search(r'http-equiv="Content-Security-Policy"\s+content="([^"]+)"', text)
    assert policy and "default-src 'none'" in policy.group(1)
    assert "foxglove.sdk.v1" in text  # the subprotocol foxglove-sdk's server speaks


def test_the_server_fills_in_the_websocket_port_and_serves_nothing_else() -> None:
    server = PageServer("127.0.0.1", 0, ws_port=43210)
    try:
        assert server.url == f"http://127.0.0.1:{server.port}/"
        with urllib.request.urlopen(server.url, timeout=WAIT_S) as answer:
            body = answer.read()
            assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
        assert body == page_html(43210)
        assert b'<meta name="sayplan-ws-port" content="43210">' in body
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(server.url + "../etc/passwd", timeout=WAIT_S)
        assert refused.value.code == 404
    finally:
        server.stop()


def _idle(port: int) -> socket.socket:
    """A connection that starts a request and never finishes it (slowloris)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n")
    return sock


def test_idle_connections_are_capped_and_timed_out() -> None:
    """Issue 41 review, finding 2: a thread per connection, no timeout and no cap; 1,100 idle connections used up
    the process's file handles and killed the WebSocket server. Now one beyond MAX_CONNECTIONS is closed at once,
    and an idle one is closed after the server's timeout."""
    server = PageServer("127.0.0.1", 0, ws_port=43210, timeout_s=WAIT_S)
    held = [_idle(server.port) for _ in range(MAX_CONNECTIONS)]
    try:
        extra = _idle(server.port)
        assert extra.recv(1) == b""  # closed unanswered (before: held open, the hang guard fires)
        extra.close()
        held.pop().close()  # a slot frees: the page is served again
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                with urllib.request.urlopen(server.url, timeout=WAIT_S) as answer:
                    assert answer.read() == page_html(43210)
                break
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError):
                assert time.monotonic() < deadline, "the page was not served again after a slot freed"
                time.sleep(0.05)
    finally:
        for sock in held:
            sock.close()
        server.stop()

    quick = PageServer("127.0.0.1", 0, ws_port=43210, timeout_s=0.2)
    try:
        with _idle(quick.port) as sock:
            assert sock.recv(1) == b""  # closed by the server's timeout, well before the hang guard
        assert quick.serving()
    finally:
        quick.stop()
    assert not quick.serving()


def test_a_dropped_connection_is_one_debug_line(capsys: Any, caplog: Any) -> None:
    """Issue 41 review, finding 5: every connection that went away mid-answer printed socketserver's traceback."""
    import logging

    server = PageServer("127.0.0.1", 0, ws_port=43210)
    try:
        with caplog.at_level(logging.DEBUG, logger="sayplan_core.viz.monitor_page"):
            try:
                raise ConnectionResetError(104, "Connection reset by peer")
            except ConnectionResetError:
                server._server.handle_error(None, ("127.0.0.1", 5555))
        assert capsys.readouterr().err == ""  # before: a traceback between dashed lines
        (record,) = caplog.records
        assert record.levelno == logging.DEBUG and "Connection reset by peer" in record.getMessage()
    finally:
        server.stop()


def test_a_taken_port_is_named() -> None:
    """Issue 41 review, finding 6: a taken page port said "[Errno 98] Address already in use", not which port."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=rf"monitor page on 127\.0\.0\.1:{port} \(page_port.*in use") as refused:
            PageServer("127.0.0.1", port, ws_port=43210)
        assert refused.value.errno == errno.EADDRINUSE
