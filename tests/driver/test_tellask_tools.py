"""Tellask as function tools (issue 33): TYPE C, B, A, Q4H and ``@self`` round trips in ``tools`` form
through the real SDKs against the fake server, which refuses (400) any request whose tool calls and
results do not pair up (``fake_servers.tool_history_problems``). Also: a collective of three tool calls in
one generation, ``both`` form with a text and a tool call in one generation, ``!?@`` lines as plain text
in ``tools`` form, refusals as tool results, and the ``text`` form offering no Tellask tools.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from dialects import (
    AnthropicDialect,
    Block,
    OpenAiChatDialect,
    OpenAiResponsesDialect,
    Script,
    ScriptUsage,
    Text,
    Tool,
)
from fake_servers import FakeLlmServer, RecordedRequest, Reply, running_fake_server

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.store.course_records import (
    AgentWordsRecord,
    CourseRecord,
    GenStartRecord,
    SubdialogCreatedRecord,
    TeammateResponseRecord,
    TellaskCallRecord,
)

PROVIDERS = ["fake-anthropic", "fake-openai", "fake-responses"]

TEAM_YAML = """\
member_defaults:
  provider: {provider}
  model: fake-model
  diligence_push_max: 0
  tellask: {form}
default_responder: lead
members:
  lead: {{name: Lead, gofor: [plans and delegates]}}
  coder: {{name: Coder, gofor: [writes code]}}
  researcher: {{name: Researcher, gofor: [finds facts]}}
"""

LLM_YAML = """\
providers:
  fake-anthropic:
    apiType: anthropic
    baseUrl: {url}
    apiKeyEnvVar: FAKE_TOOLS_ANTHROPIC_KEY
    models:
      fake-model: {{context_length: 200000}}
  fake-openai:
    apiType: openai-compatible
    baseUrl: {url}/v1
    apiKeyEnvVar: null
    models:
      fake-model: {{context_length: 128000}}
  fake-responses:
    apiType: openai-responses
    baseUrl: {url}/v1
    apiKeyEnvVar: null
    models:
      fake-model: {{context_length: 1050000}}
"""

Brain = Callable[[str, str], tuple[Block, ...]]
"""(agent, what the model reads last) → what it answers."""


def agent_of(request: RecordedRequest) -> str:
    body = request.body
    if request.path == "/v1/messages":
        system = body["system"][0]["text"]
    elif request.path == "/v1/chat/completions":
        system = body["messages"][0]["content"]
    else:
        system = body["instructions"]
    return str(system).split("# You are @", 1)[1].split(" ", 1)[0]


def tail_of(request: RecordedRequest) -> str:
    """Everything after the model's last turn (the new prompt, tool results, notes), as JSON text."""
    if request.path == "/v1/messages":
        return json.dumps(request.body["messages"][-1])
    if request.path == "/v1/chat/completions":
        messages = request.body["messages"]
        last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=0)
        return json.dumps(messages[last + 1 :])
    items = request.body["input"]
    last = max(
        (i for i, it in enumerate(items) if it.get("type") in ("function_call", "reasoning") or it.get("role") == "assistant"),
        default=-1,
    )
    return json.dumps(items[last + 1 :])


def dialect_of(request: RecordedRequest) -> AnthropicDialect | OpenAiChatDialect:
    return {"/v1/messages": AnthropicDialect(), "/v1/chat/completions": OpenAiChatDialect()}.get(
        request.path, OpenAiResponsesDialect()
    )


class Harness:
    def __init__(self, fake: FakeLlmServer, engine: Engine) -> None:
        self.fake, self.engine = fake, engine

    def requests_of(self, agent: str) -> list[RecordedRequest]:
        return [r for r in self.fake.requests if agent_of(r) == agent]

    def records(self, root_id: str, self_id: str | None = None) -> list[CourseRecord]:
        dialog = self.engine.get_dialog(root_id, self_id)
        return dialog.files.read_course(dialog.latest.current_course)


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLlmServer]:
    monkeypatch.setenv("FAKE_TOOLS_ANTHROPIC_KEY", "sk-ant-tools-not-a-real-key")
    async with running_fake_server() as server:
        server.validate_tool_history = True
        yield server


