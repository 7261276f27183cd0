"""The OpenAI Responses API generator (``apiType: openai-responses``), through the official ``openai`` SDK.

OpenAI's reasoning models carry their reasoning from one turn to the next as *reasoning items*. With
``store: false`` (nothing is kept on OpenAI's side; the course files are the memory) each item comes
back with its ``encrypted_content``; it is kept in the thought record's ``provider_data`` and sent back
in the next request's ``input``, before the function calls it led to. Reasoning summaries (or the
raw reasoning text some models stream) are shown as thinking; function calls arrive whole with
``response.output_item.done``. Usage reports cached and cache-written input tokens and reasoning tokens.

Chat Completions (``openai_provider.py``) stays for OpenAI-compatible servers (Ollama, vLLM, …).
"""

from __future__ import annotations

import json
from typing import Any

import openai
from openai.types.responses import Response, ResponseStreamEvent

from dominds.llm.base import ChatMessage, GenerationReceiver, GenerationRequest, GenerationResult, ImagePart
from dominds.llm.message_reuse import MessageReuse, Piece, json_array
from dominds.llm.openai_provider import OpenAiSdkGenerator, classify_error
from dominds.llm.params import merged_params
from dominds.llm.retry import (
    AttemptFailure,
    EmptyReply,
    RetryPolicy,
    is_billing_error,
    refuse_bad_params,
)
from dominds.llm.sdk_clients import HttpClientFactory, body_around
from dominds.llm.tool_history import CallIds, group_tool_turns
from dominds.store.course_records import FinishReason, Usage

PROVIDER_DATA_KEY = "openai_reasoning"
"""Where a reasoning item travels in a thought record's ``provider_data``."""
INCOMPLETE_REASONS: dict[str, FinishReason] = {
    "max_output_tokens": "max_tokens",
    "content_filter": "content_filter",
}
ERROR_CODE_STATUS = {
    "server_error": 500,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "server_is_overloaded": 529,
    "slow_down": 503,
    "invalid_prompt": 400,
    "context_length_exceeded": 400,
}
"""An error event (or a failed response) inside a 200 stream: the HTTP status its code stands for."""


class ResponseStreamFailed(Exception):
    """An ``error`` event or a ``response.failed`` inside the stream."""

    def __init__(self, code: str | None, message: str) -> None:
        super().__init__(f"{code or 'error'}: {message}")
        self.code = code


def _classify(exc: Exception) -> AttemptFailure | None:
    if isinstance(exc, ResponseStreamFailed):
        billing = is_billing_error((exc.code,), str(exc))
        return AttemptFailure(ERROR_CODE_STATUS.get(str(exc.code), 500), str(exc), billing=billing)
    return classify_error(exc)


class OpenAiResponsesGenerator(OpenAiSdkGenerator):
    """Generator for ``apiType: openai-responses`` providers (OpenAI's own API)."""

    def __init__(self, retry_policy: RetryPolicy | None = None, http_client: HttpClientFactory | None = None) -> None:
        super().__init__(retry_policy, http_client)
        self.items = MessageReuse(responses_piece)

    def prepare(self, request: GenerationRequest, base_url: str) -> bytes:
        """The request's body, streamed or not as the request says."""
        head = request_head(request)
        if request.streaming:
            head["stream"] = True
        return json_array(self.items.convert(request.messages, shared=request.shared_run).parts, around=body_around(head, "input"))

    async def stream_once(self, client: openai.AsyncOpenAI, prepared: bytes, receiver: GenerationReceiver) -> GenerationResult:
        return await _stream_once(client, prepared, receiver)

    async def create_once(self, client: openai.AsyncOpenAI, prepared: bytes, receiver: GenerationReceiver) -> GenerationResult:
        return await _create_once(client, prepared, receiver)

    def classify(self, exc: Exception) -> AttemptFailure | None:
        return _classify(exc)


async def _stream_once(client: openai.AsyncOpenAI, body: bytes, receiver: GenerationReceiver) -> GenerationResult:
    relay = _ItemRelay(receiver)
    stream = await client.post(
        "/responses",
        cast_to=Response,
        content=body,
        stream=True,
        stream_cls=openai.AsyncStream[ResponseStreamEvent],
    )
    events = 0
    async with stream:
        async for event in stream:
            events += 1
            await relay.handle(event)
    if events == 0:
        raise EmptyReply("the server answered with an empty stream")
    return relay.result()


async def _create_once(client: openai.AsyncOpenAI, body: bytes, receiver: GenerationReceiver) -> GenerationResult:
    """``streaming: false``: one request, then the finished items are replayed to the receiver."""
    response = await client.post("/responses", cast_to=Response, content=body)
    relay = _ItemRelay(receiver)
    for item in response.output or []:
        await relay.whole_item(item)
    await relay.finished(response)
    return relay.result()


