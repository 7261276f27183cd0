"""OpenAiCompatibleGenerator through the real ``openai`` SDK against the fake server on 127.0.0.1."""

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
    openai_chunk,
    openai_error,
    openai_frames,
    running_fake_server,
)

from dominds.llm.base import (
    ChatMessage,
    GenerationRequest,
    ProviderRejected,
    ProviderUnavailable,
    RealLlmForbidden,
    StreamBroken,
    ToolSpec,
)
from dominds.llm.openai_provider import KEYLESS_API_KEY, OpenAiCompatibleGenerator, request_body
from dominds.llm.retry import RetryPolicy

KEY_VAR = "FAKE_OPENAI_KEY"
SECRET = "sk-proj-test-secret-0123456789"
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


def generator(sleeps: Sleeps | None = None, attempts: int = 3) -> OpenAiCompatibleGenerator:
    return OpenAiCompatibleGenerator(
        RetryPolicy(attempts=attempts, base_delay=0.01, max_delay=0.04, sleep=sleeps or Sleeps())
    )


def request(fake: FakeLlmServer, messages: list[ChatMessage] | None = None, **kw: Any) -> GenerationRequest:
    config = {"apiType": "openai-compatible", "baseUrl": f"{fake.url}/v1", "apiKeyEnvVar": KEY_VAR}
    return GenerationRequest(
        provider_key="fake-openai",
        provider_config=kw.pop("provider_config", config),
        model_key="fake-gpt",
        model_name=kw.pop("model_name", "fake-gpt"),
        system_prompt="You are @lead.",
        messages=messages or [ChatMessage(role="user", content="hello")],
        tools=[REMINDER_TOOL],
        **kw,
    )


async def test_reasoning_text_and_tool_calls_are_streamed_in_order(fake: FakeLlmServer) -> None:
    calls = [
        ("call_a", "add_reminder", {"content": "buy milk"}),
        ("call_b", "add_reminder", {"content": "tea"}),
    ]
    fake.queue(
        Reply(
            frames=openai_frames(
                reasoning="Pondering", content="Hello world", tool_calls=calls, cached_tokens=5
            )
        )
    )
    receiver = RecordingReceiver()
    result = await generator().generate(request(fake), receiver)
    assert receiver.kinds() == [
        "thinking_start", "thinking_finish", "saying_start", "saying_finish", "func_call", "func_call",
    ]  # fmt: skip
    assert receiver.text("thinking") == "Pondering" and receiver.text("saying") == "Hello world"
    assert receiver.events[-2:] == [
        ("func_call", "call_a", "add_reminder", {"content": "buy milk"}),
        ("func_call", "call_b", "add_reminder", {"content": "tea"}),
    ]
    usage = result.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (13 - 5, 5, 7)
    assert result.model == "fake-gpt"
    sent = fake.requests[0]
    assert sent.path == "/v1/chat/completions" and sent.headers["authorization"] == f"Bearer {SECRET}"
    assert sent.body["stream"] is True and sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "add_reminder",
            "description": "Add a reminder",
            "parameters": REMINDER_TOOL.parameters,
        },
    }


async def test_ollama_reasoning_field_and_alternation_never_overlap(fake: FakeLlmServer) -> None:
    frames = [
        openai_chunk({"reasoning": "first thought"}),
        openai_chunk({"content": "Answer part one."}),
        openai_chunk({"reasoning": "second thought"}),
        openai_chunk({"content": "Part two."}),
        openai_chunk({}, "stop"),
        "data: [DONE]\n\n",
    ]
    fake.queue(Reply(frames=frames))
    receiver = RecordingReceiver()  # raises StreamProtocolError on any overlap
    result = await generator().generate(request(fake), receiver)
    assert receiver.kinds() == ["thinking_start", "thinking_finish", "saying_start", "saying_finish"] * 2
    assert receiver.text("thinking") == "first thoughtsecond thought"
    assert not result.usage.available, "a server that sends no usage chunk reports none"


