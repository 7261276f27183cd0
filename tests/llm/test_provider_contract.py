"""The provider contract: every generator, the same cases, over a fake server replaying realistic SSE.

Generators: ``anthropic`` (Messages API), ``openai-chat`` (Chat Completions, for OpenAI-compatible
servers), ``openai-responses`` (OpenAI's Responses API), and ``scripted`` where a case applies to it (it
has no HTTP, signatures or retries). Each runs through its real SDK against ``fake_servers.py`` on
127.0.0.1; ``dialects.py`` renders one neutral script in each wire format. This file replaces the
near-copied per-provider test files; what is specific to one API (how it maps a context, cache
breakpoints, parameters) is in ``test_provider_requests.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from dialects import (
    DIALECTS,
    HTTP_DIALECTS,
    Dialect,
    Redacted,
    Script,
    ScriptedDialect,
    ScriptUsage,
    Text,
    Thinking,
    Tool,
)
from fake_servers import FakeLlmServer, RecordingReceiver, running_fake_server

from dominds.llm.base import (
    ChatMessage,
    ContextOverflow,
    GenerationRequest,
    LlmError,
    ProviderRejected,
    ProviderUnavailable,
    RealLlmForbidden,
    StreamBroken,
    ToolSpec,
)
from dominds.llm.retry import RetryPolicy

KEY_VAR = "FAKE_CONTRACT_KEY"
SECRET = "sk-contract-secret-0123456789"
TOOL = ToolSpec("add_reminder", "Add a reminder", {"type": "object", "properties": {"content": {"type": "string"}}})


class Sleeps:
    """An injected sleep: records the waits, returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLlmServer]:
    monkeypatch.setenv(KEY_VAR, SECRET)
    async with running_fake_server() as server:
        yield server


def by_name(dialects: list[Dialect]) -> Any:
    """Run the test once per dialect (the ``harness`` fixture is built for it)."""
    return pytest.mark.parametrize("harness", dialects, ids=[d.name for d in dialects], indirect=True)


def all_dialects(exclude: tuple[str, ...] = ()) -> Any:
    return by_name([d for d in DIALECTS if d.name not in exclude])


def http_dialects() -> Any:
    return by_name(HTTP_DIALECTS)


class Harness:
    def __init__(self, dialect: Dialect, fake: FakeLlmServer, root: Path) -> None:
        self.dialect, self.fake, self.root = dialect, fake, root
        self.sleeps = Sleeps()

    def request(self, *, streaming: bool = True, **overrides: Any) -> GenerationRequest:
        return GenerationRequest(
            provider_key=f"fake-{self.dialect.name}",
            provider_config=overrides.pop("provider_config", self.dialect.provider_config(self.fake.url, KEY_VAR)),
            model_key="fake-model",
            model_name=overrides.pop("model_name", "fake-model"),
            system_prompt="You are @lead.",
            messages=overrides.pop("messages", [ChatMessage(role="user", content="hello")]),
            tools=[TOOL],
            agent_id="lead",
            rtws_root=str(self.root),
            streaming=streaming,
            **overrides,
        )

    async def run(self, script: Script, *, streaming: bool = True, attempts: int = 3, **overrides: Any) -> Any:
        """Serve ``script`` once and generate; returns (result or the exception, receiver)."""
        request = self.request(streaming=streaming, **overrides)
        if isinstance(self.dialect, ScriptedDialect):
            self.dialect.install(request, script)
        else:
            self.fake.queue(self.dialect.reply(script) if streaming else self.dialect.json_reply(script))
        return await self.generate(request, attempts=attempts)

    async def generate(self, request: GenerationRequest, *, attempts: int = 3) -> Any:
        receiver = RecordingReceiver()
        policy = RetryPolicy(attempts=attempts, base_delay=0.01, max_delay=0.04, sleep=self.sleeps)
        generator = self.dialect.generator(policy)
        try:
            outcome: Any = await generator.generate(request, receiver)
        except LlmError as exc:
            outcome = exc
        finally:
            close = getattr(generator, "aclose", None)
            if close is not None:
                await close()
        return outcome, receiver


@pytest.fixture
def harness(request: pytest.FixtureRequest, fake: FakeLlmServer, tmp_path: Path) -> Harness:
    return Harness(request.param, fake, tmp_path)


