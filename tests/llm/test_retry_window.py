"""The retry window of unattended runs, overflow from every provider, and tool calls replayed so servers
accept them: each through the real SDKs against the fake servers (``dialects.py``), on a fake clock.

Bugs these pin (issue 32): an outage stopped the team after at most 7.5 s of backoff (5 attempts); a
``Retry-After: soon-ish`` raised ``ValueError`` (no retry, and the generation was recorded ``ok``);
llama.cpp's empty 200 stream after an oversized prompt was retried as "unavailable" instead of starting a
new course; vLLM's and Ollama's overflow wording was a plain rejection; a nameless call and duplicate
call ids were replayed as given and the server refused every later request of the dialog.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from dialects import HTTP_DIALECTS, Dialect, OpenAiChatDialect, Script, Text
from fake_servers import FakeLlmServer, RecordedRequest, RecordingReceiver, Reply, running_fake_server

from dominds.llm.base import (
    ChatMessage,
    ContextOverflow,
    GenerationRequest,
    LlmError,
    ProviderUnavailable,
    RetryNotice,
)
from dominds.llm.retry import RetryPolicy

KEY_VAR = "FAKE_WINDOW_KEY"


class FakeClock:
    """Monotonic time that moves only when the retry policy sleeps: a 30-minute window runs in no time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLlmServer]:
    monkeypatch.setenv(KEY_VAR, "sk-window-secret-0123456789")
    async with running_fake_server() as server:
        yield server


def request_for(dialect: Dialect, fake: FakeLlmServer, tmp_path: Path, **overrides: Any) -> GenerationRequest:
    config = {**dialect.provider_config(fake.url, KEY_VAR), **overrides.pop("provider_config", {})}
    return GenerationRequest(
        provider_key=f"fake-{dialect.name}",
        provider_config=config,
        model_key="fake-model",
        model_name="fake-model",
        system_prompt="You are @lead.",
        messages=overrides.pop("messages", [ChatMessage(role="user", content="hello")]),
        agent_id="lead",
        rtws_root=str(tmp_path),
        **overrides,
    )


async def generate(dialect: Dialect, request: GenerationRequest, clock: FakeClock, **policy: Any) -> Any:
    generator = dialect.generator(RetryPolicy(sleep=clock.sleep, clock=clock, jitter=lambda: 1.0, **policy))
    receiver = RecordingReceiver()
    try:
        return await generator.generate(request, receiver), receiver
    except LlmError as exc:
        return exc, receiver
    finally:
        await generator.aclose()  # type: ignore[attr-defined]


http_dialects = pytest.mark.parametrize("dialect", HTTP_DIALECTS, ids=[d.name for d in HTTP_DIALECTS])


@http_dialects
async def test_a_30_s_storm_of_529_is_waited_out_without_a_human(
    dialect: Dialect, fake: FakeLlmServer, tmp_path: Path
) -> None:
    """Bug: five attempts (≤ 7.5 s of backoff) and the dialog waited for a human. Now the default window
    (30 minutes) outlasts a 30-second overload, each wait announced as "attempt n, next in s, reason"."""
    clock = FakeClock()

    def storm(_: RecordedRequest) -> Reply:
        if clock.now < 30.0:
            return dialect.error(529, "Overloaded")
        return dialect.reply(Script((Text("back again"),)))

    fake.responder = storm
    notices: list[RetryNotice] = []
    resumed: list[float] = []

    async def on_retry(notice: RetryNotice | None) -> None:
        if notice is None:
            resumed.append(clock.now)
        else:
            notices.append(notice)

    result, receiver = await generate(dialect, request_for(dialect, fake, tmp_path, on_retry=on_retry), clock)
    assert not isinstance(result, LlmError), result
    assert receiver.text("saying") == "back again" and clock.now >= 30.0
    assert len(fake.requests) == len(notices) + 1 > 5, "more attempts than the old budget of 5"
    assert [n.attempt for n in notices] == list(range(2, len(notices) + 2))
    assert all("529" in n.reason and n.wait_s > 0 for n in notices)
    assert max(clock.waits) <= RetryPolicy().max_delay
    assert len(resumed) == len(notices), "each wait's end is told too (the dialog shows proceeding again)"


