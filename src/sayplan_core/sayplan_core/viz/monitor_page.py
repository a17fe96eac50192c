"""The monitor page (monitor.html beside this module) and the small HTTP server that hands it to a browser.

The page is one self-contained file: its script speaks the Foxglove WebSocket protocol to foxglove_bridge and
draws the plan, the events, the fault latch, /diagnostics and the graph, with nothing fetched from anywhere else
(its Content-Security-Policy refuses any other resource). It is for people without Foxglove or Lichtblick: a
browser is enough. The server exists so that the page knows which WebSocket port to use (it is written into the
page) and a remote viewer needs no copy of the file; it serves that one page, read once, and nothing else, from its
own thread, so a browser never touches the stack. Opened as a file, the page takes `?ws=ws://HOST:PORT` instead.

What a browser (or anyone who can reach the port) costs: one thread per connection, at most MAX_CONNECTIONS at
once (a connection beyond is closed at once, unanswered), each closed after TIMEOUT_S without a whole request or
with a reader that stops reading, so idle connections (slowloris) can neither pile up threads and file handles nor
starve the WebSocket server in the same process.
"""

from __future__ import annotations

import logging
import re
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_log = logging.getLogger(__name__)
PAGE_FILE = Path(__file__).with_name("monitor.html")
#: the tag the page reads its default WebSocket port from
_PORT_TAG = re.compile(r'(<meta name="sayplan-ws-port" content=")\d+(">)')
PAGE_PATHS = ("/", "/index.html", "/monitor.html")
#: connections served at once at most; one more is closed unanswered
MAX_CONNECTIONS = 32
#: a connection that sends no whole request, or reads nothing, for this long is closed
TIMEOUT_S = 10.0


def page_html(ws_port: int) -> bytes:
    """The page, set to connect to `ws_port` on the host it was loaded from."""
    text, count = _PORT_TAG.subn(rf"\g<1>{ws_port}\g<2>", PAGE_FILE.read_text(encoding="utf-8"))
    if count != 1:
        raise RuntimeError(f"{PAGE_FILE} has {count} sayplan-ws-port tags, expected 1")
    return text.encode("utf-8")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 2 * MAX_CONNECTIONS  # the listen backlog (5 by default: connections beyond waited seconds)

    def __init__(self, host: str, port: int, page: bytes, timeout_s: float) -> None:
        if ":" in host:
            self.address_family = socket.AF_INET6
        self.page = page
        self.timeout_s = timeout_s
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__((host, port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection if fewer than MAX_CONNECTIONS are served; else it is closed at once."""
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed (a browser that went away mid-answer, a timeout): one line at debug level, not
        socketserver's traceback on stderr for each."""
        error = sys.exc_info()[1]
        _log.debug("monitor page: connection from %s ended: %r", client_address, error)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.timeout_s)  # a read or a write that waits longer ends the connection

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        if self.path.split("?", 1)[0] not in PAGE_PATHS:
            self.send_error(HTTPStatus.NOT_FOUND, "only the monitor page is served here")
            return
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.server.page)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(self.server.page)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a browser's requests are not the stack's business (and would go to stderr)."""


class PageServer:
    """Serves the page on `host`:`port` (0: any free port) from a thread of its own until `stop`."""

    def __init__(self, host: str, port: int, ws_port: int, timeout_s: float = TIMEOUT_S) -> None:
        try:
            self._server = _Server(host, port, page_html(ws_port), timeout_s)
        except OSError as error:  # say which port and what for: "[Errno 98] Address already in use" says neither
            raise OSError(
                error.errno,
                f"cannot serve the monitor page on {host}:{port} (page_port; -1: no page): {error.strerror or error}",
            ) from error
        self.host = host
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="monitor page", daemon=True)
        self._thread.start()

    def serving(self) -> bool:
        """Whether the thread that accepts connections still runs."""
        return self._thread.is_alive()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
