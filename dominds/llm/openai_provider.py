"""The OpenAI-compatible provider: the official ``openai`` SDK against any ``/v1/chat/completions``.

OpenAI, vLLM, Ollama and the llama.cpp server all speak this dialect. Reasoning deltas
(``reasoning_content`` from vLLM/DeepSeek/llama.cpp, ``reasoning`` from Ollama/OpenRouter) become
thinking segments; tool calls arrive as fragments keyed by ``index`` and are emitted whole after the
stream, in index order. Usage comes from the final chunk (``stream_options.include_usage``).

As in the Anthropic provider, one SDK client per endpoint and key serves the engine (``sdk_clients.py``),
Stop closes the generation's HTTP stream at once, and the SDK's own retries are off so ``retry.py`` is
the only policy. With ``streaming: false`` the request is not streamed and the finished message is
replayed to the receiver. OpenAI's own API is better served by ``openai_responses.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import httpx2
import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from dominds.llm.base import ChatMessage, GenerationReceiver, GenerationRequest, GenerationResult, ImagePart
from dominds.llm.message_reuse import MessageReuse, Piece, encoded, json_array
from dominds.llm.params import merged_params
from dominds.llm.retry import (
    AttemptFailure,
    EmptyReply,
    RetryPolicy,
    connection_failure,
    is_billing_error,
    retry_after_seconds,
)
from dominds.llm.sdk_clients import (
    REQUEST_TIMEOUT,
    HttpClientFactory,
    SdkGenerator,
    body_around,
    sdk_http_client,
)
from dominds.llm.tool_history import CallIds, group_tool_turns
from dominds.store.course_records import FinishReason, Usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEYLESS_API_KEY = "sk-no-key-required"
"""Local servers ignore the key, but the SDK refuses to run without one."""


FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "content_filter",
}


class OpenAiSdkGenerator(SdkGenerator[openai.AsyncOpenAI, bytes]):
    """What both OpenAI generators (Chat Completions, Responses) share: the ``openai`` SDK's client."""

    default_base_url = DEFAULT_BASE_URL
    keyless_api_key = KEYLESS_API_KEY

    def make_client(self, base_url: str, api_key: str, http_client: httpx2.AsyncClient | None) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=REQUEST_TIMEOUT,
            http_client=http_client or sdk_http_client(openai, timeout=REQUEST_TIMEOUT),
        )


class OpenAiCompatibleGenerator(OpenAiSdkGenerator):
    """Generator for ``apiType: openai-compatible`` (alias ``openai``) providers: Chat Completions."""

    def __init__(self, retry_policy: RetryPolicy | None = None, http_client: HttpClientFactory | None = None) -> None:
        super().__init__(retry_policy, http_client)
        self.messages = MessageReuse(chat_piece)

    def prepare(self, request: GenerationRequest, base_url: str) -> bytes:
        """The request's body, streamed or not as the request says."""
        sent: dict[str, Any] = {"model": request.model_name}
        if request.streaming:
            sent |= {"stream": True, "stream_options": {"include_usage": True}}
        sent["extra_body"] = request_extra(request, base_url)
        field = reasoning_field(request.provider_config.get("reasoningPassBack"))
        parts = self.messages.convert(request.messages, field, request.shared_run).parts
        system = [encoded({"role": "system", "content": request.system_prompt})] if request.system_prompt else []
        return json_array(parts, system, around=body_around(sent, "messages"))

    async def stream_once(self, client: openai.AsyncOpenAI, prepared: bytes, receiver: GenerationReceiver) -> GenerationResult:
        return await _stream_once(client, prepared, receiver)

    async def create_once(self, client: openai.AsyncOpenAI, prepared: bytes, receiver: GenerationReceiver) -> GenerationResult:
        return await _create_once(client, prepared, receiver)

    def classify(self, exc: Exception) -> AttemptFailure | None:
        return classify_error(exc)


@dataclass
class _ToolCallParts:
    call_id: str = ""
    name: str = ""
    arguments: str = ""


async def _stream_once(client: openai.AsyncOpenAI, content: bytes, receiver: GenerationReceiver) -> GenerationResult:
    relay = _DeltaRelay(receiver)
    usage: Usage | None = None
    served_model: str | None = None
    finish_reason: str | None = None
    stream = await client.post(
        "/chat/completions",
        cast_to=ChatCompletion,
        content=content,
        stream=True,
        stream_cls=openai.AsyncStream[ChatCompletionChunk],
    )
    chunks = 0
    async with stream:
        async for chunk in stream:
            chunks += 1
            served_model = getattr(chunk, "model", None) or served_model
            if getattr(chunk, "usage", None) is not None:
                usage = usage_of(chunk.usage)
            for choice in chunk.choices or []:
                await relay.delta(choice.delta)
                finish_reason = getattr(choice, "finish_reason", None) or finish_reason
    if chunks == 0:
        raise EmptyReply("the server answered with an empty stream")
    if finish_reason is None and usage is None:
        # Neither the last choice chunk nor the usage chunk came: the body ended early.
        raise StreamEndedEarly("the stream ended before the completion did (no finish_reason)")
    await relay.finish()
    return GenerationResult(
        usage=usage or Usage(available=False),
        model=served_model,
        finish_reason=neutral_finish_reason(finish_reason, bool(relay.tool_calls)),
        provider_finish_reason=finish_reason,
    )