@pytest.fixture
async def harness(tmp_path: Path, fake: FakeLlmServer) -> AsyncIterator[Callable[..., Any]]:
    engines: list[Engine] = []

    async def start(provider: str, brain: Brain, form: str = "tools", usage: ScriptUsage | None = None) -> Harness:
        def respond(request: RecordedRequest) -> Reply:
            return dialect_of(request).reply(Script(brain(agent_of(request), tail_of(request)), usage=usage or ScriptUsage()))

        fake.responder = respond
        root = tmp_path / "ws"
        rtws = Rtws(root)
        rtws.minds_dir.mkdir(parents=True)
        rtws.team_yaml.write_text(TEAM_YAML.format(provider=provider, form=form))
        rtws.llm_yaml.write_text(LLM_YAML.format(url=fake.url))
        (root / "tasks" / "t.tsk").mkdir(parents=True)
        (root / "tasks" / "t.tsk" / "goals.md").write_text("Ship the parser.\n")
        rtws.ensure_layout()
        engine = Engine(rtws)
        await engine.start()
        engines.append(engine)
        return Harness(fake, engine)

    yield start
    for engine in engines:
        await engine.close()


def tool_results(request: RecordedRequest) -> dict[str, str]:
    """Call id → result text of every tool result in a request."""
    out: dict[str, str] = {}
    if request.path == "/v1/messages":
        for message in request.body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    out[block["tool_use_id"]] = content if isinstance(content, str) else json.dumps(content)
    elif request.path == "/v1/chat/completions":
        for message in request.body["messages"]:
            if message["role"] == "tool":
                out[message["tool_call_id"]] = str(message["content"])
    else:
        for item in request.body["input"]:
            if item.get("type") == "function_call_output":
                out[item["call_id"]] = str(item["output"])
    return out


def words(records: list[CourseRecord]) -> list[str]:
    return [r.content for r in records if isinstance(r, AgentWordsRecord)]


def generations(records: list[CourseRecord]) -> int:
    return sum(isinstance(r, GenStartRecord) for r in records)


