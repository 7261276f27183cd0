"""The tools a server gives the members: its listed tools, named ``prefix + name``, checked, filtered
and de-duplicated against every other tool; its resource tools; the release tool of a stateful server.

A tool left out (a name clash, a name no model may call, an invalid input schema, a whitelist entry
matching nothing) is a problem of mcp.yaml on the server's line.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from dominds.mcp.calls import call_tool, release_tool, run
from dominds.mcp.config import TOOL_NAME_RE
from dominds.mcp.connection import CONNECT_TIMEOUT_S, Connection
from dominds.mcp.pool import ServerPool, ServerState
from dominds.mcp.resource_tools import resource_tools
from dominds.tools.base import FuncTool, ToolCallContext


def make_tools(pool: ServerPool, state: ServerState, listed: list[Any], taken: set[str]) -> list[FuncTool]:
    """The tools of ``state``'s server; names it takes are added to ``taken``."""
    spec = state.spec
    tools: list[FuncTool] = []
    where = spec.line_of("tools")
    for pattern in spec.whitelist:
        if not any(fnmatch.fnmatchcase(t.name, pattern) for t in listed):
            pool.problem(state, where, f"server {spec.id!r}: whitelist entry {pattern!r} matches no tool of the server", "warning")
    for mcp_tool in listed:
        if spec.whitelist and not any(fnmatch.fnmatchcase(mcp_tool.name, p) for p in spec.whitelist):
            continue
        if any(fnmatch.fnmatchcase(mcp_tool.name, p) for p in spec.blacklist):
            continue
        name = spec.prefix + mcp_tool.name
        if not TOOL_NAME_RE.fullmatch(name):
            pool.problem(state, spec.line, f"server {spec.id!r}: tool {name!r} left out: a tool name holds 1 to 64 letters, digits, '_' or '-'", "warning")
            continue
        if name in taken:
            pool.problem(state, spec.line_of("prefix"), f"server {spec.id!r}: tool {name!r} left out: another toolset has a tool of that name (set `prefix`)")
            continue
        schema_problem = _schema_problem(mcp_tool.input_schema)
        if schema_problem is not None:
            pool.problem(state, spec.line, f"server {spec.id!r}: tool {name!r} left out: its input schema is invalid ({schema_problem})", "warning")
            continue
        taken.add(name)
        tools.append(_func_tool(pool, state, mcp_tool, name))
    if state.has_resources:

        async def run_result(ctx: ToolCallContext, label: str, op: Any) -> Any:
            return (await run(pool, state, label, ctx, op))[0]

        for tool in resource_tools(spec.id, spec.whitelist, spec.blacklist, run_result):
            if tool.name in taken:
                pool.problem(state, spec.line, f"server {spec.id!r}: tool {tool.name!r} left out: another toolset has a tool of that name")
                continue
            taken.add(tool.name)
            tools.append(tool)
    if spec.stateful:
        tools.append(release_tool(pool, state))
    return tools


def _func_tool(pool: ServerPool, state: ServerState, mcp_tool: Any, name: str) -> FuncTool:
    schema = dict(mcp_tool.input_schema or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema.pop("$schema", None)
    description = (mcp_tool.description or mcp_tool.title or mcp_tool.name).strip()
    mcp_name = mcp_tool.name

    async def handler(ctx: ToolCallContext, args: dict[str, Any]) -> str:
        return await call_tool(pool, state, mcp_name, ctx, args)

    return FuncTool(name, f"[MCP {state.spec.id}] {description}", schema, handler)


async def has_resources(conn: Connection) -> bool:
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
