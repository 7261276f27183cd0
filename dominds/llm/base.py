"""The generator protocol every provider implements, and the neutral message model.

A provider streams one generation into a ``GenerationReceiver``: thinking and saying segments
(``start → chunk* → finish``, never overlapping), function calls, and usage. The driver enforces the
no-overlap rule (DESIGN §4.6) on what the provider emits, so a buggy provider cannot corrupt a
transcript. Providers raise the typed errors below; the driver turns them into interruptions.

The finish contract: a generation that completes returns a ``GenerationResult`` saying *why* the model
stopped (``finish_reason``, provider-neutral) and whether the reply is cut (``partial``). One that
breaks after output began raises ``StreamBroken``; one that is stopped is cancelled. In both cases the
driver keeps what had streamed (the open segment is recorded as incomplete) and the usage the provider
reported so far through ``GenerationReceiver.usage_so_far`` (Anthropic knows the input tokens from
its first event).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from dominds.store.course_records import TRUNCATING_FINISH_REASONS, FinishReason, Usage


@dataclass(frozen=True)
class ImagePart:
    """An image the model sees with a message (a tool result's or a user's): base64 bytes and their type."""

    mime: str
    """``image/png``, ``image/jpeg``, …"""
    data: str
    """Base64 of the bytes."""
    name: str = ""
    """The dialog artifact it was read from."""

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{self.data}"


@dataclass(frozen=True)
class ChatMessage:
    """One provider-neutral context message."""

    role: Literal["user", "assistant", "tool"]
    kind: Literal["text", "thinking", "tool_call", "tool_result"] = "text"
    content: str = ""
    tool_call_id: str | None = None
    """tool_call / tool_result: the provider's call id."""
    tool_name: str | None = None
    arguments: dict[str, Any] | str | None = None
    """tool_call: the arguments."""
    provider_data: dict[str, Any] | None = None
    """thinking: opaque data the provider needs back (e.g. a signature)."""
    is_error: bool = False
    """tool_result: the call failed."""
    genseq: int | None = None
    """Generation that produced it (groups tool calls of one assistant turn)."""
    volatile: bool = False
    """Changes from one generation to the next (the reminders): providers never cache a prefix up to it."""
    runtime_note: bool = False
    """Written by the runtime, not by a person or a teammate (e.g. that the previous reply was cut)."""
    images: tuple[ImagePart, ...] = ()
    """user / tool_result: images sent with the text to a vision-capable model (``driver/images.py``); the
    text keeps the artifact's placeholder line, which is all a text-only model gets."""


@dataclass(frozen=True, slots=True)
class SharedRun:
    """What the context builder knows of a request's messages: ``messages[start : start + count]`` are
    ``run[:count]``, the same objects, where ``run`` is a list that only ever grows (a course's messages
    that can no longer change, ``driver/messages.py``).

    Two requests that name the same ``run`` at the same ``start``, and whose first ``start`` messages (the
    memory and Taskdoc messages) are equal, share their messages up to ``start`` + the smaller count,
    known without a pass over them. What a dialog's previous request converted, encoded or scanned is
    reused on that knowledge: each pass over its messages (a copy to compare them, a copy to keep them)
    cost a turn at 10,000 messages 0.1-0.2 ms on a cold cache, and there were eight
    (``tests/llm/test_message_reuse.py``)."""

    run: list[ChatMessage]
    start: int
    count: int

    def before(self, index: int) -> SharedRun:
        """The same claim for the messages before ``index`` only (the one at ``index`` was replaced)."""
        return SharedRun(self.run, self.start, max(0, min(self.count, index - self.start)))


def known_same_start(
    messages: list[ChatMessage], shared: SharedRun | None, earlier: list[ChatMessage], earlier_shared: SharedRun | None
) -> int:
    """How many messages at the start of ``messages`` are known to be those of an ``earlier`` request
    (the same objects or equal ones) from what the context builder said of both; 0 when it said nothing."""
    if shared is None or earlier_shared is None or shared.run is not earlier_shared.run or shared.start != earlier_shared.start:
        return 0
    start = shared.start
    if len(earlier) < start or (start and earlier[:start] != messages[:start]):  # a few messages, compared in C
        return 0
    return start + min(shared.count, earlier_shared.count)


