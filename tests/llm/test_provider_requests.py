"""What each provider sends: how it maps a context, its parameters and its cache breakpoints (issue 16).

The shared behaviour of every generator is ``test_provider_contract.py``; these are the parts that
differ by API, checked on the request bodies the fake server on 127.0.0.1 recorded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from dialects import AnthropicDialect, OpenAiChatDialect, OpenAiResponsesDialect, Script, Text
from fake_servers import (
    AnthropicPromptCache,
    FakeLlmServer,
    RecordedRequest,
    RecordingReceiver,
    Reply,
    anthropic_frames,
    openai_chunk,
    running_fake_server,
)

from dominds.llm.anthropic_provider import AnthropicGenerator
from dominds.llm.base import ChatMessage, GenerationRequest, ProviderRejected, ToolSpec
from dominds.llm.catalog_yaml import builtin_catalog
from dominds.llm.openai_provider import KEYLESS_API_KEY, OpenAiCompatibleGenerator, request_extra
from dominds.llm.openai_responses import OpenAiResponsesGenerator
from dominds.llm.retry import RetryPolicy

KEY_VAR = "FAKE_REQUESTS_KEY"
TOOL = ToolSpec("add_reminder", "Add a reminder", {"type": "object", "properties": {"content": {"type": "string"}}})
POLICY = RetryPolicy(attempts=1)


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLlmServer]:
    monkeypatch.setenv(KEY_VAR, "sk-requests-secret-0123456789")
    async with running_fake_server() as server:
        yield server


def request(config: dict[str, Any], messages: list[ChatMessage] | None = None, **kw: Any) -> GenerationRequest:
    return GenerationRequest(
        provider_key="fake",
        provider_config=config,
        model_key=kw.pop("model_key", "fake-model"),
        model_name=kw.pop("model_name", "fake-model"),
        system_prompt="You are @lead.",
        messages=messages or [ChatMessage(role="user", content="hello")],
        tools=[TOOL],
        agent_id="lead",
        **kw,
    )


def anthropic_config(fake: FakeLlmServer) -> dict[str, Any]:
    return AnthropicDialect().provider_config(fake.url, KEY_VAR)


async def anthropic_body(fake: FakeLlmServer, req: GenerationRequest) -> dict[str, Any]:
    fake.queue(Reply(frames=anthropic_frames([{"text": "ok"}])))
    generator = AnthropicGenerator(POLICY)
    await generator.generate(req, RecordingReceiver())
    await generator.aclose()
    return fake.requests[-1].body


MIXED_CONTEXT = [
    ChatMessage(role="assistant", content="[personal memory: a.md]\nlikes tea"),
    ChatMessage(role="user", content="remember two things", genseq=1),
    ChatMessage(role="assistant", kind="thinking", content="plan", provider_data={"signature": "s1"}, genseq=2),
    ChatMessage(role="assistant", kind="thinking", content="from another provider", genseq=2),
    ChatMessage(role="assistant", content="On it.", genseq=2),
    ChatMessage(role="assistant", kind="tool_call", tool_call_id="c.1", tool_name="f", arguments={"a": 1}, genseq=2),
    ChatMessage(role="tool", kind="tool_result", tool_call_id="c.1", content="done 1", genseq=2),
    ChatMessage(role="user", content="@coder provided response: built", genseq=2),
    ChatMessage(role="assistant", kind="tool_call", tool_call_id="c2", tool_name="f", arguments='{"a": 2}', genseq=2),
    ChatMessage(role="tool", kind="tool_result", tool_call_id="c2", content="", is_error=True, genseq=2),
    ChatMessage(role="user", content="next", genseq=3),
]


# ---------------------------------------------------------------- Anthropic


async def test_anthropic_context_is_alternating_turns_with_signed_thinking(fake: FakeLlmServer) -> None:
    body = await anthropic_body(fake, request(anthropic_config(fake), MIXED_CONTEXT, model_params={"anthropic": {"prompt_caching": "off"}}))
    turns = body["messages"]
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
    assert texts[0]["tool_use_id"] == "c2" and texts[0]["is_error"] is True and texts[0]["content"] == "(no output)"
    assert [b["text"] for b in texts[1:]] == ["@coder provided response: built", "next"]
    assert "cache_control" not in str(body), "prompt_caching: off"


async def test_anthropic_parameters_thinking_and_effort_reach_the_api(fake: FakeLlmServer) -> None:
    params = {"max_tokens": 2000, "anthropic": {"thinking": {"budget_tokens": 4096}, "top_k": 5, "temperature": 1,
                                                 "stop_sequences": ["X"], "effort": "high"}}  # fmt: skip
    body = await anthropic_body(fake, request(anthropic_config(fake), model_params=params))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] == 4096 + 8192, "max_tokens must exceed the thinking budget"
    assert (body["top_k"], body["temperature"], body["stop_sequences"]) == (5, 1, ["X"])
    assert body["output_config"] == {"effort": "high"}
    adaptive = {"anthropic": {"thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "max"}}}
    body = await anthropic_body(fake, request(anthropic_config(fake), model_params=adaptive))
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"} and body["output_config"] == {"effort": "max"}
    shorthand = await anthropic_body(fake, request(anthropic_config(fake), model_params={"anthropic": {"thinking_budget": 1024}}))
    assert shorthand["thinking"] == {"type": "enabled", "budget_tokens": 1024}


async def test_anthropic_default_output_limit_comes_from_the_catalog(fake: FakeLlmServer) -> None:
    body = await anthropic_body(fake, request(anthropic_config(fake), model_info={"output_length": 128000}))
    assert body["max_tokens"] == 32000, "the model's output limit, capped"
    body = await anthropic_body(fake, request(anthropic_config(fake), model_info={"output_length": 4096}))
    assert body["max_tokens"] == 4096
    body = await anthropic_body(fake, request(anthropic_config(fake)))
    assert body["max_tokens"] == 8192


@pytest.mark.parametrize(
    ("params", "model_info", "says"),
    [
        ({"anthropic": {"temperature": 1.5}}, {}, "`anthropic.temperature` must be a number from 0 to 1"),
        ({"anthropic": {"thinking": {"budget_tokens": 500}}}, {}, "budget_tokens` must be an integer ≥ 1024"),
        ({"anthropic": {"effort": "extreme"}}, {}, "`anthropic.effort` must be one of low, medium, high, xhigh, max"),
        ({"anthropic": {"thinking_budget": 4096}}, {"thinking": "adaptive"}, "thinks adaptively"),
        ({"anthropic": {"temperature": 0.2}}, {"sampling": False}, "refuses sampling parameters"),
        ({"anthropic": {"effort": "max"}}, {"effort": ["low", "medium", "high"]}, "takes effort low, medium, high"),
        ({"anthropic": {"thinking": {"type": "disabled"}}}, {"thinking": "adaptive_always"}, "always thinks"),
    ],
)
async def test_anthropic_parameters_a_model_would_refuse_are_refused_before_any_request(
    fake: FakeLlmServer, params: dict[str, Any], model_info: dict[str, Any], says: str
) -> None:
    generator = AnthropicGenerator(POLICY)
    with pytest.raises(ProviderRejected) as caught:
        await generator.generate(request(anthropic_config(fake), model_params=params, model_info=model_info), RecordingReceiver())
    assert says in str(caught.value) and "team.yaml" in caught.value.fix_hint
    assert fake.requests == []


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where the cache_control marks are: 'system', or 'turn:block' of the messages."""
    marks = ["system" for block in body.get("system", []) if "cache_control" in block]
    for t, turn in enumerate(body["messages"]):
        marks += [f"{t}:{b}" for b, block in enumerate(turn["content"]) if "cache_control" in block]
    return marks


