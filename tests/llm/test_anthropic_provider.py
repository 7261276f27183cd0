"""AnthropicGenerator through the real ``anthropic`` SDK against the fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fake_servers import (
    FakeLlmServer,
    RecordingReceiver,
    Reply,
    anthropic_error,
    anthropic_event,
    anthropic_frames,
    running_fake_server,
)

from dominds.llm.anthropic_provider import AnthropicGenerator
from dominds.llm.base import (
    ChatMessage,
    GenerationRequest,
    ProviderRejected,
    ProviderUnavailable,
    RealLlmForbidden,
    StreamBroken,
    ToolSpec,
)
from dominds.llm.retry import RetryPolicy

KEY_VAR = "FAKE_ANTHROPIC_KEY"
SECRET = "sk-ant-test-secret-0123456789"
REMINDER_TOOL = ToolSpec(
    "add_reminder", "Add a reminder", {"type": "object", "properties": {"content": {"type": "string"}}}
)


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLlmServer]:
    monkeypatch.setenv(KEY_VAR, SECRET)
    async with running_fake_server() as server:
        yield server


class Sleeps:
    """An injected sleep: records the waits, returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def generator(sleeps: Sleeps | None = None, attempts: int = 3) -> AnthropicGenerator:
    return AnthropicGenerator(
        RetryPolicy(attempts=attempts, base_delay=0.01, max_delay=0.04, sleep=sleeps or Sleeps())
    )


def request(fake: FakeLlmServer, messages: list[ChatMessage] | None = None, **kw: Any) -> GenerationRequest:
    config = {"apiType": "anthropic", "baseUrl": fake.url, "apiKeyEnvVar": KEY_VAR}
    return GenerationRequest(
        provider_key="fake-anthropic",
        provider_config=kw.pop("provider_config", config),
        model_key="fake-claude",
        model_name=kw.pop("model_name", "fake-claude"),
        system_prompt="You are @lead.",
        messages=messages or [ChatMessage(role="user", content="hello")],
        tools=[REMINDER_TOOL],
        **kw,
    )


THREE_BLOCKS: list[dict[str, Any]] = [
    {"thinking": "Let me think", "signature": "sig-1"},
    {"text": "Hello there"},
    {"tool_use": {"id": "toolu_1", "name": "add_reminder", "input": {"content": "buy milk"}}},
]


async def test_thinking_text_and_tool_use_are_streamed_in_order(fake: FakeLlmServer) -> None:
    fake.queue(Reply(frames=anthropic_frames(THREE_BLOCKS, cache_read=5, cache_write=3)))
    receiver = RecordingReceiver()
    result = await generator().generate(request(fake), receiver)
    assert receiver.kinds() == [
        "thinking_start", "thinking_finish", "saying_start", "saying_finish", "func_call",
    ]  # fmt: skip
    assert receiver.text("thinking") == "Let me think" and receiver.text("saying") == "Hello there"
    assert ("thinking_finish", {"signature": "sig-1"}) in receiver.events
    assert receiver.events[-1] == ("func_call", "toolu_1", "add_reminder", {"content": "buy milk"})
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        11,
        42,
        5,
        3,
    )
    assert usage.available and result.model == "fake-claude"
    sent = fake.requests[0]
    # SDK 2.x sends the key as a bearer token
    assert SECRET in (
        sent.headers.get("x-api-key"),
        sent.headers.get("authorization", "").removeprefix("Bearer "),
    )
    assert sent.body["system"] == [
        {"type": "text", "text": "You are @lead.", "cache_control": {"type": "ephemeral"}}
    ]
    assert sent.body["max_tokens"] == 8192 and sent.body["stream"] is True
    assert sent.body["tools"][0]["input_schema"] == REMINDER_TOOL.parameters


