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

Over stdio, the end of input does not drop requests still being answered: ``DrainingReader`` holds
the end back until every request read so far has its response (``stdio_until_answered``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from dominds import __version__
from dominds.tools.tot.machine import TotError
from dominds.tools.tot.sessions import SessionStore, TotService
from dominds.tools.tot.toolset import TOOL_SPECS, USAGE, call_tool, parameters_for

DRAIN_TIMEOUT_S = 30.0
"""How long the end of stdin waits for the answers still being written (each tool call takes milliseconds)."""

_READ_ONLY = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_WRITES = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# tot_end returns the same report when called again on an ended session
_ENDS = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
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

    return Server("dominds-tot", version=__version__, instructions=USAGE, on_list_tools=list_tools, on_call_tool=on_call_tool)


class _Unanswered:
    """Ids of the requests read but not yet answered."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.changed = anyio.Event()

    def add(self, request_id: Any) -> None:
        self.ids.add(request_id)

    def discard(self, request_id: Any) -> None:
        self.ids.discard(request_id)
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_empty(self) -> None:
        while self.ids:
            await self.changed.wait()


def _jsonrpc(item: Any) -> Any:
    message = item.message if isinstance(item, SessionMessage) else None
    return getattr(message, "root", message)


class DrainingReader:
    """A read stream whose end is held back until every request read so far has been answered."""

    def __init__(self, inner: Any, unanswered: _Unanswered) -> None:
        self.inner = inner
        self.unanswered = unanswered

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self.inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            with anyio.move_on_after(DRAIN_TIMEOUT_S):
                await self.unanswered.wait_empty()
            raise
        message = _jsonrpc(item)
        if isinstance(message, types.JSONRPCRequest):
            self.unanswered.add(message.id)
        return item

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()


class AnsweringWriter:
    """A write stream that marks a request answered once its response or error is written."""

    def __init__(self, inner: Any, unanswered: _Unanswered) -> None:
        self.inner = inner
        self.unanswered = unanswered

    async def send(self, item: Any, /) -> None:
        await self.inner.send(item)
        message = _jsonrpc(item)
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.unanswered.discard(message.id)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()


@asynccontextmanager
async def stdio_until_answered() -> AsyncIterator[tuple[DrainingReader, AnsweringWriter]]:
    """stdin/stdout streams on which closing stdin still lets every request read so far be answered."""
    unanswered = _Unanswered()
    async with stdio_server() as (read_stream, write_stream):
        yield DrainingReader(read_stream, unanswered), AnsweringWriter(write_stream, unanswered)


def run_stdio(sessions_dir: Path) -> None:
    """Serve over stdin/stdout until the client disconnects (after answering what it asked)."""
    server = build_server(SessionStore(sessions_dir))

    async def serve() -> None:
        async with stdio_until_answered() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)


def run_http(sessions_dir: Path, host: str, port: int, token: str | None) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted (see ``dominds.mcp.http_serve``)."""
    from dominds.mcp.http_serve import serve_http

    server = build_server(SessionStore(sessions_dir))
    try:
        anyio.run(lambda: serve_http(server, host, port, token, name="dominds tot-mcp"))
    except KeyboardInterrupt:
        pass