async def _create_once(client: openai.AsyncOpenAI, content: bytes, receiver: GenerationReceiver) -> GenerationResult:
    """``streaming: false``: one request; the finished message is replayed as if it had streamed."""
    completion = await client.post("/chat/completions", cast_to=ChatCompletion, content=content)
    relay = _DeltaRelay(receiver)
    choice = completion.choices[0] if completion.choices else None
    if choice is not None:
        await relay.delta(choice.message)
    await relay.finish()
    finish_reason = getattr(choice, "finish_reason", None)
    usage = getattr(completion, "usage", None)
    return GenerationResult(
        usage=usage_of(usage) if usage is not None else Usage(available=False),
        model=getattr(completion, "model", None),
        finish_reason=neutral_finish_reason(finish_reason, bool(relay.tool_calls)),
        provider_finish_reason=finish_reason,
    )


class StreamEndedEarly(Exception):
    """The response body ended before the completion did."""


def neutral_finish_reason(reason: str | None, called_tools: bool) -> FinishReason:
    """``finish_reason`` of chat completions in provider-neutral terms.

    Some local servers say ``stop`` (or nothing) after tool calls; what counts is that tools were called.
    """
    if reason in (None, "stop") and called_tools:
        return "tool_use"
    if reason is None:
        return "unknown"
    return FINISH_REASONS.get(reason, "unknown")


class _DeltaRelay:
    """Text and reasoning deltas as alternating segments; tool-call fragments collected by index."""

    def __init__(self, receiver: GenerationReceiver) -> None:
        self.receiver = receiver
        self.open: str | None = None
        self.tool_calls: dict[int, _ToolCallParts] = {}

    async def delta(self, delta: Any) -> None:
        if delta is None:
            return
        reasoning = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
        if isinstance(reasoning, str) and reasoning:
            await self._switch_to("thinking")
            await self.receiver.thinking_chunk(reasoning)
        content = getattr(delta, "content", None)
        if isinstance(content, str) and content:
            await self._switch_to("saying")  # closes thinking first: segments never overlap
            await self.receiver.saying_chunk(content)
        for fragment in getattr(delta, "tool_calls", None) or []:
            index = getattr(fragment, "index", None)
            if index is None:  # some servers omit it: a fragment with an id starts a new call
                index = len(self.tool_calls) if fragment.id or not self.tool_calls else max(self.tool_calls)
            parts = self.tool_calls.setdefault(int(index), _ToolCallParts())
            parts.call_id = parts.call_id or (fragment.id or "")
            function = fragment.function
            if function is not None:
                # Names arrive whole (some servers repeat them in every fragment); arguments stream.
                parts.name = parts.name or (function.name or "")
                parts.arguments += function.arguments or ""

    async def _switch_to(self, kind: str) -> None:
        if self.open == kind:
            return
        await self._close_segment()
        if kind == "thinking":
            await self.receiver.thinking_start()
        else:
            await self.receiver.saying_start()
        self.open = kind

    async def _close_segment(self) -> None:
        if self.open == "thinking":
            await self.receiver.thinking_finish(None)
        elif self.open == "saying":
            await self.receiver.saying_finish()
        self.open = None

    async def finish(self) -> None:
        await self._close_segment()
        for index in sorted(self.tool_calls):
            parts = self.tool_calls[index]
            # Some local servers omit ids; the next turn needs one to pair the result with the call.
            call_id = parts.call_id or f"call_{index}"
            await self.receiver.func_call(call_id, parts.name, parts.arguments or "{}")


