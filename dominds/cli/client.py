"""How a CLI command finds the running daemon, and a small HTTP/websocket client for it.

``dominds serve`` writes ``.dialogs/daemon.json`` (mode 0600) once its port is bound::

    {"v": 1, "pid": 4242, "host": "127.0.0.1", "port": 5666, "token": "…", "url": "http://…/?auth=…",
     "rtws": "/abs/path", "startedAt": "2026-…", "version": "0.1.0"}

and removes it on exit. A file alone proves nothing: a daemon killed with SIGKILL leaves it behind.
So a daemon counts as running only when the process named in the file holds the workspace lock
(``.dialogs/.rtws.lock``, taken by ``Engine.start``). On Linux the holder is read from
``/proc/locks``, which never touches the lock; elsewhere the lock is probed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dominds.cli.common import CliError
from dominds.rtws import Rtws

if TYPE_CHECKING:
    import aiohttp

DAEMON_JSON_VERSION = 1
REQUEST_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class DaemonInfo:
    """What ``daemon.json`` says about a running daemon."""

    pid: int
    host: str
    port: int
    token: str | None
    """``None`` when the daemon runs with ``--no-auth``."""
    url: str
    """The panel URL as printed at start (with ``?auth=`` when there is a token)."""

    @property
    def base_url(self) -> str:
        """Where to send requests: a wildcard bind address is reached through loopback."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def describe(self) -> str:
        return f"pid {self.pid} on port {self.port}"


def daemon_json_payload(info: DaemonInfo, rtws: Rtws, started_at: str, version: str) -> dict[str, Any]:
    return {
        "v": DAEMON_JSON_VERSION,
        "pid": info.pid,
        "host": info.host,
        "port": info.port,
        "token": info.token,
        "url": info.url,
        "rtws": str(rtws.root),
        "startedAt": started_at,
        "version": version,
    }


def read_daemon_json(rtws: Rtws) -> DaemonInfo | None:
    """The file's content, or None when it is missing or unreadable (a torn file is never trusted)."""
    try:
        raw = json.loads(rtws.daemon_json.read_text(encoding="utf-8"))
        token = raw.get("token")
        return DaemonInfo(
            pid=int(raw["pid"]),
            host=str(raw.get("host") or "127.0.0.1"),
            port=int(raw["port"]),
            token=str(token) if token else None,
            url=str(raw.get("url") or ""),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def lock_holders(lock_path: Path) -> set[int] | None:
    """Pids holding a lock on ``lock_path`` per ``/proc/locks``; None where that file does not exist.

    A lock is that file's when both its inode and its device match: inode numbers repeat across
    filesystems (two fresh tmpfs mounts number their files alike), and matching the inode alone made a
    daemon of another workspace on another filesystem "hold" this one. Where the device does not match
    but the inode does (btrfs reports a subvolume's device to ``stat``, not the one ``/proc/locks``
    shows), the file itself is asked (``flock_probe``).
    """
    try:
        info = os.stat(lock_path)
    except FileNotFoundError:
        return set()
    except OSError:
        return None
    try:
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    device = (os.major(info.st_dev), os.minor(info.st_dev))
    holders: set[int] = set()
    same_inode_elsewhere: set[int] = set()
    for line in table.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 4242 00:2f:1234 0 EOF" (major:minor in hex, inode in decimal);
        # waiters read "1: -> FLOCK …" and hold nothing
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":
            continue
        try:
            major, minor, lock_inode = fields[5].split(":")
            pid, lock_device, inode = int(fields[4]), (int(major, 16), int(minor, 16)), int(lock_inode)
        except ValueError:
            continue
        if inode != info.st_ino or pid <= 0:
            continue
        (holders if lock_device == device else same_inode_elsewhere).add(pid)
    if not holders and same_inode_elsewhere and flock_probe(lock_path):
        return same_inode_elsewhere
    return holders


def flock_probe(lock_path: Path) -> bool:
    """Whether another open file holds the ``flock`` the daemon takes on ``lock_path``. Asked through a
    read-only descriptor, so it works on a read-only workspace and never creates the file."""
    import fcntl

    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing the descriptor releases the probe's own lock
    return False


def lock_is_held(lock_path: Path) -> bool:
    holders = lock_holders(lock_path)
    if holders is not None:
        return bool(holders)
    return flock_probe(lock_path)


def find_daemon(rtws: Rtws) -> DaemonInfo | None:
    """The running daemon of this workspace, or None (no file, or a stale one)."""
    info = read_daemon_json(rtws)
    if info is None:
        return None
    holders = lock_holders(rtws.lock_path)
    if holders is not None:
        return info if info.pid in holders else None
    return info if _pid_alive(info.pid) and lock_is_held(rtws.lock_path) else None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe_process(pid: int) -> str:
    """``pid 4242 (python -m dominds tell …)`` where the command line can be read."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"pid {pid}"
    command = " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)
    return f"pid {pid} ({command[:120]})" if command else f"pid {pid}"


def locked_message(rtws: Rtws) -> str:
    holders = sorted(lock_holders(rtws.lock_path) or [])
    who = ", ".join(describe_process(pid) for pid in holders) or "another process"
    return (
        f"the workspace is locked by {who}, which is not a daemon answering through {rtws.daemon_json.name}; "
        "wait for it to finish, or stop it"
    )


class DaemonClient:
    """JSON requests and the websocket of one running daemon, authenticated with its token."""

    def __init__(self, info: DaemonInfo) -> None:
        self.info = info
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> DaemonClient:
        import aiohttp

        headers = {"Authorization": f"Bearer {self.info.token}"} if self.info.token else {}
        self._session = aiohttp.ClientSession(
            base_url=self.info.base_url, headers=headers, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_SECONDS)
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("DaemonClient is used outside `async with`")
        return self._session

    async def get(self, path: str, **params: str) -> Any:
        return await self.request("GET", path, params=params or None)

    async def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return await self.request("POST", path, body=body or {})

    async def request(self, method: str, path: str, *, body: Any = None, params: dict[str, str] | None = None) -> Any:
        import aiohttp

        try:
            async with self.session.request(method, path, json=body, params=params) as response:
                text = await response.text()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise CliError(f"the daemon ({self.info.describe()}) did not answer {method} {path}: {exc or type(exc).__name__}") from exc
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            data = {"error": text.strip()[:200]}
        if status == 401:
            raise CliError(f"the daemon ({self.info.describe()}) refused the token in daemon.json (unauthorized)")
        if status >= 400:
            message = data.get("error") if isinstance(data, dict) else None
            raise CliError(str(message or f"the daemon answered HTTP {status} to {method} {path}"))
        return data

    @contextlib.asynccontextmanager
    async def websocket(self) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
        import aiohttp

        try:
            ws = await self.session.ws_connect("/ws", heartbeat=30.0, max_msg_size=0)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise CliError(f"cannot open the daemon's websocket ({self.info.describe()}): {exc}") from exc
        try:
            yield ws
        finally:
            await ws.close()
