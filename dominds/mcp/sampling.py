"""An MCP server's sampling request (``sampling/createMessage``) during a tool call.

Opt-in per server: ``sampling: true`` in ``.minds/mcp.yaml``. Then the calling dialog's member answers
with its own model, and the course keeps what was asked and answered (``driver/mcp_sampling.py``,
reached through ``ctx.services["engine"]``: this package sits below the driver). A server not opted
in is refused with an error that says how to opt in; Dominds declares the capability for every server
so that the refusal, and not a bare "not supported", is what the server (and through its tool result,
the model) hears. Only text is sampled: images or audio in the server's messages are described.
"""

from __future__ import annotations

from typing import Any

from dominds.mcp.config import MCP_YAML


def refusal(server_id: str) -> str:
    return (
        f"sampling refused: MCP server {server_id!r} may not use the team's models; "
        f"set `sampling: true` under it in {MCP_YAML} to let it use the calling member's model"
    )


async def serve_sampling(server_id: str, allowed: bool, ctx: Any, params: Any) -> Any:
    """The ``CreateMessageResult`` for ``params``, or an ``ErrorData`` naming why there is none."""
    import mcp_types

    def error(message: str) -> Any:
        return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=message)

    if not allowed:
        return error(refusal(server_id))
    engine, dialog = ctx.services.get("engine"), ctx.services.get("dialog")
    if engine is None or dialog is None:
        return error("sampling refused: the call that asked has no dialog")
    messages = [{"role": str(m.role), "text": _text(m.content)} for m in params.messages]
    try:
        reply = await engine.sample_for_mcp(
            dialog, server_id, ctx.call_id, str(params.system_prompt or ""), messages, int(params.max_tokens)
        )
    except Exception as exc:  # the model's failure is the server's answer, never the daemon's
        return error(f"the calling member's model could not answer: {exc}")
    return mcp_types.CreateMessageResult(
        role="assistant",
        content=mcp_types.TextContent(type="text", text=reply.text),
        model=reply.model,
        stop_reason="maxTokens" if reply.truncated else "endTurn",
    )


def _text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    parts = []
    for block in blocks:
        kind = getattr(block, "type", "")
        parts.append(str(block.text) if kind == "text" else f"[{kind or 'unknown'} content not sampled]")
    return "\n".join(parts)
