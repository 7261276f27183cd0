"""The Tree-of-Thoughts MCP server (the MCP SDK's low-level ``Server``) over the ``dominds.tools.tot`` machine.

Each tool returns one text block holding pretty-printed JSON, and the same dict as structured
content. A rule violation, and any bad argument, comes back as a tool error (``isError: true``)
whose JSON is ``{"status": "REJECTED", "errors": [{code, nodeId, message, hint}]}``, so a client
sees the code and the fix in the result instead of a protocol error.

Why the low-level server and not ``MCPServer``: ``MCPServer`` validates arguments against the
handler's signature before our code sees them, so a missing argument came back as raw pydantic
text, and aliases collapsed ``minRoots`` with ``min_roots`` without a word. Here every tool gets the
arguments exactly as sent and ``toolset.call_tool`` answers them with the documented codes. Only
the tools capability is advertised (no empty prompts or resources lists).

Over stdio, the end of input does not drop requests still being answered (``dominds.mcp.stdio_serve``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from dominds import __version__
from dominds.mcp.stdio_serve import serve_stdio
from dominds.tools.tot.machine import TotError
from dominds.tools.tot.report import RESOURCE_PREFIX, listed_reports, read_report
from dominds.tools.tot.sessions import SessionStore, TotService
from dominds.tools.tot.toolset import TOOL_SPECS, USAGE, call_tool, parameters_for

_READ_ONLY = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_WRITES = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# tot_end returns the same report when called again on an ended session
_ENDS = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_MIME = {"md": "text/markdown", "json": "application/json"}
_ANNOTATIONS = {"tot_status": _READ_ONLY, "tot_end": _ENDS}

TOOLS = [
    types.Tool(name=name, description=spec[0], input_schema=parameters_for(name), annotations=_ANNOTATIONS.get(name, _WRITES))
    for name, spec in TOOL_SPECS.items()
]


def build_server(store: SessionStore) -> Server[Any]:
    """A server whose six tools run on the sessions in ``store``."""
    service = TotService(store)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            result = call_tool(service, params.name, dict(params.arguments or {}))
            is_error = False
        except TotError as exc:
            result, is_error = exc.to_json(), True
        text = json.dumps(result, ensure_ascii=False, indent=2)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=result, is_error=is_error)

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        reports = await anyio.to_thread.run_sync(listed_reports, service)
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name=f"{sid}.{kind}", uri=f"{RESOURCE_PREFIX}{sid}.{kind}", mime_type=_MIME[kind],
                    description=f"the full tot_end report of session {sid}",
                )
                for sid, kind in reports
            ]
        )  # fmt: skip

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        name = uri.removeprefix(RESOURCE_PREFIX)
        if name == uri or "." not in name:
            raise MCPError(code=INVALID_PARAMS, message=f"no resource {uri!r}; reports are {RESOURCE_PREFIX}<sessionId>.md or .json")
        sid, kind = name.rsplit(".", 1)
        try:
            text = await anyio.to_thread.run_sync(read_report, service, sid, kind)
        except TotError as exc:
            raise MCPError(code=INVALID_PARAMS, message=exc.violations[0].message) from exc
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=_MIME[kind], text=text)])

    return Server(
        "dominds-tot", version=__version__, instructions=USAGE, on_list_tools=list_tools, on_call_tool=on_call_tool,
        on_list_resources=list_resources, on_read_resource=read_resource,
    )  # fmt: skip


def run_stdio(sessions_dir: Path) -> None:
    """Serve over stdin/stdout until the client disconnects (after answering what it asked)."""
    anyio.run(serve_stdio, build_server(SessionStore(sessions_dir)))


def run_http(sessions_dir: Path, host: str, port: int, token: str | None) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted (see ``dominds.mcp.http_serve``)."""
    from dominds.mcp.http_serve import serve_http

    server = build_server(SessionStore(sessions_dir))
    try:
        anyio.run(lambda: serve_http(server, host, port, token, name="dominds tot-mcp"))
    except KeyboardInterrupt:
        pass
