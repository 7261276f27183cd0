"""MCP servers as toolsets: configuration, reloads and discovery (``McpManager``).

``McpManager`` belongs to the driver's ``ConfigCache``. ``reload()`` reads ``.minds/mcp.yaml`` (when
it changed); each server becomes a toolset named by its id. Nothing starts until a member whose
toolsets include a server is about to generate: ``prepare()`` connects and lists the server's tools.
Problems met on the way (unreachable, name clashes, tools left out) are kept per server and shown
with mcp.yaml's.

The rest is split by job: ``pool.py`` holds the connections' life cycle (start, back-off, leases,
shutdown), ``calls.py`` runs a call on a connection, ``tool_list.py`` makes the tools a server gives.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any

from dominds.mcp.config import McpConfig, load_mcp_config
from dominds.mcp.connection import CallTimeout, ServerGone, ServerUnreachable
from dominds.mcp.pool import ServerPool, ServerState
from dominds.mcp.tool_list import has_resources, make_tools
from dominds.problems import Problem
from dominds.rtws import Rtws
from dominds.tools.base import FuncTool, Toolsets

__all__ = ["McpManager", "ServerState"]


class McpManager(ServerPool):
    """Every configured server of one workspace, and the toolsets made of them."""

    def __init__(self, rtws: Rtws, builtin_toolsets: Toolsets | None = None, environ: Any = None) -> None:
        super().__init__(rtws, environ)
        self.builtin_toolsets = builtin_toolsets or Toolsets()
        """The engine's own toolsets: their names and tool names are taken (a clash is a problem)."""
        self.config_problems: list[Problem] = []

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
                self.discard(self.servers.pop(server_id))
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
                    conn = await self.start(state)
                    try:
                        listed = await conn.list_tools()
                        state.has_resources = await has_resources(conn)
                    finally:
                        await conn.close()
                else:
                    conn = await self.shared(state)
                    listed = await conn.list_tools()
                    state.has_resources = await has_resources(conn)
            except (ServerUnreachable, ServerGone, CallTimeout) as exc:
                self.failed(state, f"unreachable: {exc}")
                return
            except Exception as exc:  # a server that answers nonsense must not stop the dialog
                self.failed(state, f"could not list its tools: {type(exc).__name__}: {exc}")
                return
            state.problems = []
            state.listed = listed
            self._rebuild()
            self.changed()

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
            state.tools = make_tools(self, state, server_tools, taken)
