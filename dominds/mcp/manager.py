"""MCP servers as toolsets: lazy start, supervision with back-off, per-dialog leases, reloads.

``McpManager`` belongs to the driver's ``ConfigCache``. ``reload()`` reads ``.minds/mcp.yaml`` (when
it changed); each server becomes a toolset named by its id. Nothing starts until a member whose
toolsets include a server is about to generate: ``prepare()`` connects and lists the server's tools
(named ``prefix + name``, checked, filtered, de-duplicated against every other tool). Problems met on
the way (unreachable, name clashes, tools left out) are kept per server and shown with mcp.yaml's.

A stateless server has one shared session. A stateful server gets one session per dialog, a lease
that ends when the dialog leaves ``run/`` (done, archived, deleted), after ``LEASE_IDLE_S`` without a
call, or when the agent calls ``release_<id>_session``. A server that goes away is started again on
the next use after a back-off (0.5 s doubling to 30 s); the call it was serving is an error the model
reads ("may or may not have run"), never re-run. A server found dead before a call is sent (a ping
after a quiet spell, see connection.py) is started again and the call runs on the new connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dominds.background import BackgroundTasks
from dominds.mcp.config import (
    MCP_SERVER_ERROR,
    MCP_YAML,
    TOOL_NAME_RE,
    McpConfig,
    ServerSpec,
    load_mcp_config,
)
from dominds.mcp.connection import (
    CONNECT_TIMEOUT_S,
    CallTimeout,
    Connection,
    ServerGone,
    ServerGoneBeforeCall,
    ServerUnreachable,
)
from dominds.mcp.elicit import ask_person
from dominds.mcp.resource_tools import resource_tools
from dominds.mcp.results import render_result
from dominds.problems import Problem, make_problem
from dominds.rtws import Rtws
from dominds.tools.base import FuncTool, ToolCallContext, ToolError, Toolsets, object_schema

log = logging.getLogger("dominds.mcp")

LEASE_IDLE_S = 1800.0
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 30.0


@dataclass
class _Lease:
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
    leases: dict[str, _Lease] = field(default_factory=dict)
    failures: int = 0
    retry_at: float = 0.0
    restarts: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    start_lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class McpManager:
    """Every configured server of one workspace, and the toolsets made of them."""

    def __init__(self, rtws: Rtws, builtin_toolsets: Toolsets | None = None, environ: Any = None) -> None:
        self.rtws = rtws
        self.builtin_toolsets = builtin_toolsets or Toolsets()
        """The engine's own toolsets: their names and tool names are taken (a clash is a problem)."""
        self.environ = environ
        self.servers: dict[str, ServerState] = {}
        self.config_problems: list[Problem] = []
        self.on_change: Callable[[], None] | None = None
        """Called when runtime problems or states change (the engine republishes the problems)."""
        self._sweeper: asyncio.Task[None] | None = None
        self._closing = BackgroundTasks("mcp")
        """Connections being closed (a reload, a server that went away): awaited by ``close``."""

    # ---------------------------------------------------------------- configuration

    def reload(self, config: McpConfig | None = None) -> list[Problem]:
        """Read mcp.yaml again (or apply ``config``, e.g. its last good version); servers whose settings
        changed are stopped and start afresh on next use."""
        if config is None:
            config = load_mcp_config(self.rtws, frozenset(self.builtin_toolsets.names()))
        self.config_problems = config.problems
        for server_id in list(self.servers):
            old = self.servers[server_id]
            new_spec = config.servers.get(server_id)
            if new_spec is None or new_spec.fingerprint() != old.spec.fingerprint():
                self._discard(self.servers.pop(server_id))
            elif new_spec != old.spec:  # filters, prefix or timeout: same sessions, tools rebuilt
                old.spec = new_spec
        for server_id, spec in config.servers.items():
            self.servers.setdefault(server_id, ServerState(spec))
        self.servers = {server_id: self.servers[server_id] for server_id in config.servers}  # file order
        self._rebuild()
        return config.problems

    def toolset_names(self) -> list[str]:
        return list(self.servers)

    def tools(self, name: str) -> list[FuncTool] | None:
        state = self.servers.get(name)
        if state is None:
            return None
        return list(state.tools or [])

    def runtime_problems(self) -> list[Problem]:
        return [p for state in self.servers.values() for p in (*state.problems, *state.tool_problems)]

    # ---------------------------------------------------------------- discovery

    async def prepare(self, toolsets: Iterable[str]) -> None:
        """List the tools of the servers among ``toolsets`` (``'*'`` = all) that have not been listed yet."""
        spec = list(toolsets)
        excluded = {entry[1:] for entry in spec if entry.startswith("!")}
        wanted = set(self.servers) if "*" in spec else set(spec)
        now = time.monotonic()
        # a server in its back-off is not waited for here: the generation goes on without its tools
        names = [
            n for n in self.servers
            if n in wanted and n not in excluded and self.servers[n].listed is None and self.servers[n].retry_at <= now
        ]  # fmt: skip
        if names:
            await asyncio.gather(*(self._discover(self.servers[n]) for n in names))

    async def discover_all(self) -> None:
        await self.prepare(["*"])

    async def _discover(self, state: ServerState) -> None:
        async with state.lock:
            if state.listed is not None or self.servers.get(state.spec.id) is not state:
                return
            try:
                if state.spec.stateful:
                    conn = await self._start(state)
                    try:
                        listed = await conn.list_tools()
                        state.has_resources = await _has_resources(conn)
                    finally:
                        await conn.close()
                else:
                    conn = await self._shared(state)
                    listed = await conn.list_tools()
                    state.has_resources = await _has_resources(conn)
            except (ServerUnreachable, ServerGone, CallTimeout) as exc:
                self._failed(state, f"unreachable: {exc}")
                return
            except Exception as exc:  # a server that answers nonsense must not stop the dialog
                self._failed(state, f"could not list its tools: {type(exc).__name__}: {exc}")
                return
            state.problems = []
            state.listed = listed
            self._rebuild()
            self._changed()

    def _rebuild(self) -> None:
        """Tools of every listed server, in mcp.yaml order: on a name clash the earlier server keeps the name."""
        for state in self.servers.values():
            state.tool_problems = []
        listed = [(state, state.listed) for state in self.servers.values() if state.listed is not None]
        if not listed:
            return  # the built-in toolsets' modules are imported only when a server's tools need their names
        from dominds.tools.control import CONTROL_TOOLS

        taken = {t.name for tools in self.builtin_toolsets.by_name.values() for t in tools}
        taken.update(t.name for t in CONTROL_TOOLS)
        for state, server_tools in listed:
            state.tools = self._make_tools(state, server_tools, taken)

    def _make_tools(self, state: ServerState, listed: list[Any], taken: set[str]) -> list[FuncTool]:
        spec = state.spec
        tools: list[FuncTool] = []
        where = spec.line_of("tools")
        for pattern in spec.whitelist:
            if not any(fnmatch.fnmatchcase(t.name, pattern) for t in listed):
                self._problem(state, where, f"server {spec.id!r}: whitelist entry {pattern!r} matches no tool of the server", "warning")
        for mcp_tool in listed:
            if spec.whitelist and not any(fnmatch.fnmatchcase(mcp_tool.name, p) for p in spec.whitelist):
                continue
            if any(fnmatch.fnmatchcase(mcp_tool.name, p) for p in spec.blacklist):
                continue
            name = spec.prefix + mcp_tool.name
            if not TOOL_NAME_RE.fullmatch(name):
                self._problem(state, spec.line, f"server {spec.id!r}: tool {name!r} left out: a tool name holds 1 to 64 letters, digits, '_' or '-'", "warning")
                continue
            if name in taken:
                self._problem(state, spec.line_of("prefix"), f"server {spec.id!r}: tool {name!r} left out: another toolset has a tool of that name (set `prefix`)")
                continue
            schema_problem = _schema_problem(mcp_tool.input_schema)
            if schema_problem is not None:
                self._problem(state, spec.line, f"server {spec.id!r}: tool {name!r} left out: its input schema is invalid ({schema_problem})", "warning")
                continue
            taken.add(name)
            tools.append(self._func_tool(state, mcp_tool, name))
        if state.has_resources:
            for tool in resource_tools(spec.id, spec.whitelist, spec.blacklist, lambda ctx, label, op: self._run_result(state, label, ctx, op)):
                if tool.name in taken:
                    self._problem(state, spec.line, f"server {spec.id!r}: tool {tool.name!r} left out: another toolset has a tool of that name")
                    continue
                taken.add(tool.name)
                tools.append(tool)
        if spec.stateful:
            tools.append(self._release_tool(state))
        return tools

    def _func_tool(self, state: ServerState, mcp_tool: Any, name: str) -> FuncTool:
        schema = dict(mcp_tool.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        schema.pop("$schema", None)
        description = (mcp_tool.description or mcp_tool.title or mcp_tool.name).strip()
        mcp_name = mcp_tool.name

        async def handler(ctx: ToolCallContext, args: dict[str, Any]) -> str:
            return await self._call(state, mcp_name, ctx, args)

        return FuncTool(name, f"[MCP {state.spec.id}] {description}", schema, handler)

    def _release_tool(self, state: ServerState) -> FuncTool:
        async def handler(ctx: ToolCallContext, args: dict[str, Any]) -> str:
            lease = state.leases.pop(ctx.self_id, None)
            if lease is None:
                return f"this dialog holds no session of MCP server {state.spec.id!r}"
            await lease.conn.close()
            self._changed()
            return f"released this dialog's session of MCP server {state.spec.id!r}; the next call starts a new one"

        return FuncTool(
            f"release_{state.spec.id}_session",
            f"End this dialog's session of the stateful MCP server {state.spec.id!r} (its server-side state is lost).",
            object_schema({}),
            handler,
        )

    # ---------------------------------------------------------------- calls

    async def _call(self, state: ServerState, mcp_name: str, ctx: ToolCallContext, args: dict[str, Any]) -> str:
        result, conn = await self._run(state, mcp_name, ctx, lambda client: client.call_tool(mcp_name, args))
        dialog = ctx.services.get("dialog")
        dialog_dir: Path | None = getattr(getattr(dialog, "files", None), "dir", None)
        text, is_error = render_result(result, dialog_dir, ctx.self_id, ctx.call_id)
        text = conn.redact(text)
        if is_error:
            raise ToolError(text)
        return text

    async def _run(
        self, state: ServerState, mcp_name: str, ctx: ToolCallContext, op: Callable[[Any], Awaitable[Any]]
    ) -> tuple[Any, Connection]:
        """``op(client)`` on the dialog's connection to the server; failures become ``ToolError``s."""
        spec = state.spec
        if self.servers.get(spec.id) is not state:
            raise ToolError(f"MCP server {spec.id!r} was removed from or changed in {MCP_YAML}; call the tool again")
        for attempt in (1, 2):  # a server found dead before the call was sent is started again, once
            try:
                conn = await self._lease(state, ctx) if spec.stateful else await self._shared(state)
            except (ServerUnreachable, ServerGone) as exc:
                self._failed(state, f"unreachable: {exc}")
                raise ToolError(f"MCP server {spec.id!r} is unreachable ({exc}); the tool did not run") from exc
            try:
                result = await conn.request(op, spec.timeout_s, caller=ctx)
                break
            except ServerGoneBeforeCall as exc:
                self._gone(state, conn, str(exc))
                if attempt == 2:
                    raise ToolError(f"MCP server {spec.id!r} went away again before {mcp_name} was sent ({exc}); the tool did not run") from exc
            except CallTimeout as exc:
                raise ToolError(
                    f"MCP server {spec.id!r}: {mcp_name} gave no answer within {spec.timeout_s:g}s; "
                    "it may or may not have run (it is not retried)"
                ) from exc
            except ServerGone as exc:
                self._gone(state, conn, str(exc))
                raise ToolError(
                    f"MCP server {spec.id!r} went away during {mcp_name} ({exc}); the call may or may not have run "
                    "(it is not retried). The server is started again on the next call."
                ) from exc
            except Exception as exc:
                raise ToolError(conn.redact(f"MCP server {spec.id!r} refused {mcp_name}: {type(exc).__name__}: {exc}")) from exc
        state.failures = 0
        return result, conn

    async def _run_result(self, state: ServerState, label: str, ctx: ToolCallContext, op: Callable[[Any], Awaitable[Any]]) -> Any:
        return (await self._run(state, label, ctx, op))[0]

    async def _shared(self, state: ServerState) -> Connection:
        async with state.start_lock:
            if state.shared is None or not state.shared.alive:
                state.shared = await self._start(state)
            return state.shared

    async def _lease(self, state: ServerState, ctx: ToolCallContext) -> Connection:
        self._ensure_sweeper()
        lease = state.leases.get(ctx.self_id)
        if lease is None or not lease.conn.alive:
            lease = _Lease(await self._start(state), ctx.root_id, time.monotonic())
            state.leases[ctx.self_id] = lease
            self._changed()
        lease.used_at = time.monotonic()
        return lease.conn

    async def _start(self, state: ServerState) -> Connection:
        wait = state.retry_at - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        was = state.state
        state.state = "starting" if was in ("not started", "stopped") else "restarting"
        conn = Connection(state.spec, self.rtws.root, self.environ)
        conn.on_elicit = lambda caller, params: ask_person(state.spec.id, caller, params)  # elicit.py
        try:
            await conn.start()
        except ServerUnreachable:
            self._backoff(state)
            raise
        if was in ("restarting", "unreachable"):
            state.restarts += 1
        state.state, state.error = "running", None
        if any(p.message.startswith(f"server {state.spec.id!r}: unreachable") for p in state.problems):
            state.problems = [p for p in state.problems if "unreachable" not in p.message]
        self._changed()
        return conn

    def _backoff(self, state: ServerState) -> None:
        state.failures += 1
        state.retry_at = time.monotonic() + min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (state.failures - 1))

    def _gone(self, state: ServerState, conn: Connection, reason: str) -> None:
        state.state, state.error = "restarting", reason
        self._backoff(state)
        if state.shared is conn:
            state.shared = None
        for key, lease in list(state.leases.items()):
            if lease.conn is conn:
                del state.leases[key]
        self._closing.spawn(conn.close(), name=f"mcp-close-{state.spec.id}")
        self._changed()

    def _failed(self, state: ServerState, message: str) -> None:
        state.state, state.error = "unreachable", message
        state.problems = [p for p in state.problems if "unreachable" not in p.message]
        self._problem(state, state.spec.line, f"server {state.spec.id!r}: {message}")
        self._changed()

    def _problem(self, state: ServerState, line: int | None, message: str, severity: str = "error") -> None:
        problem = make_problem(MCP_SERVER_ERROR, MCP_YAML, line, message, "warning" if severity == "warning" else "error")
        bucket = state.problems if "unreachable" in message or "could not list" in message else state.tool_problems
        if problem.id not in {p.id for p in bucket}:
            bucket.append(problem)

    def _changed(self) -> None:
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
                    self._changed()

    def _discard(self, state: ServerState) -> None:
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


async def _has_resources(conn: Connection) -> bool:
    """Whether the server offers resources: the capability and at least one listed (FastMCP advertises
    the capability with none). A server that fails the listing simply offers none."""
    caps = getattr(conn.client, "server_capabilities", None)
    if caps is None or getattr(caps, "resources", None) is None:
        return False
    try:
        listed = await conn.request(lambda client: client.list_resources(), CONNECT_TIMEOUT_S)
    except Exception:
        return False
    return bool(listed.resources)


def _schema_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot check a tool's arguments, or ``None`` when it can."""
    import jsonschema

    if not isinstance(schema, dict):
        return "not an object"
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    return None