async def test_anthropic_caches_the_system_prompt_and_the_growing_conversation(fake: FakeLlmServer) -> None:
    context = [
        ChatMessage(role="user", content="first question", genseq=1),
        ChatMessage(role="assistant", content="first answer", genseq=1),
        ChatMessage(role="user", content="[Your reminders]\nreminder #1: check", volatile=True),
        ChatMessage(role="user", content="second question", genseq=2),
    ]
    body = await anthropic_body(fake, request(anthropic_config(fake), context))
    # system; the last stable block before the reminders (the first answer); the user turn before the
    # newest; the end of the conversation
    assert breakpoints(body) == ["system", "0:0", "1:0", "2:1"]
    assert len(breakpoints(body)) <= 4, "the API allows four breakpoints"
    assert "__dominds" not in str(body), "no internal marker leaks into the request"
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    hour = await anthropic_body(fake, request(anthropic_config(fake), context, model_params={"anthropic": {"cache_ttl": "1h"}}))
    assert all(b.get("cache_control", {"ttl": "1h"})["ttl"] == "1h" for t in hour["messages"] for b in t["content"])
    system_only = await anthropic_body(fake, request(anthropic_config(fake), context, model_params={"anthropic": {"prompt_caching": "system"}}))
    assert breakpoints(system_only) == ["system"]


