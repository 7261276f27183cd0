"""Running a call on a server: the dialog's connection, the failures the model reads, the result.

A server that goes away during a call, or a call past ``timeout_s``, is an error the model reads
("may or may not have run"), never re-run. A server found dead before the call is sent (a ping after
a quiet spell, see connection.py) is started again and the call runs on the new connection, once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dominds.mcp.config import MCP_YAML
from dominds.mcp.connection import (
    CallTimeout,
    Connection,
    ServerGone,
    ServerGoneBeforeCall,
    ServerUnreachable,
)
from dominds.mcp.pool import ServerPool, ServerState
from dominds.mcp.results import render_result
from dominds.tools.base import FuncTool, ToolCallContext, ToolError, object_schema

Op = Callable[[Any], Awaitable[Any]]
"""``op(client)``: one request on the SDK's client (a tool call, a resource read…)."""


async def call_tool(pool: ServerPool, state: ServerState, mcp_name: str, ctx: ToolCallContext, args: dict[str, Any]) -> str:
    """The text of the server's answer to ``mcp_name(args)``; ``ToolError`` when it failed or said ``isError``."""
    on_progress = progress_publisher(ctx)
    result, conn = await run(
        pool, state, mcp_name, ctx, lambda client: client.call_tool(mcp_name, args, progress_callback=on_progress)
    )
    dialog = ctx.services.get("dialog")
    dialog_dir: Path | None = getattr(getattr(dialog, "files", None), "dir", None)
    text, is_error = render_result(result, dialog_dir, ctx.self_id, ctx.call_id)
    text = conn.redact(text)
    if is_error:
        raise ToolError(text)
    return text


PROGRESS_EVERY_S = 0.25
"""A call's progress is shown at most this often (and always when it reaches its total): a server may
report thousands of steps."""


def progress_publisher(ctx: ToolCallContext) -> Callable[[float, float | None, str | None], Awaitable[None]]:
    """The callback that shows a server's progress on the calling dialog's tool call
    (``func_progress_evt``, live only: progress is not kept in the course)."""
    dialog = ctx.services.get("dialog")
    last = [0.0]

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        now = time.monotonic()
        done = total is not None and progress >= total
        if dialog is None or (now - last[0] < PROGRESS_EVERY_S and not done):
            return
        last[0] = now
        event: dict[str, Any] = {
            "type": "func_progress_evt",
            "course": dialog.latest.current_course,
            "genseq": dialog.genseq,
            "funcId": ctx.call_id,
            "progress": progress,
        }
        if total is not None:
            event["total"] = total
        if message:
            event["message"] = message[:500]
        dialog.publish(event)

    return on_progress


async def run(pool: ServerPool, state: ServerState, label: str, ctx: ToolCallContext, op: Op) -> tuple[Any, Connection]:
    """``op(client)`` on the dialog's connection to the server; failures become ``ToolError``s."""
    spec = state.spec
    if pool.servers.get(spec.id) is not state:
        raise ToolError(f"MCP server {spec.id!r} was removed from or changed in {MCP_YAML}; call the tool again")
    for attempt in (1, 2):  # a server found dead before the call was sent is started again, once
        try:
            conn = await pool.connection(state, ctx)
        except (ServerUnreachable, ServerGone) as exc:
            pool.failed(state, f"unreachable: {exc}")
            raise ToolError(f"MCP server {spec.id!r} is unreachable ({exc}); the tool did not run") from exc
        try:
            result = await conn.request(op, spec.timeout_s, caller=ctx)
            break
        except ServerGoneBeforeCall as exc:
            pool.gone(state, conn, str(exc))
            if attempt == 2:
                raise ToolError(f"MCP server {spec.id!r} went away again before {label} was sent ({exc}); the tool did not run") from exc
        except CallTimeout as exc:
            raise ToolError(
                f"MCP server {spec.id!r}: {label} gave no answer within {spec.timeout_s:g}s; "
                "it may or may not have run (it is not retried)"
            ) from exc
        except ServerGone as exc:
            pool.gone(state, conn, str(exc))
            raise ToolError(
                f"MCP server {spec.id!r} went away during {label} ({exc}); the call may or may not have run "
                "(it is not retried). The server is started again on the next call."
            ) from exc
        except Exception as exc:
            raise ToolError(conn.redact(f"MCP server {spec.id!r} refused {label}: {type(exc).__name__}: {exc}")) from exc
    state.failures = 0
    return result, conn


def release_tool(pool: ServerPool, state: ServerState) -> FuncTool:
    """``release_<id>_session``: ends the calling dialog's lease of a stateful server."""

    async def handler(ctx: ToolCallContext, args: dict[str, Any]) -> str:
        lease = state.leases.pop(ctx.self_id, None)
        if lease is None:
            return f"this dialog holds no session of MCP server {state.spec.id!r}"
        await lease.conn.close()
        pool.changed()
        return f"released this dialog's session of MCP server {state.spec.id!r}; the next call starts a new one"

    return FuncTool(
        f"release_{state.spec.id}_session",
        f"End this dialog's session of the stateful MCP server {state.spec.id!r} (its server-side state is lost).",
        object_schema({}),
        handler,
    )