THINK_TEXT_TOOL = Script(
    (
        Thinking("Let me think about it", "sig-1"),
        Text("Hello there, ünïcödé ✓"),
        Tool("call_1", "add_reminder", {"content": "buy milk — 牛奶"}),
    )
)


# ---------------------------------------------------------------- what streams


@all_dialects()
async def test_text(harness: Harness) -> None:
    result, receiver = await harness.run(Script((Text("Hello there, ünïcödé ✓"),)))
    assert receiver.kinds() == ["saying_start", "saying_finish"]
    assert receiver.text("saying") == "Hello there, ünïcödé ✓"
    assert result.finish_reason == "end_turn" and not result.partial
    assert (result.usage.input_tokens, result.usage.output_tokens) == (20, 9)


@all_dialects(exclude=("openai-chat",))
async def test_thinking_with_signature(harness: Harness) -> None:
    """Thinking is a thinking segment; its signature / reasoning item comes back as provider_data."""
    block = Thinking("Let me think about it", "sig-7")
    _, receiver = await harness.run(Script((block, Text("Done."))))
    assert receiver.kinds() == ["thinking_start", "thinking_finish", "saying_start", "saying_finish"]
    assert receiver.text("thinking") == "Let me think about it"
    assert ("thinking_finish", harness.dialect.thinking_data(block)) in receiver.events


@by_name([d for d in DIALECTS if d.name == "openai-chat"])
async def test_reasoning_deltas_of_chat_completions_are_thinking(harness: Harness) -> None:
    """Chat Completions has no signature: reasoning deltas are thinking with nothing to send back."""
    _, receiver = await harness.run(Script((Thinking("Let me think about it"), Text("Done."))))
    assert receiver.kinds() == ["thinking_start", "thinking_finish", "saying_start", "saying_finish"]
    assert receiver.text("thinking") == "Let me think about it" and ("thinking_finish", None) in receiver.events


@all_dialects()
async def test_tool_use_from_fragmented_json(harness: Harness) -> None:
    arguments = {"content": "buy milk — 牛奶", "nested": {"list": [1, 2, {"deep": "ünï"}]}}
    result, receiver = await harness.run(Script((Tool("call_9", "add_reminder", arguments),)))
    assert receiver.events[-1] == ("func_call", "call_9", "add_reminder", arguments)
    assert result.finish_reason == "tool_use"


@all_dialects()
async def test_interleaved_thinking_text_and_tool_blocks(harness: Harness) -> None:
    blocks = (
        Thinking("First thought", "s1"), Text("Step one."), Tool("c1", "add_reminder", {"content": "a"}),
        Thinking("Second thought", "s2"), Text("Step two."), Tool("c2", "add_reminder", {"content": "b"}),
    )  # fmt: skip
    _, receiver = await harness.run(Script(blocks))
    segments = ["thinking_start", "thinking_finish", "saying_start", "saying_finish"]
    calls = [e for e in receiver.events if e[0] == "func_call"]
    assert [c[1] for c in calls] == ["c1", "c2"]
    if harness.dialect.tools_at_end:
        assert receiver.kinds() == [*segments, *segments, "func_call", "func_call"]
    else:
        assert receiver.kinds() == [*segments, "func_call", *segments, "func_call"]
    assert receiver.text("thinking") == "First thoughtSecond thought"
    assert receiver.text("saying") == "Step one.Step two."


@by_name([d for d in DIALECTS if d.redacts])
async def test_redacted_thinking_is_kept_to_send_back(harness: Harness) -> None:
    block = Redacted("opaque-bytes==")
    _, receiver = await harness.run(Script((block, Text("Answer."))))
    assert receiver.kinds() == ["thinking_start", "thinking_finish", "saying_start", "saying_finish"]
    assert receiver.text("thinking") == ""
    assert ("thinking_finish", harness.dialect.thinking_data(block)) in receiver.events


@all_dialects()
@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
async def test_max_tokens_is_a_partial_reply(harness: Harness, streaming: bool) -> None:
    result, receiver = await harness.run(Script((Text("Once upon a ti"),), finish="max_tokens"), streaming=streaming)
    assert receiver.text("saying") == "Once upon a ti"
    assert result.finish_reason == "max_tokens" and result.partial
    assert result.provider_finish_reason is not None or harness.dialect.name == "scripted"