async def test_context_is_mapped_to_alternating_turns_with_signed_thinking(fake: FakeLlmServer) -> None:
    fake.queue(Reply(frames=anthropic_frames([{"text": "ok"}])))
    messages = [
        ChatMessage(role="assistant", content="[personal memory: a.md]\nlikes tea"),
        ChatMessage(role="user", content="remember two things", genseq=1),
        ChatMessage(
            role="assistant", kind="thinking", content="plan", provider_data={"signature": "s1"}, genseq=2
        ),
        ChatMessage(role="assistant", kind="thinking", content="from another provider", genseq=2),
        ChatMessage(role="assistant", content="On it.", genseq=2),
        ChatMessage(
            role="assistant",
            kind="tool_call",
            tool_call_id="c.1",
            tool_name="f",
            arguments={"a": 1},
            genseq=2,
        ),
        ChatMessage(role="tool", kind="tool_result", tool_call_id="c.1", content="done 1", genseq=2),
        ChatMessage(role="user", content="@coder provided response: built", genseq=2),
        ChatMessage(
            role="assistant",
            kind="tool_call",
            tool_call_id="c2",
            tool_name="f",
            arguments='{"a": 2}',
            genseq=2,
        ),
        ChatMessage(role="tool", kind="tool_result", tool_call_id="c2", content="", is_error=True, genseq=2),
        ChatMessage(role="user", content="next", genseq=3),
    ]
    await generator().generate(request(fake, messages), RecordingReceiver())
    turns = fake.requests[0].body["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert turns[0]["content"][0]["text"] == "(conversation start)"
    assert turns[3]["content"] == [
        {"type": "thinking", "thinking": "plan", "signature": "s1"},
        {"type": "text", "text": "On it."},
        {"type": "tool_use", "id": "c_1", "name": "f", "input": {"a": 1}},
        {"type": "tool_use", "id": "c2", "name": "f", "input": {"a": 2}},
    ]
    results, *texts = turns[4]["content"]
    assert results == {"type": "tool_result", "tool_use_id": "c_1", "content": "done 1", "is_error": False}
    assert (
        texts[0]["tool_use_id"] == "c2"
        and texts[0]["is_error"] is True
        and texts[0]["content"] == "(no output)"
    )
    assert [b["text"] for b in texts[1:]] == ["@coder provided response: built", "next"]


async def test_thinking_budget_and_sampling_params_reach_the_api(fake: FakeLlmServer) -> None:
    fake.queue(
        Reply(frames=anthropic_frames([{"text": "a"}])), Reply(frames=anthropic_frames([{"text": "b"}]))
    )
    params = {
        "max_tokens": 2000,
        "anthropic": {
            "thinking": {"budget_tokens": 4096},
            "top_k": 5,
            "temperature": 1,
            "stop_sequences": ["X"],
        },
    }
    await generator().generate(request(fake, model_params=params), RecordingReceiver())
    body = fake.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] == 4096 + 8192, "max_tokens must exceed the thinking budget"
    assert body["top_k"] == 5 and body["temperature"] == 1 and body["stop_sequences"] == ["X"]
    await generator().generate(
        request(fake, model_params={"thinking_budget": 1024, "max_tokens": 9000}), RecordingReceiver()
    )
    body = fake.requests[1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024} and body["max_tokens"] == 9000


async def test_429_is_retried_after_the_servers_retry_after(fake: FakeLlmServer) -> None:
    fake.queue(
        anthropic_error(429, "rate_limit_error", "slow down", headers={"retry-after": "3"}),
        Reply(frames=anthropic_frames([{"text": "finally"}])),
    )
    sleeps = Sleeps()
    receiver = RecordingReceiver()
    await generator(sleeps).generate(request(fake), receiver)
    assert sleeps.waits == [3.0]
    assert len(fake.requests) == 2 and receiver.text("saying") == "finally"


async def test_529_overload_exhausts_the_retries(fake: FakeLlmServer) -> None:
    fake.queue(*[anthropic_error(529, "overloaded_error", "Overloaded") for _ in range(3)])
    sleeps = Sleeps()
    with pytest.raises(ProviderUnavailable) as caught:
        await generator(sleeps, attempts=3).generate(request(fake), RecordingReceiver())
    assert "after 3 attempts" in str(caught.value) and "HTTP 529" in str(caught.value)
    assert len(fake.requests) == 3 and len(sleeps.waits) == 2
    assert all(0 <= wait <= 0.04 for wait in sleeps.waits)


