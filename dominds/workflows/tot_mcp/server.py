"""The Tree-of-Thoughts MCP server (MCP Python SDK 2.x ``MCPServer``) over the ``dominds.tools.tot`` machine.

Each tool returns one text block holding pretty-printed JSON, and the same dict as structured
content. A rule violation comes back as a tool error (``isError: true``) whose JSON is
``{"status": "REJECTED", "errors": [{code, nodeId, message, hint}]}``, so a client sees the code and
the fix in the result instead of a protocol error.

The published schemas are the toolset's (camelCase). The parameters below are typed ``Any`` with
those schemas attached, and take snake_case aliases too, because several MCP hosts send numbers as
strings or rename arguments; the toolset's ``call_tool`` turns what arrives into typed values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, TypeAlias

from mcp.server import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AliasChoices, Field, WithJsonSchema

from dominds import __version__
from dominds.tools.tot.machine import TotError
from dominds.tools.tot.sessions import SessionStore, TotService
from dominds.tools.tot.toolset import PROPERTIES, TOOL_SPECS, USAGE, call_tool


def _schema(name: str) -> WithJsonSchema:
    """Publish the toolset's schema for ``name`` instead of the one pydantic would derive from ``Any``."""
    return WithJsonSchema({"title": name, **PROPERTIES[name]})


def _names(*names: str) -> Any:
    return Field(validation_alias=AliasChoices(*names))


QueryParam: TypeAlias = Annotated[Any, _schema("query"), _names("query")]
MinRootsParam: TypeAlias = Annotated[Any, _schema("minRoots"), _names("minRoots", "min_roots")]
SessionIdParam: TypeAlias = Annotated[Any, _schema("sessionId"), _names("sessionId", "session_id")]
NodesParam: TypeAlias = Annotated[Any, _schema("nodes"), _names("nodes")]
ResultsParam: TypeAlias = Annotated[Any, _schema("results"), _names("results")]
NodeIdParam: TypeAlias = Annotated[Any, _schema("nodeId"), _names("nodeId", "node_id")]
# the origin's reclassify argument was newState
StateParam: TypeAlias = Annotated[Any, _schema("state"), _names("state", "newState", "new_state")]

_READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# tot_end returns the same report when called again on an ended session
_ENDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def build_server(store: SessionStore) -> MCPServer:
    """An MCPServer whose six tools run on the sessions in ``store``."""
    service = TotService(store)
    server = MCPServer("dominds-tot", instructions=USAGE, version=__version__, log_level="WARNING")

    def respond(tool_name: str, args: dict[str, Any]) -> CallToolResult:
        try:
            result = call_tool(service, tool_name, {key: value for key, value in args.items() if value is not None})
            is_error = False
        except TotError as exc:
            result, is_error = exc.to_json(), True
        text = json.dumps(result, ensure_ascii=False, indent=2)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=result, is_error=is_error)

    async def tot_start(query: QueryParam, minRoots: MinRootsParam = None) -> CallToolResult:
        return respond("tot_start", {"query": query, "minRoots": minRoots})

    async def tot_propose(sessionId: SessionIdParam, nodes: NodesParam) -> CallToolResult:
        return respond("tot_propose", {"sessionId": sessionId, "nodes": nodes})

    async def tot_commit(sessionId: SessionIdParam, results: ResultsParam) -> CallToolResult:
        return respond("tot_commit", {"sessionId": sessionId, "results": results})

    async def tot_reclassify(sessionId: SessionIdParam, nodeId: NodeIdParam, state: StateParam) -> CallToolResult:
        return respond("tot_reclassify", {"sessionId": sessionId, "nodeId": nodeId, "state": state})

    async def tot_status(sessionId: SessionIdParam = None) -> CallToolResult:
        return respond("tot_status", {"sessionId": sessionId})

    async def tot_end(sessionId: SessionIdParam) -> CallToolResult:
        return respond("tot_end", {"sessionId": sessionId})

    tools = (tot_start, tot_propose, tot_commit, tot_reclassify, tot_status, tot_end)
    annotations = {"tot_status": _READ_ONLY, "tot_end": _ENDS}
    for tool in tools:
        name = tool.__name__
        server.add_tool(tool, name=name, description=TOOL_SPECS[name][0], annotations=annotations.get(name, _WRITES))
    return server


def run_stdio(sessions_dir: Path) -> None:
    """Serve over stdin/stdout until the client disconnects."""
    build_server(SessionStore(sessions_dir)).run("stdio")


def run_http(sessions_dir: Path, host: str, port: int, token: str | None) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted (see ``dominds.mcp.http_serve``)."""
    import anyio

    from dominds.mcp.http_serve import serve_http

    server = build_server(SessionStore(sessions_dir))
    try:
        anyio.run(lambda: serve_http(server, host, port, token, name="dominds tot-mcp"))
    except KeyboardInterrupt:
        pass