@all_dialects()
async def test_usage_with_cache_and_reasoning_tokens(harness: Harness) -> None:
    usage = ScriptUsage(input=100, output=50, cache_read=1000, cache_write=200, reasoning=30)
    result, _ = await harness.run(Script((Text("ok"),), usage=usage))
    got = result.usage
    assert (got.input_tokens, got.output_tokens, got.cache_read_tokens, got.cache_write_tokens) == (100, 50, 1000, 200)
    assert got.available and not got.partial
    if harness.dialect.reports_reasoning_tokens or harness.dialect.name == "scripted":
        assert got.reasoning_tokens == 30


@all_dialects()
async def test_streaming_false_sends_one_request_and_reports_the_same(harness: Harness) -> None:
    result, receiver = await harness.run(THINK_TEXT_TOOL, streaming=False)
    assert receiver.kinds() == ["thinking_start", "thinking_finish", "saying_start", "saying_finish", "func_call"]
    assert receiver.text("thinking") == "Let me think about it"
    assert receiver.text("saying") == "Hello there, ünïcödé ✓"
    assert receiver.events[-1] == ("func_call", "call_1", "add_reminder", {"content": "buy milk — 牛奶"})
    assert result.finish_reason == "tool_use"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (20, 9) and not result.usage.partial
    if harness.dialect.http:
        assert harness.fake.requests[0].body.get("stream") in (None, False)


# ---------------------------------------------------------------- retries before output


@http_dialects()
async def test_429_is_retried_after_the_servers_retry_after(harness: Harness) -> None:
    harness.fake.queue(harness.dialect.error(429, "slow down", {"retry-after": "3"}))
    result, receiver = await harness.run(Script((Text("finally"),)))
    assert harness.sleeps.waits == [3.0] and len(harness.fake.requests) == 2
    assert receiver.text("saying") == "finally" and result.finish_reason == "end_turn"


@http_dialects()
@pytest.mark.parametrize("status", [529, 500])
async def test_overload_and_server_errors_before_output_are_retried(harness: Harness, status: int) -> None:
    harness.fake.queue(harness.dialect.error(status, "Overloaded"))  # an HTTP error
    harness.fake.queue(harness.dialect.reply(Script((Text("lost"),), break_after=0)))  # an error event, no output yet
    result, receiver = await harness.run(Script((Text("third time"),)))
    assert receiver.text("saying") == "third time" and len(harness.fake.requests) == 3
    assert len(harness.sleeps.waits) == 2 and result.finish_reason == "end_turn"


@http_dialects()
async def test_retries_end_as_unavailable_with_the_last_error(harness: Harness) -> None:
    for _ in range(3):
        harness.fake.queue(harness.dialect.error(529, "Overloaded"))
    outcome, receiver = await harness.run(Script((Text("never"),)), attempts=3)
    harness.fake.replies.clear()
    assert isinstance(outcome, ProviderUnavailable) and "after 3 attempts" in str(outcome) and "529" in str(outcome)
    assert receiver.events == [] and len(harness.fake.requests) == 3


BILLING_CASES = [(d, case) for d in HTTP_DIALECTS for case in d.billing_errors()]


@pytest.mark.parametrize(
    ("harness", "case"), BILLING_CASES, ids=[f"{d.name}-{c}" for d, c in BILLING_CASES], indirect=["harness"]
)
async def test_an_account_out_of_credit_fails_at_once_with_the_reason(harness: Harness, case: str) -> None:
    """Bug: OpenAI's ``insufficient_quota`` and Anthropic's spend-limit errors come as HTTP 429 (or as an
    error inside the stream) and were retried like a rate limit — five attempts and a minute of backoff
    before "unavailable", which no wait can fix. They fail at once, saying it is billing and what to do."""
    harness.fake.queue(harness.dialect.billing_errors()[case])
    outcome, receiver = await harness.run(Script((Text("never"),)), attempts=5)
    harness.fake.replies.clear()
    assert isinstance(outcome, ProviderRejected), outcome
    assert len(harness.fake.requests) == 1 and harness.sleeps.waits == [], "not retried"
    assert "out of credit or over its spend limit" in str(outcome)
    assert "billing" in outcome.fix_hint and "model_params" not in outcome.fix_hint
    assert receiver.events == []