@dataclass(frozen=True)
class ToolSpec:
    """A function tool as offered to the model."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class RetryNotice:
    """A retry about to wait: what the dialog shows while it waits (``retrying: attempt n, next in s``)."""

    attempt: int
    """The attempt that will run after the wait (2 = the first retry)."""
    wait_s: float
    reason: str
    """The failure being waited out (redacted)."""


@dataclass
class GenerationRequest:
    """Everything a provider needs for one generation."""

    provider_key: str
    provider_config: dict[str, Any]
    """The catalog entry (``apiType``, ``baseUrl``, ``apiKeyEnvVar``, …)."""
    model_key: str
    model_name: str
    system_prompt: str
    messages: list[ChatMessage]
    tools: list[ToolSpec] = field(default_factory=list)
    model_params: dict[str, Any] = field(default_factory=dict)
    agent_id: str = ""
    rtws_root: str = ""
    streaming: bool = True
    """False: one non-streamed request (the member's ``streaming: false``); the result is replayed to
    the receiver as if it had streamed."""
    model_info: dict[str, Any] = field(default_factory=dict)
    """The catalog's entry of the model (``context_length``, ``output_length``, and what it accepts:
    ``thinking``, ``effort``, ``sampling``); empty when unknown."""
    shared_run: SharedRun | None = None
    """What the context builder knows of ``messages`` (``SharedRun``); ``None``: nothing."""
    on_retry: Callable[[RetryNotice | None], Awaitable[None]] | None = None
    """Told before each wait of the retry window (the dialog shows "retrying: attempt n, next in s"), and
    ``None`` when the wait is over and the next attempt starts."""


class GenerationReceiver(Protocol):
    """Where a provider streams a generation."""

    async def thinking_start(self) -> None: ...
    async def thinking_chunk(self, text: str) -> None: ...
    async def thinking_finish(self, provider_data: dict[str, Any] | None = None) -> None: ...
    async def saying_start(self) -> None: ...
    async def saying_chunk(self, text: str) -> None: ...
    async def saying_finish(self) -> None: ...
    async def func_call(self, call_id: str, name: str, arguments_json: str) -> None: ...
    async def usage_so_far(self, usage: Usage) -> None:
        """The usage known at this point of the stream (the last call wins; ``usage.partial`` is set)."""


class ForwardingReceiver:
    """A receiver that passes a provider's stream on to ``inner`` unchanged and calls ``output_started``
    when output begins (thinking, saying or a function call); wrappers override only that hook."""

    def __init__(self, inner: GenerationReceiver) -> None:
        self.inner = inner

    def output_started(self) -> None:
        """Called at the start of each piece of output."""

    async def thinking_start(self) -> None:
        self.output_started()
        await self.inner.thinking_start()

    async def thinking_chunk(self, text: str) -> None:
        await self.inner.thinking_chunk(text)

    async def thinking_finish(self, provider_data: dict[str, Any] | None = None) -> None:
        await self.inner.thinking_finish(provider_data)

    async def saying_start(self) -> None:
        self.output_started()
        await self.inner.saying_start()

    async def saying_chunk(self, text: str) -> None:
        await self.inner.saying_chunk(text)

    async def saying_finish(self) -> None:
        await self.inner.saying_finish()

    async def func_call(self, call_id: str, name: str, arguments_json: str) -> None:
        self.output_started()
        await self.inner.func_call(call_id, name, arguments_json)

    async def usage_so_far(self, usage: Usage) -> None:
        await self.inner.usage_so_far(usage)


@dataclass
class GenerationResult:
    """What a provider returns after a generation that ran to its end."""

    usage: Usage
    model: str | None = None
    """The model the provider says it used."""
    finish_reason: FinishReason = "unknown"
    """Why the model stopped, in provider-neutral terms."""
    provider_finish_reason: str | None = None
    """The provider's own word for it (``end_turn``, ``length``, ``max_output_tokens``…), for messages."""

    @property
    def partial(self) -> bool:
        """The reply was cut at a size limit (the output limit or the context window)."""
        return self.finish_reason in TRUNCATING_FINISH_REASONS


class Generator(Protocol):
    """A provider implementation."""

    async def generate(
        self, request: GenerationRequest, receiver: GenerationReceiver
    ) -> GenerationResult: ...


class LlmError(Exception):
    """Base of provider errors."""


class ProviderRejected(LlmError):
    """A 4xx rejection (bad key, unknown model): retrying will not help; the user must fix something."""

    def __init__(self, message: str, *, status: int | None = None, fix_hint: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.fix_hint = fix_hint


class ContextOverflow(ProviderRejected):
    """The prompt is longer than the model's context window (Anthropic "prompt is too long", OpenAI
    ``context_length_exceeded``). Resending the same context cannot help; the driver starts a new course."""


class ProviderUnavailable(LlmError):
    """Retriable failures (429, 5xx, overload, connection) that outlasted the retry budget."""


class StreamBroken(LlmError):
    """The stream failed after content was already streamed (no retry is possible)."""


class StreamProtocolError(LlmError):
    """The provider broke the thinking/saying contract (overlap, unmatched finish)."""


class RealLlmForbidden(LlmError):
    """A real provider was called while ``DOMINDS_FORBID_REAL_LLM`` is set (tests)."""


def guard_real_llm(provider_key: str, base_url: str) -> None:
    """Refuse a real network provider in tests unless it points at loopback (a fake server)."""
    if os.environ.get("DOMINDS_FORBID_REAL_LLM") != "1":
        return
    if any(host in base_url for host in ("://127.0.0.1", "://localhost", "://[::1]")):
        return
    raise RealLlmForbidden(
        f"provider {provider_key!r} would call {base_url} but real LLM calls are forbidden in tests"
    )