async def test_whole_tool_calls_without_index_are_kept_apart(fake: FakeLlmServer) -> None:
    # Ollama-style: complete calls in one chunk, no `index`
    calls = [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"y": 2}'}},
    ]
    fake.queue(
        Reply(
            frames=[openai_chunk({"tool_calls": calls}), openai_chunk({}, "tool_calls"), "data: [DONE]\n\n"]
        )
    )
    receiver = RecordingReceiver()
    await generator().generate(request(fake), receiver)
    assert receiver.events == [("func_call", "a", "f", {"x": 1}), ("func_call", "b", "g", {"y": 2})]


async def test_context_maps_to_chat_messages(fake: FakeLlmServer) -> None:
    fake.queue(Reply(frames=openai_frames(content="ok")))
    messages = [
        ChatMessage(role="assistant", content="[personal memory: a.md]\nlikes tea"),
        ChatMessage(role="user", content="taskdoc"),
        ChatMessage(role="user", content="do it", genseq=1),
        ChatMessage(
            role="assistant", kind="thinking", content="hmm", provider_data={"signature": "s"}, genseq=2
        ),
        ChatMessage(role="assistant", content="Calling.", genseq=2),
        ChatMessage(
            role="assistant", kind="tool_call", tool_call_id="c1", tool_name="f", arguments={"a": 1}, genseq=2
        ),
        ChatMessage(role="tool", kind="tool_result", tool_call_id="c1", content="r1", genseq=2),
        ChatMessage(
            role="assistant",
            kind="tool_call",
            tool_call_id="c2",
            tool_name="f",
            arguments="not json",
            genseq=2,
        ),
        ChatMessage(role="tool", kind="tool_result", tool_call_id="c2", content="r2", genseq=2),
    ]
    await generator().generate(request(fake, messages), RecordingReceiver())
    sent = fake.requests[0].body["messages"]
    assert sent[0] == {"role": "system", "content": "You are @lead."}
    assert sent[2] == {"role": "user", "content": "taskdoc\n\ndo it"}, "consecutive user texts are merged"
    assert sent[3]["role"] == "assistant" and sent[3]["content"] == "Calling."
    assert [c["function"]["arguments"] for c in sent[3]["tool_calls"]] == ['{"a": 1}', "not json"]
    assert sent[4:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
    ]
    assert all("hmm" not in str(m.get("content")) for m in sent), "thinking is not sent back"


async def test_member_params_reach_the_body(fake: FakeLlmServer) -> None:
    fake.queue(Reply(frames=openai_frames(content="ok")))
    params = {"max_tokens": 300, "openai": {"temperature": 0.2, "top_k": 20}}
    await generator().generate(request(fake, model_params=params), RecordingReceiver())
    body = fake.requests[0].body
    assert (body["max_tokens"], body["temperature"], body["top_k"]) == (300, 0.2, 20)
    official = request_body(request(fake, model_params=params), "https://api.openai.com/v1")["extra"]
    assert official["max_completion_tokens"] == 300 and "max_tokens" not in official


async def test_keyless_server_gets_a_dummy_key(fake: FakeLlmServer) -> None:
    fake.queue(Reply(frames=openai_frames(content="local")))
    config = {"apiType": "openai-compatible", "baseUrl": f"{fake.url}/v1", "apiKeyEnvVar": None}
    receiver = RecordingReceiver()
    await generator().generate(request(fake, provider_config=config), receiver)
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEYLESS_API_KEY}"
    assert receiver.text("saying") == "local"


async def test_429_is_retried_after_the_servers_retry_after(fake: FakeLlmServer) -> None:
    fake.queue(
        openai_error(429, "Rate limit reached", headers={"retry-after": "2"}),
        Reply(frames=openai_frames(content="hi")),
    )
    sleeps = Sleeps()
    receiver = RecordingReceiver()
    await generator(sleeps).generate(request(fake), receiver)
    assert sleeps.waits == [2.0] and len(fake.requests) == 2 and receiver.text("saying") == "hi"


