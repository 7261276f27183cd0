"""What the port does while the daemon starts: ``/api/health`` says so at once, every other request waits.

``dominds serve`` binds its sockets first (listen.py) and serves them at once with the standard
library's ``http.server`` in a thread of its own (no aiohttp yet), while the main thread imports
aiohttp, the engine, the records and the panel's API and starts the engine (most of the start-up).
``GET /api/health`` is answered from the first tenth of a second: ``{"ok": true, "ready": false, ...}``
(the full app answers ``"ready": true``). Every other request (a page, the API, the websocket) is
held until the full app serves the port and is then passed to it byte for byte over a loopback
connection: a client that connects early gets the full app's answer, only later. (It used to get a 503
with ``Retry-After``; a client that waits for the port, or for ``/api/health``, and then calls the API
took that 503 for an answer.) Nothing here reads or writes the workspace; without a token only loopback
``Host`` names are answered, as by the full app, which applies every other check to what is relayed.
``run_server`` stops this server right before the full app serves the same sockets; connections made
in between wait in the kernel's accept queue.
"""

from __future__ import annotations

import asyncio
import contextlib
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
HOLD_SECONDS = 600.0
"""How long a request waits for the full app before it is answered 503 (a start-up recovering a huge
workspace can take minutes; a daemon that fails to start stops holding at once)."""
RELAY_CHUNK = 64 * 1024
MAX_DRAINED_BYTES = 1024 * 1024


def health_payload(ready: bool) -> dict[str, object]:
    """The body of ``GET /api/health`` (public; also answered by the full app, with ``ready: true``)."""
    return {"ok": True, "server": "dominds", "version": __version__, "ready": ready}


class StartingServer:
    """Serves the starting answers on the daemon's sockets until ``stop()`` (idempotent)."""

    def __init__(self, sockets: list[socket.socket], *, token_required: bool) -> None:
        self._handed_over = threading.Event()
        handler = type("Handler", (_StartingHandler,), {"token_required": token_required, "handed_over": self._handed_over})
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
        """Stop accepting (the sockets stay open for the full app); held requests then go to the full app."""
        if self._threads:
            self._threads = []
            await asyncio.to_thread(self._shutdown)

    def _shutdown(self) -> None:
        for server in self._servers:
            server.shutdown()  # returns once its thread stopped accepting
        # only now: a relayed request's own connection must reach the full app, never this server
        self._handed_over.set()


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
    handed_over = threading.Event()
    protocol_version = "HTTP/1.1"
    server_version = "dominds"
    sys_version = ""
    rbufsize = 0
    """Read the request head byte by byte: nothing after it leaves the socket, so a held request's body
    (and anything a websocket client sends next) is still there for the relay."""

    def do_GET(self) -> None:
        if not self._host_allowed():
            return
        if self.path.split("?", 1)[0] == "/api/health":
            self._send(200, "application/json", json.dumps(health_payload(ready=False)), retry=False)
        else:
            self._relay()

    def _other(self) -> None:
        if self._host_allowed():
            self._relay()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _other

    def _relay(self) -> None:
        """Hold the request until the full app serves the port, then pass the connection to it as it is."""
        if not self.handed_over.wait(HOLD_SECONDS):
            self._not_yet()
            return
        try:
            # the address this client reached: a connected socket's own address is never a wildcard
            upstream = socket.create_connection(self.connection.getsockname()[:2])
        except OSError:
            self._not_yet()  # the daemon failed to start and closed its port
            return
        head = f"{self.requestline}\r\n".encode("latin-1") + b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in self.headers.items())
        self.close_connection = True
        with upstream:
            try:
                upstream.sendall(head + b"\r\n")
            except OSError:
                return
            onward = threading.Thread(target=_pipe, args=(self.connection, upstream), name="dominds-relay", daemon=True)
            onward.start()
            _pipe(upstream, self.connection)
            onward.join()

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
        self._drain_body()
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

    def _drain_body(self) -> None:
        """Read a body we answer without (a body left unread would reset the connection under the answer)."""
        length = self.headers.get("Content-Length", "0")
        left = int(length) if length.isdigit() and int(length) <= MAX_DRAINED_BYTES else 0
        while left > 0 and (chunk := self.rfile.read(left)):
            left -= len(chunk)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the daemon logs nothing per request


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes until ``source`` ends, then end ``sink``'s sending side (either side may be gone)."""
    try:
        while data := source.recv(RELAY_CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