class _ItemRelay:
    """Output items as receiver segments: reasoning → thinking, message → saying, function_call → a call."""

    def __init__(self, receiver: GenerationReceiver) -> None:
        self.receiver = receiver
        self.open: str | None = None
        self.called = False
        self.response: Any = None

    async def handle(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            await self._chunk("thinking", event.delta)
        elif kind == "response.reasoning_summary_part.added" and self.open == "thinking":
            await self.receiver.thinking_chunk("\n\n")  # summary parts are paragraphs
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            await self._chunk("saying", event.delta)
        elif kind == "response.output_item.done":
            await self._item_done(event.item)
        elif kind == "response.created" or kind == "response.in_progress":
            await self._usage(event.response, partial=True)
        elif kind in ("response.completed", "response.incomplete"):
            await self.finished(event.response)
        elif kind == "response.failed":
            error = getattr(event.response, "error", None)
            raise ResponseStreamFailed(getattr(error, "code", None), getattr(error, "message", None) or "response failed")
        elif kind == "error":
            raise ResponseStreamFailed(getattr(event, "code", None), getattr(event, "message", "") or "stream error")

    async def _chunk(self, kind: str, text: str) -> None:
        if not text:
            return
        if self.open != kind:
            await self._close()
            await (self.receiver.thinking_start() if kind == "thinking" else self.receiver.saying_start())
            self.open = kind
        await (self.receiver.thinking_chunk(text) if kind == "thinking" else self.receiver.saying_chunk(text))

    async def _close(self, provider_data: dict[str, Any] | None = None) -> None:
        if self.open == "thinking":
            await self.receiver.thinking_finish(provider_data)
        elif self.open == "saying":
            await self.receiver.saying_finish()
        self.open = None

    async def _item_done(self, item: Any) -> None:
        kind = getattr(item, "type", None)
        if kind == "reasoning":
            data = {PROVIDER_DATA_KEY: reasoning_item_data(item)}
            if self.open != "thinking":  # nothing was shown (no summary): the item must still be kept
                await self._close()
                await self.receiver.thinking_start()
                self.open = "thinking"
            await self._close(data)
        elif kind == "message":
            if self.open == "saying":
                await self._close()
        elif kind == "function_call":
            await self._close()
            self.called = True
            await self.receiver.func_call(item.call_id, item.name, item.arguments or "{}")

    async def whole_item(self, item: Any) -> None:
        """A finished item of a non-streamed response, as if it had streamed."""
        kind = getattr(item, "type", None)
        if kind == "reasoning":
            texts = [s.text for s in getattr(item, "summary", None) or []] or [
                c.text for c in getattr(item, "content", None) or []
            ]
            await self._chunk("thinking", "\n\n".join(t for t in texts if t))
        elif kind == "message":
            for part in getattr(item, "content", None) or []:
                await self._chunk("saying", getattr(part, "text", None) or getattr(part, "refusal", None) or "")
        await self._item_done(item)

    async def finished(self, response: Any) -> None:
        await self._close()
        self.response = response
        await self._usage(response, partial=False)

    async def _usage(self, response: Any, *, partial: bool) -> None:
        usage = getattr(response, "usage", None)
        if usage is not None:
            await self.receiver.usage_so_far(usage_of(usage, partial=partial))

    def result(self) -> GenerationResult:
        response = self.response
        if response is None:
            # The body ended without response.completed/incomplete: the stream was cut.
            raise ResponseStreamFailed(None, "the stream ended before the response was complete")
        status = getattr(response, "status", None)
        details = getattr(response, "incomplete_details", None)
        reason = getattr(details, "reason", None) if details is not None else None
        finish: FinishReason
        if status == "incomplete":
            finish = INCOMPLETE_REASONS.get(str(reason), "unknown")
        else:
            finish = "tool_use" if self.called else "end_turn"
        usage = getattr(response, "usage", None)
        return GenerationResult(
            usage=usage_of(usage) if usage is not None else Usage(available=False),
            model=getattr(response, "model", None),
            finish_reason=finish,
            provider_finish_reason=str(reason or status or ""),
        )


def reasoning_item_data(item: Any) -> dict[str, Any]:
    """What a reasoning item needs to be sent back: its id, encrypted content and summary."""
    data: dict[str, Any] = {"id": item.id, "summary": [s.text for s in getattr(item, "summary", None) or []]}
    if getattr(item, "encrypted_content", None):
        data["encrypted_content"] = item.encrypted_content
    return data


def usage_of(usage: Any, *, partial: bool = False) -> Usage:
    details = getattr(usage, "input_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    written = int(getattr(details, "cache_write_tokens", 0) or 0)
    write_details = getattr(details, "cache_write_tokens_details", None)
    long_writes = int(getattr(write_details, "ttl_12h_tokens", 0) or 0) if write_details is not None else 0
    output_details = getattr(usage, "output_tokens_details", None)
    # OpenAI counts cached and cache-written tokens inside input_tokens; Usage.input_tokens excludes them.
    return Usage(
        input_tokens=max(int(getattr(usage, "input_tokens", 0) or 0) - cached - written, 0),
        output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        cache_read_tokens=cached,
        cache_write_tokens=written,
        cache_write_long_tokens=long_writes,
        reasoning_tokens=int(getattr(output_details, "reasoning_tokens", 0) or 0),
        partial=partial,
    )


# ---------------------------------------------------------------- request


def request_head(request: GenerationRequest) -> dict[str, Any]:
    """The body of one generation's ``POST /responses`` but its input (posted as built:
    ``sdk_clients.body_around``)."""
    refuse_bad_params(request, "openai-responses")
    params = merged_params(request.model_params, "openai-responses")
    body: dict[str, Any] = {
        "model": request.model_name,
        "store": False,  # the course files are the memory; reasoning travels encrypted instead
    }
    if request.system_prompt.strip():
        body["instructions"] = request.system_prompt
    if request.tools:
        body["tools"] = [
            {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": False}
            for t in request.tools
        ]
    max_tokens = params.get("max_output_tokens") or params.get("max_tokens")
    if max_tokens:
        body["max_output_tokens"] = int(max_tokens)
    if request.model_info.get("reasoning", True) is not False:  # a catalog entry may say it does not reason
        reasoning: dict[str, Any] = {}
        if params.get("reasoning_effort"):
            reasoning["effort"] = params["reasoning_effort"]
        summary = params.get("reasoning_summary", "auto")
        if summary != "none":
            reasoning["summary"] = summary
        body["reasoning"] = reasoning
        body["include"] = ["reasoning.encrypted_content"]
    if params.get("verbosity"):
        body["text"] = {"verbosity": params["verbosity"]}
    for name in ("temperature", "top_p", "parallel_tool_calls", "service_tier", "prompt_cache_retention", "truncation"):
        if params.get(name) is not None:
            body[name] = params[name]
    if params.get("user"):
        body["safety_identifier"] = params["user"]
    # Requests of one dialog share a long prefix: a per-dialog key keeps them on the same cache.
    body["prompt_cache_key"] = params.get("prompt_cache_key") or f"dominds-{request.agent_id or 'agent'}"
    if isinstance(params.get("extra_body"), dict):
        body["extra_body"] = params["extra_body"]
    return body


def to_responses_input(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Neutral messages as Responses input items (the whole request at once; generators convert per new
    message, ``message_reuse.py``, to the same items)."""
    return responses_piece(messages, CallIds(), None).outputs


def responses_piece(messages: list[ChatMessage], calls: CallIds, key: object) -> Piece:
    """A run of neutral messages as Responses input items.

    Reasoning items are sent back only when they came from this API (another provider's thinking has no
    encrypted content to resume from, and the API would refuse it).
    """
    items: list[dict[str, Any]] = []
    tool_images: list[ImagePart] = []
    for message in group_tool_turns(messages, calls):
        if tool_images and message.kind != "tool_result":
            items.append(_images_item(tool_images))
            tool_images = []
        if message.kind == "thinking":
            data = (message.provider_data or {}).get(PROVIDER_DATA_KEY)
            if isinstance(data, dict) and data.get("id"):
                item: dict[str, Any] = {
                    "type": "reasoning",
                    "id": data["id"],
                    "summary": [{"type": "summary_text", "text": str(t)} for t in data.get("summary") or []],
                }
                if data.get("encrypted_content"):
                    item["encrypted_content"] = data["encrypted_content"]
                items.append(item)
        elif message.kind == "tool_call":
            arguments = message.arguments
            items.append(
                {
                    "type": "function_call",
                    "call_id": message.tool_call_id or "call",
                    "name": message.tool_name or "",
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False),
                }
            )
        elif message.kind == "tool_result":
            items.append(
                {"type": "function_call_output", "call_id": message.tool_call_id or "call", "output": message.content or "(no output)"}
            )
            tool_images += message.images
        elif message.images and message.role == "user" and message.content.strip():
            items.append({"role": "user", "content": [{"type": "input_text", "text": message.content}, *_image_inputs(message.images)]})
        elif message.content.strip():
            items.append({"role": message.role if message.role in ("user", "assistant") else "user", "content": message.content})
    if tool_images:
        items.append(_images_item(tool_images))
    return Piece(items)


def _image_inputs(images: tuple[ImagePart, ...] | list[ImagePart]) -> list[dict[str, Any]]:
    return [{"type": "input_image", "image_url": image.data_url()} for image in images]


def _images_item(images: list[ImagePart]) -> dict[str, Any]:
    """Images of the function outputs just sent, as the user message that follows them."""
    names = ", ".join(image.name for image in images if image.name)
    text = f"[The images the tool results above returned{': ' + names if names else ''}]"
    return {"role": "user", "content": [{"type": "input_text", "text": text}, *_image_inputs(images)]}
