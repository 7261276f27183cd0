"""An MCP server's sampling request, served by the calling member's model and recorded in its course.

A server opted in with ``sampling: true`` (``.minds/mcp.yaml``) may ask for a completion during a
tool call (``sampling/createMessage``). The dialog whose call it is answers with its member's provider
and model (no tools, the server's own system prompt and messages, at most the server's ``maxTokens``),
and an ``mcp_sampling_record`` keeps what was asked and answered. The member's own context is left
alone: the answer goes to the server, and the model reads only the tool's result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver.services import EngineServices
from dominds.ids import now_iso
from dominds.llm.base import ChatMessage, GenerationRequest, LlmError
from dominds.llm.catalog import LlmResolutionError, resolve_member_llm
from dominds.store.course_records import McpSamplingRecord, Usage


@dataclass
class SampledReply:
    text: str
    model: str
    truncated: bool


@dataclass
class _Collect:
    """A receiver that keeps what the model says (its thinking is not part of the answer)."""

    said: list[str] = field(default_factory=list)

    async def thinking_start(self) -> None: ...
    async def thinking_chunk(self, text: str) -> None: ...
    async def thinking_finish(self, provider_data: dict[str, Any] | None = None) -> None: ...
    async def saying_start(self) -> None: ...
    async def saying_finish(self) -> None: ...
    async def func_call(self, call_id: str, name: str, arguments_json: str) -> None: ...
    async def usage_so_far(self, usage: Usage) -> None: ...

    async def saying_chunk(self, text: str) -> None:
        self.said.append(text)


class SamplingFailed(Exception):
    """The member's model could not answer (recorded; the server hears the reason)."""


async def sample(
    engine: EngineServices,
    dialog: Dialog,
    server_id: str,
    call_id: str,
    system_prompt: str,
    messages: list[dict[str, str]],
    max_tokens: int,
) -> SampledReply:
    """The member's model's answer to ``messages`` (``{role: user|assistant, text}``)."""
    record = McpSamplingRecord(
        ts="", genseq=dialog.genseq, server=server_id, call_id=call_id, system_prompt=system_prompt, messages=messages
    )
    try:
        config = engine.config.get()
        member = config.team.member(dialog.agent_id)
        if member is None:
            raise SamplingFailed(f"agent {dialog.agent_id!r} is not a member of the team")
        resolved = resolve_member_llm(member, config.catalog)
        record.provider, record.model = resolved.provider_key, resolved.model_key
        request = GenerationRequest(
            provider_key=resolved.provider_key,
            provider_config=engine.provider_config_dict(resolved.provider),
            model_key=resolved.model_key,
            model_name=resolved.model.key,
            system_prompt=system_prompt,
            messages=[ChatMessage(role="assistant" if m["role"] == "assistant" else "user", content=m["text"]) for m in messages],
            model_params={**member.model_params, "max_tokens": max(1, max_tokens)},
            agent_id=dialog.agent_id,
            rtws_root=str(engine.rtws.root),
            streaming=member.streaming,
            model_info=resolved.model.request_info(),
        )
        generator = await engine.generator_for(resolved.provider.api_type)
        receiver = _Collect()
        result = await generator.generate(request, receiver)
    except (LlmError, LlmResolutionError, SamplingFailed) as exc:
        record.ts, record.error = now_iso(), str(exc)
        _keep(dialog, record)
        raise SamplingFailed(str(exc)) from exc
    record.ts, record.reply, record.usage = now_iso(), "".join(receiver.said), result.usage
    _keep(dialog, record)
    return SampledReply(record.reply, result.model or resolved.model.key, result.partial)


def _keep(dialog: Dialog, record: McpSamplingRecord) -> None:
    """Persisted, then shown on the call in the panel (``mcp_sampling_evt``; a replay rebuilds it)."""
    dialog.append(record)
    dialog.publish(sampling_event(record, dialog.latest.current_course))


def sampling_event(record: McpSamplingRecord, course: int) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "mcp_sampling_evt",
        "course": course,
        "genseq": record.genseq,
        "funcId": record.call_id,
        "server": record.server,
        "reply": record.reply,
    }
    if record.error:
        event["error"] = record.error
    return event