async def test_conversation_caching_reads_back_what_the_previous_generation_wrote(fake: FakeLlmServer) -> None:
    """Six generations with moving reminders: from the second on, most of the prompt is a cache read."""
    cache = AnthropicPromptCache()
    usages: list[tuple[int, int, int]] = []

    def responder(recorded: RecordedRequest) -> Reply:
        usage = cache.usage(recorded.body)
        usages.append(usage)
        return Reply(frames=anthropic_frames([{"text": "answer " * 50}], input_tokens=usage[0], cache_read=usage[1], cache_write=usage[2]))

    fake.responder = responder
    generator = AnthropicGenerator(POLICY)
    course: list[ChatMessage] = []
    for turn in range(1, 7):
        course.append(ChatMessage(role="user", content=f"question {turn}: " + "words " * 200, genseq=turn))
        last_user = max(i for i, m in enumerate(course) if m.role == "user")
        context = course[:last_user] + [ChatMessage(role="user", content=f"[reminders] {turn}", volatile=True)] + course[last_user:]
        receiver = RecordingReceiver()
        await generator.generate(request(anthropic_config(fake), context), receiver)
        course.append(ChatMessage(role="assistant", content=receiver.text("saying"), genseq=turn))
    await generator.aclose()
    reads = [read for _, read, _ in usages]
    writes = [written for _, _, written in usages]
    assert reads[0] == 0 and all(a < b for a, b in zip(reads, reads[1:], strict=False)), f"reads grow: {usages}"
    # Once the conversation is under way, what is written each turn stays the same size (the newest
    # exchange, re-written after the reminders moved) while everything before it is read back.
    assert len(set(writes[2:])) == 1 and reads[-1] > 2 * writes[-1], usages
    assert all(input_tokens == 0 for input_tokens, _, _ in usages), "nothing after the last breakpoint"


# ---------------------------------------------------------------- OpenAI Chat Completions


def chat_config(fake: FakeLlmServer, key_var: str | None = KEY_VAR) -> dict[str, Any]:
    return OpenAiChatDialect().provider_config(fake.url, key_var)


async def chat_run(fake: FakeLlmServer, req: GenerationRequest, frames: list[str] | None = None) -> RecordingReceiver:
    fake.queue(Reply(frames=frames or OpenAiChatDialect().reply(Script((Text("ok"),))).frames))
    generator = OpenAiCompatibleGenerator(POLICY)
    receiver = RecordingReceiver()
    await generator.generate(req, receiver)
    await generator.aclose()
    return receiver


async def test_chat_context_maps_to_chat_messages(fake: FakeLlmServer) -> None:
    messages = [
        ChatMessage(role="assistant", content="[personal memory: a.md]\nlikes tea"),
        ChatMessage(role="user", content="taskdoc"),
        ChatMessage(role="user", content="do it", genseq=1),
        ChatMessage(role="assistant", kind="thinking", content="hmm", provider_data={"signature": "s"}, genseq=2),
        ChatMessage(role="assistant", content="Calling.", genseq=2),
        ChatMessage(role="assistant", kind="tool_call", tool_call_id="c1", tool_name="f", arguments={"a": 1}, genseq=2),
        ChatMessage(role="tool", kind="tool_result", tool_call_id="c1", content="r1", genseq=2),
        ChatMessage(role="assistant", kind="tool_call", tool_call_id="c2", tool_name="f", arguments="not json", genseq=2),
        ChatMessage(role="tool", kind="tool_result", tool_call_id="c2", content="r2", genseq=2),
    ]
    await chat_run(fake, request(chat_config(fake), messages))
    sent = fake.requests[0].body["messages"]
    assert sent[0] == {"role": "system", "content": "You are @lead."}
    assert sent[2] == {"role": "user", "content": "taskdoc\n\ndo it"}, "consecutive user texts are merged"
    assert sent[3]["role"] == "assistant" and sent[3]["content"] == "Calling."
    # Arguments that are not JSON are sent as an object holding the raw text (issue 32: servers that parse
    # them, as llama.cpp's chat templates do, refused the whole request).
    assert [c["function"]["arguments"] for c in sent[3]["tool_calls"]] == ['{"a": 1}', '{"raw_arguments": "not json"}']
    assert sent[4:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
    ]
    assert all("hmm" not in str(m.get("content")) for m in sent), "thinking is not sent back"


async def test_chat_member_params_reach_the_body(fake: FakeLlmServer) -> None:
    params = {"max_tokens": 300, "openai": {"temperature": 0.2, "top_k": 20, "extra_body": {"min_tokens": 3}}}
    await chat_run(fake, request(chat_config(fake), model_params=params))
    body = fake.requests[0].body
    assert (body["max_tokens"], body["temperature"], body["top_k"], body["min_tokens"]) == (300, 0.2, 20, 3)
    official = request_extra(request(chat_config(fake), model_params=params), "https://api.openai.com/v1")
    assert official["max_completion_tokens"] == 300 and "max_tokens" not in official


