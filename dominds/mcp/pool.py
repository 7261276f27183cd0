"""The life cycle of the connections to the configured servers: start, back-off, leases, shutdown.

A stateless server has one shared connection. A stateful server gets one connection per dialog, a
lease that ends when the dialog leaves ``run/`` (done, archived, deleted), after ``LEASE_IDLE_S``
without a call, or when the agent calls ``release_<id>_session``. A server that goes away is started
again on its next use after a back-off (0.5 s doubling to 30 s). What the calls do with a connection
is ``calls.py``; which tools the servers give is ``tool_list.py``; ``manager.py`` puts them together.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dominds.background import BackgroundTasks
from dominds.mcp.config import MCP_SERVER_ERROR, MCP_YAML, ServerSpec
from dominds.mcp.connection import HANDSHAKE, Connection, ServerUnreachable
from dominds.mcp.elicit import ask_person
from dominds.mcp.sampling import serve_sampling
from dominds.problems import Problem, make_problem
from dominds.rtws import Rtws
from dominds.tools.base import FuncTool, ToolCallContext

log = logging.getLogger("dominds.mcp")

LEASE_IDLE_S = 1800.0
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 30.0


@dataclass
class Lease:
    conn: Connection
    root_id: str
    used_at: float


@dataclass
class ServerState:
    spec: ServerSpec
    state: str = "not started"
    """not started | starting | running | restarting | unreachable | stopped"""
    error: str | None = None
    tools: list[FuncTool] | None = None
    """The tools offered to members, once listed; ``None`` before the first connection."""
    problems: list[Problem] = field(default_factory=list)
    """Problems of the connection (unreachable)."""
    tool_problems: list[Problem] = field(default_factory=list)
    """Problems of the tool list (name clashes, tools left out), recomputed when any list changes."""
    listed: list[Any] | None = None
    """The tools the server listed, as the SDK returned them."""
    has_resources: bool = False
    """The server listed at least one resource at discovery (resource_tools.py offers them)."""
    shared: Connection | None = None
    leases: dict[str, Lease] = field(default_factory=dict)
    failures: int = 0
    retry_at: float = 0.0
    restarts: int = 0
    mode: str = HANDSHAKE
    """The protocol to try first: what the last connection settled on (see connection.py)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    start_lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class ServerPool:
    """The servers of one workspace and their live connections."""

    def __init__(self, rtws: Rtws, environ: Any = None) -> None:
        self.rtws = rtws
        self.environ = environ
        self.servers: dict[str, ServerState] = {}
        self.on_change: Callable[[], None] | None = None
        """Called when runtime problems or states change (the engine republishes the problems)."""
        self._sweeper: asyncio.Task[None] | None = None
        self._closing = BackgroundTasks("mcp")
        """Connections being closed (a reload, a server that went away): awaited by ``close``."""

    # ---------------------------------------------------------------- connections

    async def connection(self, state: ServerState, ctx: ToolCallContext) -> Connection:
        """The connection a call of ``ctx``'s dialog uses: its lease (stateful) or the shared one."""
        return await self.lease(state, ctx) if state.spec.stateful else await self.shared(state)

    async def shared(self, state: ServerState) -> Connection:
        async with state.start_lock:
            if state.shared is None or not state.shared.alive:
                state.shared = await self.start(state)
            return state.shared

    async def lease(self, state: ServerState, ctx: ToolCallContext) -> Connection:
        self._ensure_sweeper()
        lease = state.leases.get(ctx.self_id)
        if lease is None or not lease.conn.alive:
            lease = Lease(await self.start(state), ctx.root_id, time.monotonic())
            state.leases[ctx.self_id] = lease
            self.changed()
        lease.used_at = time.monotonic()
        return lease.conn

    async def start(self, state: ServerState) -> Connection:
        wait = state.retry_at - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        was = state.state
        state.state = "starting" if was in ("not started", "stopped") else "restarting"
        conn = Connection(state.spec, self.rtws.root, self.environ, state.mode)
        conn.on_elicit = lambda caller, params: ask_person(state.spec.id, caller, params)  # elicit.py
        # sampling.py; the opt-in is read when asked, so an edit of mcp.yaml applies without a restart
        conn.on_sample = lambda caller, params: serve_sampling(state.spec.id, state.spec.sampling, caller, params)
        try:
            await conn.start()
        except ServerUnreachable:
            self.backoff(state)
            raise
        state.mode = conn.mode
        if was in ("restarting", "unreachable"):
            state.restarts += 1
        state.state, state.error = "running", None
        if any(p.message.startswith(f"server {state.spec.id!r}: unreachable") for p in state.problems):
            state.problems = [p for p in state.problems if "unreachable" not in p.message]
        self.changed()
        return conn

    def backoff(self, state: ServerState) -> None:
        state.failures += 1
        state.retry_at = time.monotonic() + min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (state.failures - 1))

    def gone(self, state: ServerState, conn: Connection, reason: str) -> None:
        """``conn`` went away: it is dropped, and the server starts again on its next use."""
        state.state, state.error = "restarting", reason
        self.backoff(state)
        if state.shared is conn:
            state.shared = None
        for key, lease in list(state.leases.items()):
            if lease.conn is conn:
                del state.leases[key]
        self._closing.spawn(conn.close(), name=f"mcp-close-{state.spec.id}")
        self.changed()

    def failed(self, state: ServerState, message: str) -> None:
        state.state, state.error = "unreachable", message
        state.problems = [p for p in state.problems if "unreachable" not in p.message]
        self.problem(state, state.spec.line, f"server {state.spec.id!r}: {message}")
        self.changed()

    def problem(self, state: ServerState, line: int | None, message: str, severity: str = "error") -> None:
        problem = make_problem(MCP_SERVER_ERROR, MCP_YAML, line, message, "warning" if severity == "warning" else "error")
        bucket = state.problems if "unreachable" in message or "could not list" in message else state.tool_problems
        if problem.id not in {p.id for p in bucket}:
            bucket.append(problem)

    def changed(self) -> None:
        if self.on_change is not None:
            with contextlib.suppress(Exception):
                self.on_change()

    # ---------------------------------------------------------------- leases and shutdown

    def _ensure_sweeper(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever(), name="mcp-lease-sweeper")

    async def _sweep_forever(self, every_s: float = 2.0) -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                await self.sweep()
            except Exception:  # one failed sweep must not end the sweeping (nor fail ``close`` later)
                log.exception("sweeping MCP leases failed")

    async def sweep(self) -> None:
        """End the leases of dialogs that left ``run/`` or went idle."""
        now = time.monotonic()
        for state in self.servers.values():
            for self_id, lease in list(state.leases.items()):
                ended = not (self.rtws.run_dir / lease.root_id).is_dir()
                if ended or now - lease.used_at > LEASE_IDLE_S or not lease.conn.alive:
                    state.leases.pop(self_id, None)
                    await lease.conn.close()
                    self.changed()

    def discard(self, state: ServerState) -> None:
        state.state = "stopped"
        conns = [c for c in [state.shared, *(lease.conn for lease in state.leases.values())] if c is not None]
        state.shared, state.leases = None, {}
        with contextlib.suppress(RuntimeError):  # no running loop: nothing was ever started
            for conn in conns:
                self._closing.spawn(conn.close(), name=f"mcp-close-{state.spec.id}")

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        conns: list[Connection] = []
        for state in self.servers.values():
            conns.extend(c for c in [state.shared, *(lease.conn for lease in state.leases.values())] if c is not None)
            state.shared, state.leases, state.state = None, {}, "stopped"
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
        await self._closing.wait()  # connections closed by a reload or a server that went away

    def describe(self) -> list[dict[str, Any]]:
        """Each server for ``/api/tools``: its settings (never secrets), state and tools."""
        out = []
        for server_id, state in self.servers.items():
            spec = state.spec
            out.append(
                {
                    "name": server_id,
                    "source": f"mcp:{server_id}",
                    "transport": spec.transport,
                    "target": spec.url if spec.transport == "streamable_http" else spec.command,
                    "stateful": spec.stateful,
                    "state": state.state,
                    # the state is shown next to it: "unreachable: unreachable: …" said it twice
                    "error": None if state.error is None else state.error.removeprefix(f"{state.state}: "),
                    "restarts": state.restarts,
                    "sessions": len(state.leases) if spec.stateful else int(state.shared is not None and state.shared.alive),
                    "tools": None if state.tools is None else [{"name": t.name, "description": t.description} for t in state.tools],
                }
            )
        return out
