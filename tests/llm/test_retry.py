"""The shared retry policy and wire helpers, without any SDK or server."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import pytest
from fake_servers import RecordingReceiver

from dominds.llm.base import (
    ChatMessage,
    GenerationReceiver,
    LlmError,
    ProviderRejected,
    ProviderUnavailable,
    StreamBroken,
    StreamProtocolError,
)
from dominds.llm.retry import (
    AttemptFailure,
    ProviderTarget,
    RetryPolicy,
    generate_with_retries,
    redact,
    retry_after_seconds,
)
from dominds.llm.tool_history import group_tool_turns

TARGET = ProviderTarget("prov", "m1", "http://127.0.0.1:1", "PROV_KEY", secret="sk-secret-value-123")


class Failing(Exception):
    """Stands for an SDK error; ``classify`` below reads its failure."""

    def __init__(self, failure: AttemptFailure) -> None:
        super().__init__(failure.detail)
        self.failure = failure


def classify(exc: Exception) -> AttemptFailure | None:
    return exc.failure if isinstance(exc, Failing) else None


class Script:
    """An attempt function failing with the given failures in turn, then returning "ok"."""

    def __init__(self, *failures: AttemptFailure, stream_first: bool = False) -> None:
        self.failures = list(failures)
        self.calls = 0
        self.stream_first = stream_first

    async def __call__(self, receiver: GenerationReceiver) -> str:
        self.calls += 1
        if self.stream_first:
            await receiver.saying_start()
            await receiver.saying_chunk("half")
        if self.failures:
            raise Failing(self.failures.pop(0))
        return "ok"


def policy(waits: list[float], attempts: int = 5, jitter: float = 0.5) -> RetryPolicy:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return RetryPolicy(attempts=attempts, base_delay=1.0, max_delay=4.0, sleep=sleep, jitter=lambda: jitter)


async def run(script: Script, waits: list[float], **kw: Any) -> str:
    return await generate_with_retries(
        script, RecordingReceiver(), classify=classify, target=TARGET, policy=policy(waits, **kw)
    )


@pytest.mark.parametrize("status", [None, 408, 429, 500, 502, 503, 529])
async def test_retriable_failures_are_retried_until_success(status: int | None) -> None:
    waits: list[float] = []
    script = Script(AttemptFailure(status, "busy"), AttemptFailure(status, "busy"))
    assert await run(script, waits) == "ok"
    assert script.calls == 3 and waits == [0.5, 1.0], "full jitter (0.5 here) of 1 s, 2 s"


async def test_backoff_is_capped_and_retry_after_wins_within_its_cap() -> None:
    waits: list[float] = []
    failures = [AttemptFailure(503, "x")] * 4 + [AttemptFailure(429, "x", retry_after=7.0)]
    failures += [AttemptFailure(429, "x", retry_after=10_000.0)]
    with pytest.raises(ProviderUnavailable):
        await run(Script(*failures), waits, attempts=6, jitter=1.0)
    assert waits == [1.0, 2.0, 4.0, 4.0, 7.0], "exponential, capped at max_delay; retry-after honoured"
    assert RetryPolicy(max_retry_after=60.0).delay(0, 10_000.0) == 60.0


async def test_exhausted_budget_reports_the_last_status() -> None:
    waits: list[float] = []
    with pytest.raises(ProviderUnavailable) as caught:
        await run(Script(*[AttemptFailure(529, "Overloaded")] * 3), waits, attempts=3)
    assert str(caught.value) == (
        "prov (http://127.0.0.1:1) unavailable after 3 attempts over 0 s; last error: HTTP 529: Overloaded"
    )
    assert len(waits) == 2


async def test_failure_after_output_is_stream_broken_and_not_retried() -> None:
    script = Script(AttemptFailure(503, "gone"), stream_first=True)
    with pytest.raises(StreamBroken):
        await run(script, [])
    assert script.calls == 1


@pytest.mark.parametrize(
    ("status", "detail", "in_message", "in_hint"),
    [
        (401, "bad key", "refused the credentials", "check PROV_KEY"),
        (403, "forbidden", "refused the credentials", "check PROV_KEY"),
        (404, "not here", "model 'm1' unknown to prov", "`model`"),
        (400, "model m1 does not exist", "model 'm1' unknown to prov", ".minds/llm.yaml"),
        (400, "max_tokens too large", "rejected the request", "model_params"),
    ],
)
async def test_rejections_are_immediate_and_actionable(
    status: int, detail: str, in_message: str, in_hint: str
) -> None:
    script = Script(AttemptFailure(status, detail))
    with pytest.raises(ProviderRejected) as caught:
        await run(script, [])
    assert script.calls == 1 and caught.value.status == status
    assert in_message in str(caught.value) and in_hint in caught.value.fix_hint


async def test_keyless_provider_refused_credentials_hint_names_the_setting() -> None:
    keyless = ProviderTarget("local", "m", "http://127.0.0.1:1", None)
    with pytest.raises(ProviderRejected) as caught:
        await generate_with_retries(
            Script(AttemptFailure(401, "no")),
            RecordingReceiver(),
            classify=classify,
            target=keyless,
            policy=policy([]),
        )
    assert "apiKeyEnvVar" in caught.value.fix_hint


async def test_errors_raised_by_the_receiver_pass_through_untouched() -> None:
    async def overlapping(receiver: GenerationReceiver) -> str:
        await receiver.saying_start()
        await receiver.thinking_start()
        return "unreachable"

    with pytest.raises(StreamProtocolError):
        await generate_with_retries(
            overlapping, RecordingReceiver(), classify=classify, target=TARGET, policy=policy([])
        )


async def test_unexpected_exception_is_an_llm_error_not_retried() -> None:
    calls = 0

    async def broken(receiver: GenerationReceiver) -> str:
        nonlocal calls
        calls += 1
        raise AttributeError("'NoneType' object has no attribute 'output_tokens'")

    with pytest.raises(LlmError) as caught:
        await generate_with_retries(
            broken, RecordingReceiver(), classify=classify, target=TARGET, policy=policy([])
        )
    assert calls == 1 and "AttributeError" in str(caught.value)


def test_secrets_are_redacted() -> None:
    assert redact("key sk-secret-value-123 leaked", "sk-secret-value-123") == "key [redacted] leaked"
    assert (
        redact("Incorrect API key provided: sk-proj-abcdefgh1234", None)
        == "Incorrect API key provided: [redacted]"
    )
    assert redact("nothing to hide", "sk-secret-value-123") == "nothing to hide"


def test_retry_after_header_forms() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None
    in_five = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3.0 < (retry_after_seconds({"retry-after": in_five}) or 0) <= 5.0


def test_tool_calls_of_a_generation_are_grouped_before_their_results() -> None:
    def call(i: str, gen: int) -> ChatMessage:
        return ChatMessage(role="assistant", kind="tool_call", tool_call_id=i, tool_name="f", genseq=gen)

    def result(i: str, gen: int) -> ChatMessage:
        return ChatMessage(role="tool", kind="tool_result", tool_call_id=i, genseq=gen)

    note = ChatMessage(role="user", content="teammate answered", genseq=1)
    ordered = group_tool_turns(
        [call("a", 1), result("a", 1), note, call("b", 1), result("b", 1), call("c", 2), result("c", 2)]
    )
    assert [(m.kind, m.tool_call_id or m.content) for m in ordered] == [
        ("tool_call", "a"), ("tool_call", "b"), ("tool_result", "a"), ("tool_result", "b"),
        ("text", "teammate answered"), ("tool_call", "c"), ("tool_result", "c"),
    ]  # fmt: skip
