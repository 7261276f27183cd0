"""Serve an MCP low-level ``Server`` over stdin/stdout without dropping requests when stdin closes.

The SDK's stdio transport ends the session at the end of input and cancels every request still being
answered: a client that writes its calls and closes stdin (a pipe, ``mcp`` in a script) got the first
answer or two. Here the end of input is held back until every request read so far has its response
(at most ``DRAIN_TIMEOUT_S``). Used by ``dominds tot-mcp`` and ``dominds mcp``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

DRAIN_TIMEOUT_S = 30.0
"""How long the end of stdin waits for the answers still being written."""


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


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over stdin/stdout until the client disconnects, after answering what it asked."""
    async with stdio_until_answered() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