OVERFLOW_CASES = [(d, case) for d in HTTP_DIALECTS for case in d.context_overflow_errors()]


@pytest.mark.parametrize(
    ("harness", "case"), OVERFLOW_CASES, ids=[f"{d.name}-{c}" for d, c in OVERFLOW_CASES], indirect=["harness"]
)
async def test_a_prompt_longer_than_the_context_window_is_a_context_overflow(harness: Harness, case: str) -> None:
    """Bug: Anthropic's "prompt is too long" and OpenAI's ``context_length_exceeded`` were plain rejections
    whose hint pointed at ``model_params``; a resume sent the same context and failed again, for ever. They
    are a ``ContextOverflow`` (not retried), which the driver answers by starting a new course."""
    harness.fake.queue(harness.dialect.context_overflow_errors()[case])
    outcome, receiver = await harness.run(Script((Text("never"),)), attempts=5)
    harness.fake.replies.clear()
    assert isinstance(outcome, ContextOverflow), outcome
    assert len(harness.fake.requests) == 1 and harness.sleeps.waits == [], "not retried"
    assert "context window" in str(outcome) and "model_params" not in outcome.fix_hint
    assert receiver.events == []


@http_dialects()
async def test_a_plain_rate_limit_is_still_retried(harness: Harness) -> None:
    """The billing check looks at the error's code, not at the status: a 429 rate limit stays retriable."""
    harness.fake.queue(harness.dialect.error(429, "Rate limit reached for requests"))
    result, _ = await harness.run(Script((Text("ok"),)))
    assert len(harness.fake.requests) == 2 and result.finish_reason == "end_turn"


# ---------------------------------------------------------------- breaks after output


@http_dialects()
@pytest.mark.parametrize("how", ["error", "disconnect", "malformed"])
async def test_a_stream_broken_after_output_is_not_retried_and_keeps_the_partial(harness: Harness, how: str) -> None:
    script = Script((Thinking("Pondering deeply", "s1"), Text("Partial answer that goes on")), break_after=8, break_how=how)  # type: ignore[arg-type]
    outcome, receiver = await harness.run(script)
    assert isinstance(outcome, StreamBroken) and "broke after output began" in str(outcome)
    assert len(harness.fake.requests) == 1, "not retried once output began"
    assert receiver.text("thinking") == "Pondering deeply"
    saying = receiver.text("saying")
    assert saying and "Partial answer that goes on".startswith(saying) and saying != "Partial answer that goes on"
    assert receiver.events[-1][0] == "saying_chunk", "the open segment stays open: the driver keeps it as incomplete"
    if harness.dialect.partial_input_known:
        assert receiver.usage is not None and receiver.usage.input_tokens == 20 and receiver.usage.partial


@http_dialects()
@pytest.mark.parametrize("how", ["error", "disconnect", "malformed"])
async def test_a_stream_broken_mid_thinking_keeps_the_partial_thinking(harness: Harness, how: str) -> None:
    """The break comes in the third thinking delta: the thinking so far is kept, its segment left open."""
    script = Script((Thinking("Pondering very deeply", "s1"), Text("never shown")), break_after=3, break_how=how)  # type: ignore[arg-type]
    outcome, receiver = await harness.run(script)
    assert isinstance(outcome, StreamBroken) and len(harness.fake.requests) == 1
    assert receiver.text("thinking") == "Pondering" and receiver.text("saying") == ""
    assert receiver.kinds() == ["thinking_start"] and receiver.events[-1] == ("thinking_chunk", "ing")


@http_dialects()
async def test_a_body_that_ends_before_the_message_is_a_broken_stream(harness: Harness) -> None:
    """The body ends cleanly after the text but before the message says how it ended: not a finished reply."""
    outcome, receiver = await harness.run(Script((Text("Half a sentence and"),), break_after=7, break_how="eof"))
    assert isinstance(outcome, StreamBroken), outcome
    assert receiver.text("saying") == "Half a sentence and" and len(harness.fake.requests) == 1


# ---------------------------------------------------------------- stop


