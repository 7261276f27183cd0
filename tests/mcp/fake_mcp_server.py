"""A small MCP server (SDK ``MCPServer``) the MCP tests start as a real process, over stdio or HTTP.

Tools: ``echo``; ``remember``/``recall`` (state kept per MCP session, so a stateful client can tell
sessions apart; in stateless mode one process-wide slot); ``crash`` (the process exits mid-call);
``hang`` (never answers); ``nap`` (sleeps, logs a cancellation); ``picture`` (a PNG image); ``pid`` (the process id, to see restarts);
``dotted.name`` (a name no model may call); ``bad_schema`` (an invalid input schema); ``getenv``;
``paint`` (elicits the colour and the number of coats from the client with ``ctx.elicit``, answers with
what it got); ``paint_anywhere`` (the same through ``Resolve(Elicit)``, which also works on the
2026-07-28 protocol); ``haiku`` / ``haiku_anywhere`` (sample the client's model, ``create_message`` /
``Resolve(Sample)``); ``sand`` (reports progress three times, then answers).
Resource: ``fake://notes/greeting`` (text).

    python fake_mcp_server.py stdio [--modern-only]
    python fake_mcp_server.py http PORT [--stateless] [--json]

``--modern-only`` refuses the handshake-era ``initialize`` (a server of the 2026-07-28 protocol only);
``--json`` answers HTTP requests with JSON instead of an event stream.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, Elicit, Resolve, Sample
from mcp_types import CallToolResult, CreateMessageResult, ImageContent, SamplingMessage, TextContent
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


def _ask_paint() -> Elicit[Paint]:
    return Elicit("Which colour for the fence?", Paint)


@server.tool()
async def paint_anywhere(choice: Annotated[ElicitationResult[Paint], Resolve(_ask_paint)]) -> str:
    """Asks which colour and how many coats (on any protocol), then paints."""
    if choice.action == "accept":
        return f"painted {choice.data.colour}, {choice.data.coats} coats"  # type: ignore[union-attr]
    return f"not painted ({choice.action})"


def _haiku_request(topic: str) -> list[SamplingMessage]:
    return [SamplingMessage(role="user", content=TextContent(type="text", text=f"Write a haiku about {topic}."))]


@server.tool()
async def haiku(topic: str, ctx: Context[Any, Any]) -> str:
    """Asks the client's model for a haiku (``sampling/createMessage`` mid-call)."""
    result = await ctx.session.create_message(
        _haiku_request(topic), max_tokens=200, system_prompt="You are a poet.", related_request_id=ctx.request_id
    )
    return f"the model ({result.model}) wrote: {getattr(result.content, 'text', result.content)}"


def _sample_haiku(topic: str) -> Sample:
    return Sample(_haiku_request(topic), max_tokens=200, system_prompt="You are a poet.")


@server.tool()
async def haiku_anywhere(topic: str, result: Annotated[CreateMessageResult, Resolve(_sample_haiku)]) -> str:
    """Asks the client's model for a haiku (on any protocol)."""
    return f"the model ({result.model}) wrote: {getattr(result.content, 'text', result.content)}"


@server.tool()
async def sand(ctx: Context[Any, Any]) -> str:
    """Reports progress three times (1/3, 2/3, 3/3 with a message), then answers."""
    for step in (1, 2, 3):
        await ctx.report_progress(step, 3, f"coat {step} of 3")
        await asyncio.sleep(0.05)
    return "sanded"


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


def _refuse_the_handshake() -> None:
    from mcp.server.runner import ServerRunner
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    def refuse(self: Any, params: Any) -> Any:
        raise MCPError(code=INVALID_PARAMS, message="unsupported protocol version: this server speaks 2026-07-28 only")

    ServerRunner._handle_initialize = refuse  # type: ignore[method-assign]


if __name__ == "__main__":
    if "--modern-only" in sys.argv:
        _refuse_the_handshake()
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run(
            "streamable-http", host="127.0.0.1", port=int(sys.argv[2]), stateless_http="--stateless" in sys.argv,
            json_response="--json" in sys.argv,
        )
