"""A server's resources as two tools: ``list_<id>_resources`` and ``read_<id>_resource``.

MCP tools were offered, resources were not. A server that lists resources at discovery (the
capability alone is not enough: FastMCP advertises it with none) gets the two tools, filtered by its
``tools`` whitelist/blacklist under the names ``list_resources`` and ``read_resource``. Reads go through
the same connection, leases and failure handling as tool calls (``calls.run``).
"""

from __future__ import annotations

import base64
import fnmatch
from collections.abc import Awaitable, Callable
from typing import Any

from dominds.tools.base import FuncTool, ToolCallContext, object_schema

Run = Callable[[ToolCallContext, str, Callable[[Any], Awaitable[Any]]], Awaitable[Any]]
"""``(ctx, label, op) -> result``: run ``op(client)`` on the dialog's connection to the server."""
MAX_READ_CHARS = 100_000
"""A read answers at most this much text (a resource may be a whole file)."""


def offered(whitelist: tuple[str, ...], blacklist: tuple[str, ...], name: str) -> bool:
    if whitelist and not any(fnmatch.fnmatchcase(name, p) for p in whitelist):
        return False
    return not any(fnmatch.fnmatchcase(name, p) for p in blacklist)


def resource_tools(server_id: str, whitelist: tuple[str, ...], blacklist: tuple[str, ...], run: Run) -> list[FuncTool]:
    tools: list[FuncTool] = []

    async def list_handler(ctx: ToolCallContext, args: dict[str, Any]) -> str:
        listed = await run(ctx, "resources/list", lambda client: client.list_resources())
        lines = [
            f"- {r.uri}" + (f" — {r.name}" if r.name else "") + (f" ({r.mime_type})" if r.mime_type else "")
            + (f": {r.description.strip()}" if r.description else "")
            for r in listed.resources
        ]
        return "\n".join(lines) if lines else f"MCP server {server_id!r} lists no resources"

    async def read_handler(ctx: ToolCallContext, args: dict[str, Any]) -> str:
        uri = str(args["uri"])
        read = await run(ctx, f"resources/read {uri}", lambda client: client.read_resource(uri))
        parts = []
        for item in read.contents:
            text = getattr(item, "text", None)
            if text is not None:
                parts.append(text)
            else:
                size = len(base64.b64decode(getattr(item, "blob", "") or ""))
                parts.append(f"[binary content of {item.uri}: {size:,} bytes, {item.mime_type or 'unknown type'}]")
        text = "\n\n".join(parts)
        if len(text) > MAX_READ_CHARS:
            text = text[:MAX_READ_CHARS] + f"\n… (cut: {len(text):,} characters, the first {MAX_READ_CHARS:,} shown)"
        return text

    if offered(whitelist, blacklist, "list_resources"):
        tools.append(
            FuncTool(
                f"list_{server_id}_resources",
                f"[MCP {server_id}] The resources the server offers: URI, name, type and description of each.",
                object_schema({}),
                list_handler,
            )
        )
    if offered(whitelist, blacklist, "read_resource"):
        tools.append(
            FuncTool(
                f"read_{server_id}_resource",
                f"[MCP {server_id}] Read one resource of the server by its URI (from list_{server_id}_resources).",
                object_schema({"uri": {"type": "string", "description": "the resource's URI"}}, ["uri"]),
                read_handler,
            )
        )
    return tools
