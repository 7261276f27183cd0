"""A small MCP server (SDK ``MCPServer``) the MCP tests start as a real process, over stdio or HTTP.

Tools: ``echo``; ``remember``/``recall`` (state kept per MCP session, so a stateful client can tell
sessions apart; in stateless mode one process-wide slot); ``crash`` (the process exits mid-call);
``hang`` (never answers); ``nap`` (sleeps, logs a cancellation); ``picture`` (a PNG image); ``pid`` (the process id, to see restarts);
``dotted.name`` (a name no model may call); ``bad_schema`` (an invalid input schema); ``getenv``;
``paint`` (elicits the colour and the number of coats from the client, answers with what it got).
Resource: ``fake://notes/greeting`` (text).

    python fake_mcp_server.py stdio
    python fake_mcp_server.py http PORT [--stateless]
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel, WithJsonSchema

# a 1x1 red PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

server = MCPServer("fake", log_level="WARNING")
_slots: dict[Any, str] = {}


def _key(ctx: Context[Any, Any]) -> Any:
    """Over HTTP, the client's Mcp-Session-Id (handshake-era sessions); over stdio the process is the session."""
    if "--stateless" in sys.argv:
        return "shared"
    return (ctx.headers or {}).get("mcp-session-id", "process")


@server.tool()
async def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
async def remember(value: str, ctx: Context[Any, Any]) -> str:
    """Keep a value in this session."""
    _slots[_key(ctx)] = value
    return "remembered"


@server.tool()
async def recall(ctx: Context[Any, Any]) -> str:
    """The value this session kept, or '(nothing)'."""
    return _slots.get(_key(ctx), "(nothing)")


@server.tool()
async def crash() -> str:
    """Exit the server process in the middle of the call."""
    sys.stderr.flush()
    os._exit(3)


def _log_call(name: str) -> None:
    with open(os.environ["FAKE_MCP_LOG"], "a") as log:
        log.write(name + "\n")


@server.tool()
async def hang() -> str:
    """Never answer. Each call is logged to $FAKE_MCP_LOG when set (to count how often it ran)."""
    if os.environ.get("FAKE_MCP_LOG"):
        await asyncio.to_thread(_log_call, "hang")
    await asyncio.sleep(3600)
    return "late"


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep ``seconds``. Logs ``nap`` when it starts and ``nap cancelled`` when the client cancels the call
    (``notifications/cancelled``) to $FAKE_MCP_LOG when set."""
    if os.environ.get("FAKE_MCP_LOG"):
        await asyncio.to_thread(_log_call, "nap")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if os.environ.get("FAKE_MCP_LOG"):
            _log_call("nap cancelled")  # synchronously: an await here would be cancelled again
        raise
    return "rested"


@server.tool()
async def getenv(name: str) -> str:
    """The value of an environment variable of the server process (to see secrets kept out of records)."""
    return f"{name}={os.environ.get(name, '')}"


@server.tool()
async def bad_schema(x: Annotated[Any, WithJsonSchema({"type": 12})] = None) -> str:
    """A tool whose input schema is not a valid JSON schema."""
    return "never offered"


@server.tool(name="dotted.name")
async def dotted() -> str:
    """A tool whose name Dominds cannot offer to a model (dots are not allowed)."""
    return "never offered"


@server.tool()
async def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


class Paint(BaseModel):
    colour: str
    coats: int


@server.tool()
async def paint(ctx: Context[Any, Any]) -> str:
    """Asks which colour and how many coats, then paints."""
    answer = await ctx.elicit("Which colour for the shed?", schema=Paint)
    if answer.action == "accept" and answer.data is not None:
        return f"painted {answer.data.colour}, {answer.data.coats} coats"
    return f"not painted ({answer.action})"


@server.resource("fake://notes/greeting", name="greeting", description="A short greeting", mime_type="text/plain")
def greeting() -> str:
    return "hello from the fake server"


@server.tool()
async def picture() -> CallToolResult:
    """A 1x1 PNG and a caption."""
    return CallToolResult(
        content=[
            TextContent(type="text", text="a red dot"),
            ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
        ]
    )


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run(
            "streamable-http", host="127.0.0.1", port=int(sys.argv[2]), stateless_http="--stateless" in sys.argv
        )