async def run(h: Harness, message: str) -> str:
    root = h.engine.create_dialog("lead", "tasks/t.tsk")
    h.engine.submit_user_message(root, message)
    await h.engine.wait_idle(timeout=20)
    return root.root_id


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_type_c_reply_is_the_tool_result(harness, provider: str) -> None:  # type: ignore[no-untyped-def]
    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        if agent == "coder":
            return (Text("Parser built."),)
        if "Parser built." in tail:
            return (Text("All done."),)
        return (Text("Delegating."), Tool("call_c1", "tellaskSessionless", {"targetAgentId": "coder", "tellaskContent": "build the parser"}))

    h = await harness(provider, brain)
    root_id = await run(h, "go")
    lead = h.records(root_id)
    assert words(lead) == ["Delegating.", "All done."]
    call = next(r for r in lead if isinstance(r, TellaskCallRecord))
    assert (call.form, call.tool_name, call.tool_call_id, call.tellask_body) == ("tools", "tellaskSessionless", "call_c1", "build the parser")
    created = next(r for r in lead if isinstance(r, SubdialogCreatedRecord))
    assert created.call_type == "C" and created.call_id == call.call_id
    assert words(h.records(root_id, created.subdialog_id)) == ["Parser built."]
    last = h.requests_of("lead")[-1]
    assert "Parser built." in tool_results(last)["call_c1"], "the reply is the tool call's result"
    assert json.dumps(last.body).count("Parser built.") == 1, "delivered once"
    assert generations(lead) == 2
    assert not h.fake.history_problems


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_type_b_session_is_reused_by_the_tool_form(harness, provider: str) -> None:  # type: ignore[no-untyped-def]
    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        if agent == "coder":
            return (Text("Step two done." if "step two" in tail else "Step one done."),)
        if "Step two done." in tail:
            return (Text("Both steps done."),)
        if "Step one done." in tail:
            return (Text("First step done."),)
        step = "step two" if "again" in tail else "step one"
        return (Tool(f"call_{step[-3:]}", "tellask", {"targetAgentId": "coder", "sessionSlug": "job.parser", "tellaskContent": step}),)

    h = await harness(provider, brain)
    root_id = await run(h, "go")
    h.engine.submit_user_message(h.engine.get_dialog(root_id), "again")
    await h.engine.wait_idle(timeout=20)
    lead = h.records(root_id)
    created = [r for r in lead if isinstance(r, SubdialogCreatedRecord)]
    assert [c.call_type for c in created] == ["B", "B"] and [c.reused for c in created] == [False, True]
    assert len({c.subdialog_id for c in created}) == 1
    assert list(h.engine.get_dialog(root_id).root.type_b) == ["coder!job.parser"]
    assert words(lead) == ["First step done.", "Both steps done."]
    results = tool_results(h.requests_of("lead")[-1])
    assert "Step one done." in results["call_one"] and "Step two done." in results["call_two"]
    assert not h.fake.history_problems


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_type_a_ask_back_while_the_callers_tool_call_waits(harness, provider: str) -> None:  # type: ignore[no-untyped-def]
    """The lead is driven to answer the ask-back while its own ``tellaskSessionless`` call still waits: the
    provider needs that call answered (a pending result), and the coder's reply comes later, once, as a message."""

    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        if agent == "coder":
            if "Use Rust." in tail:
                return (Text("Built in Rust."),)
            return (Tool("call_back", "tellaskBack", {"tellaskContent": "Which language?"}),)
        if "Built in Rust." in tail:
            return (Text("Done."),)
        if "Which language?" in tail:
            return (Text("Use Rust."),)
        return (Tool("call_c", "tellaskSessionless", {"targetAgentId": "coder", "tellaskContent": "build it"}),)

    h = await harness(provider, brain)
    root_id = await run(h, "go")
    lead = h.records(root_id)
    assert words(lead) == ["Use Rust.", "Done."]
    sub_id = next(r for r in lead if isinstance(r, SubdialogCreatedRecord)).subdialog_id
    coder = h.records(root_id, sub_id)
    assert words(coder) == ["Built in Rust."]
    asked = [r for r in coder if isinstance(r, TeammateResponseRecord)]
    assert len(asked) == 1 and asked[0].call_type == "A" and asked[0].response == "Use Rust."
    coder_last = h.requests_of("coder")[-1]
    assert "Use Rust." in tool_results(coder_last)["call_back"], "the ask-back's answer is tellaskBack's result"
    lead_last = h.requests_of("lead")[-1]
    assert "No reply yet" in tool_results(lead_last)["call_c"]
    assert json.dumps(lead_last.body).count("Built in Rust.") == 1
    assert not h.fake.history_problems


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_ask_human_answer_is_the_tool_result(harness, provider: str) -> None:  # type: ignore[no-untyped-def]
    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        if "postgres" in tail:
            return (Text("Using postgres."),)
        return (Tool("call_q", "askHuman", {"tellaskContent": "Which database?"}),)

    h = await harness(provider, brain)
    root_id = await run(h, "go")
    root = h.engine.get_dialog(root_id)
    assert [q.tellask_head for q in root.q4h] == ["@human"] and root.q4h[0].body_content == "Which database?"
    h.engine.answer_question(root.q4h[0].id, "postgres")
    await h.engine.wait_idle(timeout=20)
    assert words(h.records(root_id)) == ["Using postgres."]
    assert tool_results(h.requests_of("lead")[-1])["call_q"] == "postgres"
    assert not h.fake.history_problems


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_fresh_boots_reasoning_tool(harness, provider: str) -> None:  # type: ignore[no-untyped-def]
    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        if "Fresh Boots Reasoning" in tail:
            return (Text("X holds."),)
        if "X holds." in tail:
            return (Text("Concluded."),)
        return (Tool("call_self", "freshBootsReasoning", {"tellaskContent": "does X hold?"}),)

    h = await harness(provider, brain)
    root_id = await run(h, "go")
    lead = h.records(root_id)
    created = next(r for r in lead if isinstance(r, SubdialogCreatedRecord))
    assert created.target_agent_id == "lead" and h.engine.get_dialog(root_id, created.subdialog_id).meta.fbr
    assert words(lead) == ["Concluded."]
    assert "X holds." in tool_results(h.requests_of("lead")[-1])["call_self"]
    assert not h.fake.history_problems


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_three_tool_calls_in_one_generation_are_one_collective_dispatch(harness, provider: str) -> None:  # type: ignore[no-untyped-def]
    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        if agent != "lead":
            part = "part A" if "part A" in tail else "part B" if "part B" in tail else "facts"
            return (Text(f"{agent} says: {part}"),)
        if tail.count("provided response") >= 3:
            return (Text("All three answered."),)
        return (
            Tool("call_1", "tellaskSessionless", {"targetAgentId": "coder", "tellaskContent": "part A"}),
            Tool("call_2", "tellaskSessionless", {"targetAgentId": "researcher", "tellaskContent": "facts"}),
            Tool("call_3", "tellaskSessionless", {"targetAgentId": "coder", "tellaskContent": "part B"}),
        )

    h = await harness(provider, brain)
    root_id = await run(h, "go")
    lead = h.records(root_id)
    assert len([r for r in lead if isinstance(r, SubdialogCreatedRecord)]) == 3
    assert generations(lead) == 2, "revived once, after all three replies"
    assert words(lead) == ["All three answered."]
    results = tool_results(h.requests_of("lead")[-1])
    assert "coder says: part A" in results["call_1"] and "researcher says: facts" in results["call_2"]
    assert "coder says: part B" in results["call_3"]
    assert not h.fake.history_problems


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_both_form_runs_a_text_and_a_tool_call_of_one_generation(harness, provider: str) -> None:  # type: ignore[no-untyped-def]
    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        if agent == "coder":
            return (Text("Code written."),)
        if agent == "researcher":
            return (Text("Facts found."),)
        if "Code written." in tail and "Facts found." in tail:
            return (Text("Both back."),)
        return (
            Text("Splitting the work.\n!?@researcher find the facts\n"),
            Tool("call_code", "tellaskSessionless", {"targetAgentId": "coder", "tellaskContent": "write the code"}),
        )

    h = await harness(provider, brain, form="both")
    root_id = await run(h, "go")
    lead = h.records(root_id)
    assert {r.target_agent_id for r in lead if isinstance(r, SubdialogCreatedRecord)} == {"coder", "researcher"}
    assert generations(lead) == 2 and words(lead)[-1] == "Both back."
    last = h.requests_of("lead")[-1]
    assert "Code written." in tool_results(last)["call_code"]
    assert "Facts found." not in json.dumps(tool_results(last)), "the text-form call's reply is a message"
    assert not h.fake.history_problems