def usage_of(usage: Any) -> Usage:
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    written = int(getattr(details, "cache_write_tokens", 0) or 0) if details is not None else 0
    write_details = getattr(details, "cache_write_tokens_details", None) if details is not None else None
    long_writes = int(getattr(write_details, "ttl_12h_tokens", 0) or 0) if write_details is not None else 0
    output_details = getattr(usage, "completion_tokens_details", None)
    reasoning = int(getattr(output_details, "reasoning_tokens", 0) or 0) if output_details is not None else 0
    # OpenAI counts cached and cache-written tokens inside prompt_tokens; Usage.input_tokens excludes them.
    return Usage(
        input_tokens=max(prompt - cached - written, 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cache_read_tokens=cached,
        cache_write_tokens=written,
        cache_write_long_tokens=long_writes,
        reasoning_tokens=reasoning,
    )


def classify_error(exc: Exception) -> AttemptFailure | None:
    if isinstance(exc, StreamEndedEarly | EmptyReply):
        return AttemptFailure(None, str(exc))
    if isinstance(exc, openai.APIStatusError):
        detail = _error_message(exc.body) or exc.message
        billing = is_billing_error((exc.code, exc.type), detail)
        return AttemptFailure(exc.status_code, detail, retry_after_seconds(exc.response.headers), billing=billing)
    if isinstance(exc, openai.APIConnectionError):
        return connection_failure(exc)
    if isinstance(exc, openai.APIError):
        # `data: {"error": …}` inside a 200 stream: retriable if nothing was streamed yet (unless billing).
        billing = is_billing_error((exc.code, exc.type), exc.message)
        return AttemptFailure(None, f"error in stream: {exc.message}", billing=billing)
    if isinstance(exc, httpx2.TransportError):
        return connection_failure(exc)
    return None


def _error_message(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return None


# ---------------------------------------------------------------- request


def request_extra(request: GenerationRequest, base_url: str) -> dict[str, Any]:
    """The tools and member parameters of one generation.

    Parameters go in ``extra_body`` unchanged, so a server-specific knob (vLLM's ``top_k``) works too.
    """
    extra = merged_params(request.model_params, "openai-compatible")
    server_specific = extra.pop("extra_body", None)
    if isinstance(server_specific, dict):  # `dominds check` reports anything else
        extra.update(server_specific)
    if "max_tokens" in extra and urlparse(base_url).hostname == "api.openai.com":
        # OpenAI's current models refuse `max_tokens`; local servers do not all know its successor.
        extra.setdefault("max_completion_tokens", extra.pop("max_tokens"))
    if request.tools:
        extra["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in request.tools
        ]
    return extra


def reasoning_field(pass_back: object) -> str | None:
    """The assistant-message field reasoning is carried back in (``reasoning_pass_back`` of the provider in
    llm.yaml: ``true`` = ``reasoning_content``, a string = that field), or None (off, the default)."""
    if pass_back is True:
        return "reasoning_content"
    return pass_back if isinstance(pass_back, str) and pass_back else None


def to_openai_messages(
    system_prompt: str, messages: list[ChatMessage], reasoning_field: str | None = None
) -> list[dict[str, Any]]:
    """Neutral messages as chat-completions messages, the system prompt first (the whole request at once;
    generators convert per new message, ``message_reuse.py``, to the same messages)."""
    system = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return system + chat_piece(messages, CallIds(), reasoning_field).outputs


def chat_piece(messages: list[ChatMessage], calls: CallIds, reasoning_field: str | None) -> Piece:
    """A run of neutral messages as chat-completions messages.

    Consecutive user texts and consecutive assistant texts are merged: several chat templates (vLLM,
    llama.cpp) refuse two turns of the same role in a row. Thinking is not sent back, except (opt-in per
    provider, ``reasoning_field``) on an assistant message that made tool calls: thinking models served
    over Chat Completions (DeepSeek, Kimi, MiniMax, …) expect their reasoning back there, while other
    servers reject the field.
    """
    out: list[dict[str, Any]] = []
    reasoning: dict[int, list[str]] = {}
    if reasoning_field is not None:
        for message in messages:
            if message.kind == "thinking" and message.genseq is not None and message.content:
                reasoning.setdefault(message.genseq, []).append(message.content)
    tool_images: list[ImagePart] = []
    """Images of the tool results just sent: a tool message holds text only, so they follow as a user message."""
    for message in group_tool_turns(messages, calls):
        if tool_images and message.kind != "tool_result":
            out.append(_images_message(tool_images))
            tool_images = []
        last = out[-1] if out else None
        if message.kind == "thinking":
            continue
        if message.kind == "tool_call":
            call = {
                "id": message.tool_call_id or "call",
                "type": "function",
                "function": {
                    "name": message.tool_name or "",
                    "arguments": _arguments_text(message.arguments),
                },
            }
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                last = {"role": "assistant", "content": None, "tool_calls": [call]}
                out.append(last)
            thought = reasoning.pop(message.genseq, None) if message.genseq is not None else None
            if reasoning_field is not None and thought:
                last[reasoning_field] = "\n\n".join(thought)
        elif message.kind == "tool_result":
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id or "call", "content": message.content}
            )
            tool_images += message.images
        elif not message.content.strip():
            continue
        elif message.images and message.role == "user":
            parts = [{"type": "text", "text": message.content}, *_image_parts(message.images)]
            out.append({"role": "user", "content": parts})
        elif (
            last is not None
            and last["role"] == message.role
            and "tool_calls" not in last
            and isinstance(last["content"], str)
        ):
            last["content"] += "\n\n" + message.content
        else:
            out.append({"role": message.role, "content": message.content})
    if tool_images:
        out.append(_images_message(tool_images))
    return Piece(out)


def _image_parts(images: tuple[ImagePart, ...] | list[ImagePart]) -> list[dict[str, Any]]:
    return [{"type": "image_url", "image_url": {"url": image.data_url()}} for image in images]


def _images_message(images: list[ImagePart]) -> dict[str, Any]:
    names = ", ".join(image.name for image in images if image.name)
    text = f"[The images the tool results above returned{': ' + names if names else ''}]"
    return {"role": "user", "content": [{"type": "text", "text": text}, *_image_parts(images)]}


def _arguments_text(arguments: dict[str, Any] | str | None) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments or {}, ensure_ascii=False)