async def test_chat_ollama_reasoning_field_alternates_without_overlap(fake: FakeLlmServer) -> None:
    frames = [
        openai_chunk({"reasoning": "first thought"}), openai_chunk({"content": "Answer part one."}),
        openai_chunk({"reasoning": "second thought"}), openai_chunk({"content": "Part two."}),
        openai_chunk({}, "stop"), "data: [DONE]\n\n",
    ]  # fmt: skip
    receiver = await chat_run(fake, request(chat_config(fake)), frames)
    assert receiver.kinds() == ["thinking_start", "thinking_finish", "saying_start", "saying_finish"] * 2
    assert receiver.text("thinking") == "first thoughtsecond thought"


async def test_chat_whole_tool_calls_without_index_are_kept_apart(fake: FakeLlmServer) -> None:
    calls = [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"y": 2}'}},
    ]  # Ollama-style: complete calls in one chunk, no `index`, and `stop` after them
    frames = [openai_chunk({"tool_calls": calls}), openai_chunk({}, "stop"), "data: [DONE]\n\n"]
    receiver = await chat_run(fake, request(chat_config(fake)), frames)
    assert receiver.events == [("func_call", "a", "f", {"x": 1}), ("func_call", "b", "g", {"y": 2})]


async def test_chat_keyless_server_gets_the_dummy_key(fake: FakeLlmServer) -> None:
    await chat_run(fake, request(chat_config(fake, None)))
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEYLESS_API_KEY}"


# ---------------------------------------------------------------- OpenAI Responses


def responses_config(fake: FakeLlmServer) -> dict[str, Any]:
    return OpenAiResponsesDialect().provider_config(fake.url, KEY_VAR)


async def responses_body(fake: FakeLlmServer, req: GenerationRequest) -> dict[str, Any]:
    fake.queue(OpenAiResponsesDialect().reply(Script((Text("ok"),))))
    generator = OpenAiResponsesGenerator(POLICY)
    await generator.generate(req, RecordingReceiver())
    await generator.aclose()
    return fake.requests[-1].body


async def test_responses_input_carries_reasoning_items_between_turns(fake: FakeLlmServer) -> None:
    reasoning = {"openai_reasoning": {"id": "rs_1", "summary": ["plan it"], "encrypted_content": "enc-1"}}
    messages = [
        ChatMessage(role="user", content="do it", genseq=1),
        ChatMessage(role="assistant", kind="thinking", content="plan it", provider_data=reasoning, genseq=1),
        ChatMessage(role="assistant", kind="thinking", content="Claude's", provider_data={"signature": "s"}, genseq=1),
        ChatMessage(role="assistant", content="Calling.", genseq=1),
        ChatMessage(role="assistant", kind="tool_call", tool_call_id="call_1", tool_name="f", arguments={"a": 1}, genseq=1),
        ChatMessage(role="tool", kind="tool_result", tool_call_id="call_1", content="", genseq=1),
    ]
    body = await responses_body(fake, request(responses_config(fake), messages))
    assert body["instructions"] == "You are @lead." and body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["input"] == [
        {"role": "user", "content": "do it"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan it"}], "encrypted_content": "enc-1"},
        {"role": "assistant", "content": "Calling."},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "(no output)"},
    ]
    assert body["tools"][0] == {"type": "function", "name": "add_reminder", "description": "Add a reminder",
                                "parameters": TOOL.parameters, "strict": False}  # fmt: skip


async def test_responses_parameters_are_mapped_to_the_api(fake: FakeLlmServer) -> None:
    params = {"max_tokens": 5000, "openai": {"reasoning_effort": "high", "verbosity": "low", "reasoning_summary": "detailed",
                                             "prompt_cache_retention": "12h", "user": "u-1"}}  # fmt: skip
    body = await responses_body(fake, request(responses_config(fake), model_params=params))
    assert body["max_output_tokens"] == 5000 and body["reasoning"] == {"effort": "high", "summary": "detailed"}
    assert body["text"] == {"verbosity": "low"} and body["prompt_cache_retention"] == "12h"
    assert body["safety_identifier"] == "u-1" and body["prompt_cache_key"] == "dominds-lead"
    plain = await responses_body(fake, request(responses_config(fake), model_info={"reasoning": False}))
    assert "reasoning" not in plain and "include" not in plain, "a model that does not reason gets no reasoning options"
    with pytest.raises(ProviderRejected):
        await OpenAiResponsesGenerator(POLICY).generate(
            request(responses_config(fake), model_params={"openai": {"reasoning_effort": "huge"}}), RecordingReceiver()
        )


def test_the_builtin_catalog_models_are_valid_requests() -> None:
    """Every built-in model's entry is accepted by its generator's parameter checks."""
    from dominds.llm.params import model_problems

    for provider in builtin_catalog().providers.values():
        for key, model in provider.models.items():
            assert model_problems({}, provider.api_type, key, model.request_info()) == []
