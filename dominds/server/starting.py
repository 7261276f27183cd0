"""What the port answers while the daemon starts: ``/api/health`` says so, anything else is "retry soon".

``dominds serve`` binds its sockets first (listen.py) and serves them at once with the standard
library's ``http.server`` in a thread of its own (no aiohttp yet), while the main thread imports
aiohttp, the engine, the records and the panel's API and starts the engine (most of the start-up).
So the port answers honestly from the first tenth of a second: ``GET /api/health`` is
``{"ok": true, "ready": false, ...}`` (the full app answers ``"ready": true``), a page is a 503 that
reloads itself each second, and every other request (the websocket too) is a 503 JSON error with
``Retry-After: 1``. Nothing here reads or writes the workspace, and nothing needs the token: no data is
served; without a token only loopback ``Host`` names are answered, as by the full app. ``run_server``
stops this server right before the full app serves the same sockets; connections made in between
wait in the kernel's accept queue.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dominds import __version__
from dominds.server.listen import is_loopback_host

RETRY_SECONDS = 1
POLL_SECONDS = 0.02
"""How often a serving thread looks whether it was told to stop (the hand-over waits at most this)."""
MAX_DRAINED_BYTES = 1024 * 1024
STARTING_PAGE = (
    '<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="1">'
    "<title>Dominds is starting</title></head><body><p>Dominds is starting…</p></body></html>"
)


def health_payload(ready: bool) -> dict[str, object]:
    """The body of ``GET /api/health`` (public; also answered by the full app, with ``ready: true``)."""
    return {"ok": True, "server": "dominds", "version": __version__, "ready": ready}


class StartingServer:
    """Serves the starting answers on the daemon's sockets until ``stop()`` (idempotent)."""

    def __init__(self, sockets: list[socket.socket], *, token_required: bool) -> None:
        handler = type("Handler", (_StartingHandler,), {"token_required": token_required})
        self._servers = [_SocketServer(sock, handler) for sock in sockets]
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start serving, in threads (before any event loop exists)."""
        for server in self._servers:
            thread = threading.Thread(
                target=server.serve_forever, args=(POLL_SECONDS,), name="dominds-starting", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    async def stop(self) -> None:
        """Stop accepting (the sockets stay open for the full app); answers in progress finish."""
        if self._threads:
            self._threads = []
            await asyncio.to_thread(self._shutdown)

    def _shutdown(self) -> None:
        for server in self._servers:
            server.shutdown()  # returns once its thread stopped accepting


class _SocketServer(ThreadingHTTPServer):
    """``http.server`` on a socket bound elsewhere; closing it never closes that socket."""

    daemon_threads = True

    def __init__(self, sock: socket.socket, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(sock.getsockname()[:2], handler, bind_and_activate=False)
        self.socket.close()  # the one TCPServer made for itself, never bound
        self.socket = sock

    def server_close(self) -> None:
        pass  # the listening socket belongs to the daemon: aiohttp serves it next


class _StartingHandler(BaseHTTPRequestHandler):
    token_required = True
    protocol_version = "HTTP/1.1"
    server_version = "dominds"
    sys_version = ""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if not self._host_allowed():
            return
        if path == "/api/health":
            self._send(200, "application/json", json.dumps(health_payload(ready=False)), retry=False)
        elif path.startswith("/api/") or path == "/ws":
            self._not_yet()
        else:
            self._send(503, "text/html; charset=utf-8", STARTING_PAGE, retry=True)

    def do_HEAD(self) -> None:
        self.do_GET()

    def _other(self) -> None:
        length = self.headers.get("Content-Length", "0")
        if length.isdigit() and 0 < int(length) <= MAX_DRAINED_BYTES:
            self.rfile.read(int(length))  # a body left unread would reset the connection under the answer
        if self._host_allowed():
            self._not_yet()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _other

    def _host_allowed(self) -> bool:
        host = (self.headers.get("Host") or "").strip()
        name = host[1:].partition("]")[0] if host.startswith("[") else host.partition(":")[0]
        if self.token_required or (name and is_loopback_host(name)):
            return True
        message = "without a token the daemon only answers loopback host names (DNS-rebinding guard)"
        self._send(403, "application/json", json.dumps({"error": message}), retry=False)
        return False

    def _not_yet(self) -> None:
        self._send(503, "application/json", json.dumps({"error": "the daemon is starting; retry in a moment"}), retry=True)

    def _send(self, status: int, content_type: str, body: str, *, retry: bool) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        if retry:
            self.send_header("Retry-After", str(RETRY_SECONDS))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the daemon logs nothing per request
