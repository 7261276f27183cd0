"""A generation's request through each real SDK costs the same work per message at any context length.

The bug: both SDKs walk every value of a typed parameter against its TypedDict before sending it (the
SDK's ``_transform``): the ``openai`` SDK made ~100 Python calls per message, so a turn of a dialog at
5,000 turns (10,000 messages) spent 5.5 s of CPU on the daemon's event loop before the request left,
against 50 ms at turn 10 (Anthropic: a third of that). Work is counted, not timed: the Python calls the
event loop's thread makes while one generation runs (``sys.setprofile``), with the fake server in a
thread of its own, so the figures do not depend on the machine's load.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest
from dialects import AnthropicDialect, Dialect, OpenAiChatDialect, OpenAiResponsesDialect, Script, Text
from fake_servers import FakeLlmServer, RecordingReceiver, fake_server_in_thread

from dominds.llm.base import ChatMessage, GenerationRequest, Generator, ToolSpec
from dominds.llm.retry import RetryPolicy

KEY_VAR = "FAKE_LONG_REQUESTS_KEY"
TOOL = ToolSpec("add_reminder", "Add a reminder", {"type": "object", "properties": {"content": {"type": "string"}}})
SHORT, LONG = 20, 4_020
CALLS_PER_MESSAGE = 15
"""Our own conversion of a message for an API makes a few calls (a dict, a role check, a merge test);
the SDK's walk made ~100 (``openai``) and ~40 (``anthropic``)."""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLlmServer]:
    with fake_server_in_thread() as server:
        yield server


def context(size: int) -> list[ChatMessage]:
    """A conversation of ``size`` messages: user and assistant turns, every fifth turn a tool call and
    its result."""
    messages: list[ChatMessage] = []
    genseq = 0
    while len(messages) < size:
        genseq += 1
        messages.append(ChatMessage(role="user", content=f"question {genseq}: what next?", genseq=genseq))
        if genseq % 5 == 0:
            call_id = f"call-{genseq}"
            messages.append(
                ChatMessage(role="assistant", kind="tool_call", tool_call_id=call_id, tool_name="add_reminder",
                            arguments={"content": f"note {genseq}"}, genseq=genseq)
            )  # fmt: skip
            messages.append(ChatMessage(role="tool", kind="tool_result", tool_call_id=call_id, content="added", genseq=genseq))
        messages.append(ChatMessage(role="assistant", content=f"answer {genseq}: " + "words " * 20, genseq=genseq))
    return messages[:size] if messages[size - 1].role != "user" else messages[: size - 1]


def request(config: dict[str, Any], size: int) -> GenerationRequest:
    return GenerationRequest(
        provider_key="fake",
        provider_config=config,
        model_key="fake-model",
        model_name="fake-model",
        system_prompt="You are @lead.",
        messages=context(size),
        tools=[TOOL],
        agent_id="lead",
    )


async def calls_of_one_generation(generator: Generator, req: GenerationRequest) -> int:
    count = 0

    def counter(frame: FrameType, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(counter)
    try:
        await generator.generate(req, RecordingReceiver())
    finally:
        sys.setprofile(None)
    return count


DIALECTS: dict[str, Dialect] = {
    "anthropic": AnthropicDialect(),
    "openai-chat": OpenAiChatDialect(),
    "openai-responses": OpenAiResponsesDialect(),
}


@pytest.mark.parametrize("api", list(DIALECTS))
async def test_a_request_of_4000_messages_costs_no_sdk_walk_per_message(
    api: str, fake: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VAR, "sk-long-requests-0123456789")
    dialect = DIALECTS[api]
    config = dialect.provider_config(fake.url, KEY_VAR)
    generator = dialect.generator(RetryPolicy(attempts=1))
    try:
        counts = {}
        for size in (SHORT, SHORT, LONG, SHORT, LONG):  # the first warms the client and the SDK's caches
            fake.queue(dialect.reply(Script((Text("ok"),))))
            counts[size] = await calls_of_one_generation(generator, request(config, size))
        sent = fake.requests[-1].body
        assert len(sent.get("messages") or sent.get("input") or ()) >= LONG // 2, "the whole context was sent"
    finally:
        await generator.aclose()  # type: ignore[attr-defined]
    per_message = (counts[LONG] - counts[SHORT]) / (LONG - SHORT)
    assert per_message < CALLS_PER_MESSAGE, counts