@all_dialects()
async def test_stop_cancels_the_http_stream(harness: Harness) -> None:
    script = Script((Text("." * 600),))
    request = harness.request()
    if isinstance(harness.dialect, ScriptedDialect):
        harness.dialect.install(request, script, delay_ms=20)
    else:
        reply = harness.dialect.reply(script)
        reply.delay_s = 0.02
        harness.fake.queue(reply)
    receiver = RecordingReceiver()
    generator = harness.dialect.generator(RetryPolicy(attempts=1))
    task = asyncio.create_task(generator.generate(request, receiver))
    await asyncio.wait_for(receiver.first_event.wait(), 10)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(receiver.text("saying")) < 600, "the stream stopped long before its end"
    if harness.dialect.http:
        disconnected_at = await harness.fake.first_disconnect()
        assert disconnected_at is not None and disconnected_at - cancelled_at < 1.0, "the server saw the hang-up"
    close = getattr(generator, "aclose", None)
    if close is not None:
        await close()


# ---------------------------------------------------------------- refusals


@http_dialects()
async def test_401_names_the_key_variable_and_never_shows_the_key(harness: Harness) -> None:
    harness.fake.queue(harness.dialect.error(401, f"invalid api key {SECRET}"))
    outcome, _ = await harness.generate(harness.request())
    assert isinstance(outcome, ProviderRejected) and outcome.status == 401 and f"check {KEY_VAR}" in outcome.fix_hint
    assert SECRET not in str(outcome) and "[redacted]" in str(outcome) and len(harness.fake.requests) == 1
    sent = harness.fake.requests[0].headers
    assert SECRET in (sent.get("x-api-key"), sent.get("authorization", "").removeprefix("Bearer "))


@http_dialects()
async def test_unknown_model_says_where_to_fix_it(harness: Harness) -> None:
    harness.fake.queue(harness.dialect.error(404, "model: nope-1 not found"))
    outcome, _ = await harness.generate(harness.request(model_name="nope-1"))
    assert isinstance(outcome, ProviderRejected) and "model 'nope-1' unknown" in str(outcome)
    assert ".minds/llm.yaml" in outcome.fix_hint


@http_dialects()
async def test_missing_key_is_rejected_before_any_request(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_VAR)
    outcome, _ = await harness.generate(harness.request())
    assert isinstance(outcome, ProviderRejected) and KEY_VAR in outcome.fix_hint and harness.fake.requests == []


@http_dialects()
async def test_a_keyless_server_gets_a_dummy_key(harness: Harness) -> None:
    harness.fake.queue(harness.dialect.reply(Script((Text("hi"),))))
    config = harness.dialect.provider_config(harness.fake.url, None)
    outcome, receiver = await harness.generate(harness.request(provider_config=config))
    assert receiver.text("saying") == "hi", outcome


@http_dialects()
async def test_non_loopback_base_url_is_refused_in_tests(harness: Harness) -> None:
    config = {**harness.dialect.provider_config("https://api.example.com", KEY_VAR)}
    outcome, _ = await harness.generate(harness.request(provider_config=config))
    assert isinstance(outcome, RealLlmForbidden)


@http_dialects()
async def test_one_sdk_client_serves_every_generation(harness: Harness) -> None:
    """One client (one connection pool) per provider endpoint and key, reused across generations."""
    generator = harness.dialect.generator(RetryPolicy(attempts=1))
    for text in ("one", "two"):
        harness.fake.queue(harness.dialect.reply(Script((Text(text),))))
        await generator.generate(harness.request(), RecordingReceiver())
    clients = generator.clients
    assert len(clients._clients) == 1
    await generator.aclose()
    assert [r.body["model"] for r in harness.fake.requests] == ["fake-model", "fake-model"]


@http_dialects()
async def test_the_http_transport_can_be_injected(harness: Harness) -> None:
    """Tests (or a proxy setup) can give the SDK clients their own HTTP layer: no socket is opened here."""
    reply = harness.dialect.reply(Script((Text("from the mock transport"),)))
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.url.path)
        body = "".join(reply.frames).encode()
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    generator = harness.dialect.generator(
        RetryPolicy(attempts=1), lambda: httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    )
    receiver = RecordingReceiver()
    await generator.generate(harness.request(), receiver)
    await generator.aclose()
    assert receiver.text("saying") == "from the mock transport"
    assert len(seen) == 1 and seen[0].startswith("/v1/") and harness.fake.requests == []