async def test_401_names_the_key_variable_and_never_shows_the_key(fake: FakeLlmServer) -> None:
    fake.queue(anthropic_error(401, "authentication_error", f"invalid x-api-key {SECRET}"))
    with pytest.raises(ProviderRejected) as caught:
        await generator().generate(request(fake), RecordingReceiver())
    error = caught.value
    assert error.status == 401 and f"check {KEY_VAR}" in error.fix_hint
    assert SECRET not in str(error) and SECRET not in error.fix_hint and "[redacted]" in str(error)
    assert len(fake.requests) == 1, "a rejection is not retried"


async def test_unknown_model_says_where_to_fix_it(fake: FakeLlmServer) -> None:
    fake.queue(anthropic_error(404, "not_found_error", "model: claude-nope"))
    with pytest.raises(ProviderRejected) as caught:
        await generator().generate(request(fake, model_name="claude-nope"), RecordingReceiver())
    assert "model 'claude-nope' unknown to fake-anthropic" in str(caught.value)
    assert ".minds/llm.yaml" in caught.value.fix_hint and "`model`" in caught.value.fix_hint


async def test_missing_key_is_rejected_before_any_request(
    fake: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_VAR)
    with pytest.raises(ProviderRejected) as caught:
        await generator().generate(request(fake), RecordingReceiver())
    assert KEY_VAR in str(caught.value) and KEY_VAR in caught.value.fix_hint
    assert fake.requests == []


async def test_error_event_after_output_breaks_the_stream_without_retry(fake: FakeLlmServer) -> None:
    fake.queue(Reply(frames=anthropic_frames([{"text": "partial answer"}], error_after=1)))
    receiver = RecordingReceiver()
    with pytest.raises(StreamBroken) as caught:
        await generator().generate(request(fake), receiver)
    assert "overloaded_error" in str(caught.value)
    assert receiver.text("saying") == "partial answer" and len(fake.requests) == 1


async def test_error_event_before_any_output_is_retried(fake: FakeLlmServer) -> None:
    fake.queue(
        Reply(frames=anthropic_frames([{"text": "lost"}], error_after=0)),
        Reply(frames=anthropic_frames([{"text": "second try"}])),
    )
    receiver = RecordingReceiver()
    await generator().generate(request(fake), receiver)
    assert receiver.text("saying") == "second try" and len(fake.requests) == 2


async def test_connection_dropped_mid_stream_is_stream_broken(fake: FakeLlmServer) -> None:
    frames = anthropic_frames([{"text": "Hello there"}])
    fake.queue(Reply(frames=frames, drop_after=3))  # message_start, block start, first delta
    receiver = RecordingReceiver()
    with pytest.raises(StreamBroken):
        await generator().generate(request(fake), receiver)
    assert receiver.text("saying") == "Hello" and len(fake.requests) == 1


async def test_cancelling_the_generation_closes_the_connection(fake: FakeLlmServer) -> None:
    start = [
        anthropic_event({"type": "message_start", "message": {"content": [], "usage": {"input_tokens": 1}}}),
        anthropic_event(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        ),
    ]
    delta = anthropic_event(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "."}}
    )
    fake.queue(Reply(frames=start + [delta] * 200, delay_s=0.05))
    receiver = RecordingReceiver()
    task = asyncio.create_task(generator().generate(request(fake), receiver))
    await asyncio.wait_for(receiver.first_event.wait(), 5)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    disconnected_at = await fake.first_disconnect()
    assert disconnected_at is not None and disconnected_at - cancelled_at < 1.0
    assert len(receiver.events) < 50, "the stream stopped long before its end"


async def test_non_loopback_base_url_is_refused_in_tests() -> None:
    config = {"apiType": "anthropic", "baseUrl": "https://api.anthropic.com", "apiKeyEnvVar": KEY_VAR}
    fake = FakeLlmServer()
    with pytest.raises(RealLlmForbidden):
        await generator().generate(request(fake, provider_config=config), RecordingReceiver())
