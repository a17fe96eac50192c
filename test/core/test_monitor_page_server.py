"""The monitor page and its server, without ROS: the page is self-contained, and the server hands out that page only.

What the page shows in a browser is checked by test/ros/test_monitor_page.py (headless Chromium against a demo).
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import pytest

from sayplan_core.viz.monitor_page import PAGE_FILE, PageServer, page_html

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