async def test_tools_form_leaves_tellask_lines_as_plain_text(harness) -> None:  # type: ignore[no-untyped-def]
    """In ``tools`` form a ``!?@`` line (say, in an example) calls no one."""

    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        return (Text("Example of the old grammar:\n!?@coder do something\n"),)

    h = await harness("fake-anthropic", brain)
    root_id = await run(h, "explain")
    lead = h.records(root_id)
    assert not [r for r in lead if isinstance(r, SubdialogCreatedRecord | TellaskCallRecord)]
    said = [r for r in lead if isinstance(r, AgentWordsRecord)]
    assert len(said) == 1 and said[0].plain
    request = h.requests_of("lead")[0].body
    assert {"tellask", "tellaskSessionless", "askHuman", "freshBootsReasoning"} <= {t["name"] for t in request["tools"]}
    assert "tellaskBack" not in {t["name"] for t in request["tools"]}, "a root has no tellasker"
    assert "Tellask function tools" in request["system"][0]["text"] and "plain text" in request["system"][0]["text"]


async def test_text_form_offers_no_tellask_tools(harness) -> None:  # type: ignore[no-untyped-def]
    h = await harness("fake-openai", lambda agent, tail: (Text("Hello."),), form="text")
    await run(h, "hi")
    request = h.requests_of("lead")[0].body
    assert not {t["function"]["name"] for t in request.get("tools", [])} & {"tellask", "tellaskSessionless", "askHuman"}
    assert "!?@<member>" in request["messages"][0]["content"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_refused_tool_form_calls_are_answered_with_notes(harness, provider: str) -> None:  # type: ignore[no-untyped-def]
    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        if "Dominds note" in tail:
            return (Text("Understood."),)
        return (
            Tool("call_back", "tellaskBack", {"tellaskContent": "anyone?"}),
            Tool("call_ghost", "tellaskSessionless", {"targetAgentId": "ghost", "tellaskContent": "hi"}),
            Tool("call_bad", "tellask", {"targetAgentId": "coder", "tellaskContent": "no slug"}),
        )

    h = await harness(provider, brain)
    root_id = await run(h, "go")
    lead = h.records(root_id)
    assert words(lead) == ["Understood."]
    assert not [r for r in lead if isinstance(r, SubdialogCreatedRecord)]
    results = tool_results(h.requests_of("lead")[-1])
    assert "root dialog has none" in results["call_back"] and "askHuman" in results["call_back"]
    assert "@ghost is not a teammate" in results["call_ghost"]
    assert "`sessionSlug` is required" in results["call_bad"]
    assert not h.fake.history_problems


def _shown(events: list[dict[str, Any]]) -> str:
    """What ``dominds show`` prints for a dialog's events (no colour)."""
    from io import StringIO

    from dominds.cli.render import EventRenderer, Style, TranscriptWriter

    out = StringIO()
    renderer = EventRenderer(TranscriptWriter(out, Style(False)), followed={"x"}, root_id="r", agents={})
    for event in events:
        renderer.feed({k: v for k, v in event.items() if k != "dialog"})
    return out.getvalue()


async def test_a_tool_form_call_replays_and_shows_like_a_text_form_one(harness) -> None:  # type: ignore[no-untyped-def]
    """The panel (replayed events) and ``dominds show`` draw a tool-form call as the text-form block it stands for."""
    from dominds.driver.receiver import parser_event_payloads
    from dominds.server.replay import replay_course
    from dominds.tellask import TellaskParser

    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        if agent == "coder":
            return (Text("Parser built."),)
        if "Parser built." in tail:
            return (Text("All done."),)
        return (Tool("call_c1", "tellaskSessionless", {"targetAgentId": "coder", "tellaskContent": "build the parser"}),)

    h = await harness("fake-anthropic", brain)
    root_id = await run(h, "go")
    events = replay_course(h.engine.get_dialog(root_id), 1, epoch="e", seq=0)
    calls = [e for e in events if str(e["type"]).startswith("teammate_call_")]
    parser = TellaskParser()
    text_form = [
        e
        for e in parser_event_payloads([*parser.feed("!?@coder\n!?build the parser"), *parser.finish()], 1, 1, 1)
        if str(e["type"]).startswith("teammate_call_")
    ]
    assert [e["type"] for e in calls] == [e["type"] for e in text_form]
    assert calls[0]["form"] == "tools" and calls[0]["toolName"] == "tellaskSessionless"
    call_id = calls[-1]["callId"]
    created = next(e for e in events if e["type"] == "subdialog_created_evt")
    response = next(e for e in events if e["type"] == "teammate_response_evt")
    assert created["callId"] == call_id == response["callId"], "the call site links to its subdialog and reply"
    for e in text_form:
        e.pop("callId", None)
    assert _shown(calls).replace(" ", "") == _shown(text_form).replace(" ", "") != ""
    assert "@coder" in _shown(calls) and "build the parser" in _shown(calls)


@pytest.mark.parametrize("pass_back", [None, "true", "reasoning"])
async def test_reasoning_is_carried_back_on_tool_call_messages_only_when_opted_in(
    harness, fake: FakeLlmServer, pass_back: str | None
) -> None:  # type: ignore[no-untyped-def]
    """``reasoning_pass_back`` (llm.yaml, per provider): a thinking model's reasoning goes back on the assistant
    message that made tool calls (DeepSeek, Kimi, … expect it there); off, nothing is sent (others refuse it)."""
    from dialects import Thinking

    def brain(agent: str, tail: str) -> tuple[Block, ...]:
        if agent == "coder":
            return (Thinking("how to build"), Text("Built."))
        if "Built." in tail:
            return (Thinking("wrap up"), Text("Done."))
        return (Thinking("delegate the build"), Tool("call_c", "tellaskSessionless", {"targetAgentId": "coder", "tellaskContent": "build"}))

    h = await harness("fake-openai", brain)
    if pass_back is not None:
        llm = h.engine.rtws.llm_yaml
        llm.write_text(llm.read_text().replace("  fake-openai:\n", f"  fake-openai:\n    reasoning_pass_back: {pass_back}\n"))
    await run(h, "go")
    last = h.requests_of("lead")[-1].body["messages"]
    calling = [m for m in last if m.get("tool_calls")]
    assert len(calling) == 1
    field = {None: None, "true": "reasoning_content", "reasoning": "reasoning"}[pass_back]
    if field is None:
        assert not any("reasoning" in key for m in last for key in m), "not sent unless opted in"
    else:
        assert calling[0][field] == "delegate the build"
        assert sum(field in m for m in last) == 1, "only on the message that made tool calls"
    assert not h.fake.history_problems


@pytest.mark.parametrize("provider", ["fake-openai", "fake-responses"])
async def test_reasoning_tokens_are_shown_with_the_usage(harness, provider: str) -> None:  # type: ignore[no-untyped-def]
    """Each generation's finish event (live and replayed: the panel shows it on the generation) carries its
    tokens, and the reasoning tokens among the output when the provider reports them."""
    from dominds.server.replay import replay_course

    h = await harness(provider, lambda agent, tail: (Text("Thought it through."),), usage=ScriptUsage(input=40, output=30, reasoning=12))
    root_id = await run(h, "think")
    [finish] = [e for e in replay_course(h.engine.get_dialog(root_id), 1, epoch="e", seq=0) if e["type"] == "generating_finish_evt"]
    assert (finish["outputTokens"], finish["reasoningTokens"]) == (30, 12) and finish["inputTokens"] >= 40