@http_dialects
async def test_the_window_is_configured_per_provider_and_ends_as_unavailable(
    dialect: Dialect, fake: FakeLlmServer, tmp_path: Path
) -> None:
    """``retry: {window_s, max_delay_s}`` of the provider (``.minds/llm.yaml``) bounds the waiting."""
    clock = FakeClock()
    fake.responder = lambda _: dialect.error(503, "down for maintenance")
    request = request_for(dialect, fake, tmp_path, provider_config={"retry": {"window_s": 40, "max_delay_s": 8}})
    outcome, receiver = await generate(dialect, request, clock)
    assert isinstance(outcome, ProviderUnavailable), outcome
    assert clock.now == pytest.approx(40.0) and max(clock.waits) <= 8.0
    assert "503" in str(outcome) and f"after {len(fake.requests)} attempts over 40 s" in str(outcome)
    assert receiver.events == []


@http_dialects
@pytest.mark.parametrize("header", ["soon-ish", "1.5s", "-3", "nan"])
async def test_an_invalid_retry_after_is_ignored_with_a_log_line_and_retried(
    dialect: Dialect, header: str, fake: FakeLlmServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Bug: ``Retry-After: soon-ish`` raised ValueError in ``retry.py``: no retry, an internal error."""
    clock = FakeClock()
    fake.queue(dialect.error(429, "slow down", {"retry-after": header}), dialect.reply(Script((Text("ok"),))))
    result, receiver = await generate(dialect, request_for(dialect, fake, tmp_path), clock, base_delay=2.0)
    assert not isinstance(result, LlmError), result
    assert receiver.text("saying") == "ok" and clock.waits == [2.0], "the backoff's own wait, not the header"
    assert any("ignoring a retry-after header" in r.getMessage() and header in r.getMessage() for r in caplog.records)


@http_dialects
async def test_a_valid_retry_after_is_honoured_within_the_window(dialect: Dialect, fake: FakeLlmServer, tmp_path: Path) -> None:
    clock = FakeClock()
    fake.queue(dialect.error(429, "slow down", {"retry-after": "90"}), dialect.reply(Script((Text("ok"),))))
    result, _ = await generate(dialect, request_for(dialect, fake, tmp_path), clock)
    assert not isinstance(result, LlmError) and clock.waits == [90.0]


# ---------------------------------------------------------------- overflow


LOCAL_SERVER_OVERFLOWS = {
    "vllm-400": Reply(status=400, body={"object": "error", "type": "BadRequestError", "code": 400, "message":
                      "The decoder prompt (length 9210) is longer than the maximum model length of 8192."}),
    "vllm-400-old": Reply(status=400, body={"object": "error", "type": "BadRequestError", "code": 400, "message":
                          "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}),
    "ollama-400": Reply(status=400, body={"error": {"message": "prompt too long; exceeded max context length by 412 "
                                                    "tokens", "type": "api_error"}}),
    "llama-cpp-400": Reply(status=400, body={"error": {"code": 400, "type": "exceed_context_size_error", "message":
                           "the request exceeds the available context size, try increasing it"}}),
    "llama-cpp-500": Reply(status=500, body={"error": {"code": 500, "type": "server_error", "message":
                           "the request exceeds the available context size, try increasing it"}}),
    "llama-cpp-in-stream": Reply(frames=["data: " + json.dumps({"error": {"code": 400, "type": "exceed_context_size_error",
                                         "message": "the request exceeds the available context size"}}) + "\n\n"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(LOCAL_SERVER_OVERFLOWS))
async def test_local_servers_overflow_wording_is_a_context_overflow(case: str, fake: FakeLlmServer, tmp_path: Path) -> None:
    """Each local server's own words for "the prompt is longer than the window", whatever the status,
    take the new-course path (``ContextOverflow``), never the retry path."""
    dialect = OpenAiChatDialect()
    clock = FakeClock()
    fake.queue(LOCAL_SERVER_OVERFLOWS[case])
    outcome, _ = await generate(dialect, request_for(dialect, fake, tmp_path), clock)
    assert isinstance(outcome, ContextOverflow), outcome
    assert len(fake.requests) == 1 and clock.waits == [], "not retried"


def empty_stream() -> Reply:
    """What llama.cpp's server answers to a prompt longer than its window: 200, an event stream, nothing in it."""
    return Reply(frames=[""])


@http_dialects
async def test_an_empty_200_stream_after_an_oversized_prompt_is_a_context_overflow(
    dialect: Dialect, fake: FakeLlmServer, tmp_path: Path
) -> None:
    clock = FakeClock()
    fake.queue(empty_stream())
    big = [ChatMessage(role="user", content="word " * 8000)]  # ~10 000 tokens by the estimate
    request = request_for(dialect, fake, tmp_path, messages=big, model_info={"context_length": 4096})
    outcome, _ = await generate(dialect, request, clock)
    assert isinstance(outcome, ContextOverflow), outcome
    assert "4096" in str(outcome) and len(fake.requests) == 1 and clock.waits == []


@http_dialects
async def test_an_empty_200_stream_after_a_prompt_that_fits_is_retried(
    dialect: Dialect, fake: FakeLlmServer, tmp_path: Path
) -> None:
    """An empty reply to a small prompt is a server hiccup: retried, not mistaken for an overflow."""
    clock = FakeClock()
    fake.queue(empty_stream(), dialect.reply(Script((Text("there"),))))
    request = request_for(dialect, fake, tmp_path, model_info={"context_length": 4096})
    result, receiver = await generate(dialect, request, clock)
    assert not isinstance(result, LlmError), result
    assert receiver.text("saying") == "there" and len(fake.requests) == 2


# ---------------------------------------------------------------- tool calls replayed


def call(call_id: str | None, name: str, arguments: dict[str, Any] | str, genseq: int) -> ChatMessage:
    return ChatMessage(role="assistant", kind="tool_call", tool_call_id=call_id, tool_name=name, arguments=arguments, genseq=genseq)


def result(call_id: str | None, content: str, genseq: int) -> ChatMessage:
    return ChatMessage(role="tool", kind="tool_result", tool_call_id=call_id, content=content, genseq=genseq)


MALFORMED_HISTORY = [
    ChatMessage(role="user", content="list the files twice", genseq=1),
    call("call_0", "list_dir", {"path": "."}, 1),
    call("call_0", "list_dir", {"path": "src"}, 1),  # the same id twice in one reply
    result("call_0", "a.txt", 1),
    result("call_0", "main.py", 1),
    call("call_0", "", '{"path": "docs"}', 2),  # streamed with no function name
    result("call_0", "Tool '' not found.", 2),
    call("call_0", "read_file", '{"path": "a.txt"', 3),  # llama.cpp repeats call_0 in every reply; bad JSON
    result("call_0", "Invalid arguments: not JSON", 3),
    call(None, "read_file", {"path": "b.txt"}, 4),  # no id at all
    result(None, "bee", 4),
    ChatMessage(role="user", content="and now?", genseq=5),
]


@http_dialects
async def test_a_nameless_call_and_duplicate_ids_replay_into_a_request_the_server_accepts(
    dialect: Dialect, fake: FakeLlmServer, tmp_path: Path
) -> None:
    fake.strict_tool_history = True
    fake.queue(dialect.reply(Script((Text("fine"),))))
    request = request_for(dialect, fake, tmp_path, messages=MALFORMED_HISTORY)
    result_, receiver = await generate(dialect, request, FakeClock())
    assert not isinstance(result_, LlmError), result_
    assert receiver.text("saying") == "fine" and len(fake.requests) == 1
    sent = json.dumps(fake.requests[0].body)
    assert "removed from this conversation" in sent and "docs" in sent, "the model is told of the dropped call"
    assert "Tool '' not found." not in sent, "the nameless call's result goes with it"
    assert "raw_arguments" in sent and "main.py" in sent and "bee" in sent


def test_the_strict_fake_server_refuses_the_history_as_it_was_sent_before() -> None:
    """The check above is not vacuous: the history unsanitized is what a strict server refuses."""
    from fake_servers import tool_history_problems

    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}},
            {"id": "call_0", "type": "function", "function": {"name": "", "arguments": "{\"path\": "}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "a"},
    ]  # fmt: skip
    problems = tool_history_problems("/v1/chat/completions", {"messages": messages})
    assert any("empty function name" in p for p in problems)
    assert any("not unique" in p for p in problems) and any("not valid JSON" in p for p in problems)