async def test_503_exhausts_the_retries(fake: FakeLlmServer) -> None:
    fake.queue(*[openai_error(503, "Service Unavailable") for _ in range(4)])
    sleeps = Sleeps()
    with pytest.raises(ProviderUnavailable) as caught:
        await generator(sleeps, attempts=4).generate(request(fake), RecordingReceiver())
    assert "after 4 attempts" in str(caught.value) and "HTTP 503: Service Unavailable" in str(caught.value)
    assert len(fake.requests) == 4 and len(sleeps.waits) == 3


async def test_a_server_that_is_not_running_is_retried_then_unavailable() -> None:
    # A port nobody listens on: what a user sees when Ollama is not started.
    async with running_fake_server() as stopped:
        url = stopped.url
    config = {"apiType": "openai-compatible", "baseUrl": f"{url}/v1", "apiKeyEnvVar": None}
    sleeps = Sleeps()
    with pytest.raises(ProviderUnavailable) as caught:
        await generator(sleeps).generate(request(stopped, provider_config=config), RecordingReceiver())
    assert f"({url}/v1) unavailable after 3 attempts" in str(caught.value) and "connection" in str(
        caught.value
    )
    assert len(sleeps.waits) == 2


async def test_401_names_the_key_variable_and_never_shows_the_key(fake: FakeLlmServer) -> None:
    fake.queue(openai_error(401, f"Incorrect API key provided: {SECRET}"))
    with pytest.raises(ProviderRejected) as caught:
        await generator().generate(request(fake), RecordingReceiver())
    error = caught.value
    assert error.status == 401 and f"check {KEY_VAR}" in error.fix_hint
    assert SECRET not in str(error) and "[redacted]" in str(error)
    assert len(fake.requests) == 1


async def test_unknown_model_in_a_400_says_where_to_fix_it(fake: FakeLlmServer) -> None:
    fake.queue(openai_error(400, "The model `gpt-nope` does not exist"))
    with pytest.raises(ProviderRejected) as caught:
        await generator().generate(request(fake, model_name="gpt-nope"), RecordingReceiver())
    assert "model 'gpt-nope' unknown to fake-openai" in str(caught.value)
    assert ".minds/llm.yaml" in caught.value.fix_hint


async def test_error_chunk_after_output_breaks_the_stream_without_retry(fake: FakeLlmServer) -> None:
    fake.queue(Reply(frames=openai_frames(content="partial", error_after_content=True)))
    receiver = RecordingReceiver()
    with pytest.raises(StreamBroken) as caught:
        await generator().generate(request(fake), receiver)
    assert "the fake server broke the stream" in str(caught.value)
    assert receiver.text("saying") == "partial" and len(fake.requests) == 1


async def test_error_chunk_before_output_is_retried(fake: FakeLlmServer) -> None:
    fake.queue(
        Reply(frames=openai_frames(error_after_content=True)), Reply(frames=openai_frames(content="again"))
    )
    receiver = RecordingReceiver()
    await generator().generate(request(fake), receiver)
    assert receiver.text("saying") == "again" and len(fake.requests) == 2


async def test_cancelling_the_generation_closes_the_connection(fake: FakeLlmServer) -> None:
    fake.queue(Reply(frames=[openai_chunk({"content": "."})] * 200, delay_s=0.05))
    receiver = RecordingReceiver()
    task = asyncio.create_task(generator().generate(request(fake), receiver))
    await asyncio.wait_for(receiver.first_event.wait(), 5)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    disconnected_at = await fake.first_disconnect()
    assert disconnected_at is not None and disconnected_at - cancelled_at < 1.0
    assert len(receiver.events) < 50


async def test_non_loopback_base_url_is_refused_in_tests() -> None:
    config = {"apiType": "openai-compatible", "baseUrl": "https://api.openai.com/v1", "apiKeyEnvVar": None}
    with pytest.raises(RealLlmForbidden):
        await generator().generate(request(FakeLlmServer(), provider_config=config), RecordingReceiver())
