"""Serve an SDK ``MCPServer`` over streamable HTTP with the same rules as ``dominds serve``.

- Token (on by default): every request needs ``Authorization: Bearer <token>``. The token is
  ``$DOMINDS_MCP_TOKEN`` when set (so a client configuration can name it), else a fresh random one,
  printed at start.
- Without a token (``--no-auth``) the server only binds a loopback address and only answers requests
  whose Host is a loopback name (DNS-rebinding guard).
- Origin: a browser request from another site is refused (403); no Origin (not a browser) or the
  server's own origin is fine.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from dominds.loopback import is_loopback_host

TOKEN_ENV = "DOMINDS_MCP_TOKEN"
Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def user_data_dir(app: str = "dominds") -> Path:
    """The per-user data directory: ``$XDG_DATA_HOME/dominds`` (``~/.local/share/dominds``), on macOS
    ``~/Library/Application Support/dominds``, on Windows ``%LOCALAPPDATA%\\dominds``."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / app


def pick_token(no_auth: bool) -> str | None:
    if no_auth:
        return None
    return os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)


class Guard:
    """ASGI middleware: token, Host and Origin checks in front of the MCP app."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        host_name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
        if self.token is None and not is_loopback_host(host_name):
            await _refuse(send, 403, "without a token only loopback host names are answered")
            return
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"{scope.get('scheme', 'http')}://{host}".lower():
            await _refuse(send, 403, "forbidden origin")
            return
        if self.token is not None:
            given = headers.get("authorization", "")
            expected = f"Bearer {self.token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                await _refuse(send, 401, "unauthorized", [(b"www-authenticate", b"Bearer")])
                return
        await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve_http(
    server: Any, host: str, port: int, token: str | None, *, name: str, stateless: bool = False
) -> None:
    """Serve ``server`` (an SDK ``MCPServer`` or low-level ``Server``) at ``http://host:port/mcp`` until cancelled; prints the URL on stdout."""
    import uvicorn

    if token is None and not is_loopback_host(host):
        raise SystemExit(f"{name}: --no-auth is only allowed on a loopback address, not {host}")
    app = server.streamable_http_app(streamable_http_path="/mcp", stateless_http=stateless, host=host)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    url_host = f"[{host}]" if ":" in host else host
    print(f"{name}: http://{url_host}:{bound}/mcp", flush=True)
    if token is not None and os.environ.get(TOKEN_ENV) == token:
        print(f"  token: the value of ${TOKEN_ENV} (clients send  Authorization: Bearer <token>)", flush=True)
    elif token is not None:
        print(f"  token: {token}", flush=True)
        print(f"  clients send the header  Authorization: Bearer {token}", flush=True)
    else:
        print("  no token (--no-auth): loopback only", flush=True)
    config = uvicorn.Config(Guard(app, token), log_level="warning", lifespan="on")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()
        print(f"{name} stopped", file=sys.stderr, flush=True)
