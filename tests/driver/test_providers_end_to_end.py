"""Full dialog turns through the real Anthropic and OpenAI SDKs against the fake server.

A lead delegates to @coder, which asks @researcher (two levels of subdialogs), and also calls
``add_reminder``. The fake server plays every member, chosen by the system prompt, and reports a
distinct usage for every request so the engine's per-tree totals can be checked exactly.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from deadlines import until
from dialects import (
    AnthropicDialect,
    OpenAiChatDialect,
    OpenAiResponsesDialect,
    Script,
    ScriptUsage,
    Text,
    Thinking,
    Tool,
)
from fake_servers import (
    FakeLlmServer,
    RecordedRequest,
    Reply,
    anthropic_frames,
    openai_chunk,
    openai_frames,
    running_fake_server,
)

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.store.course_records import (
    AgentThoughtRecord,
    AgentWordsRecord,
    CourseRecord,
    FuncCallRecord,
    FuncResultRecord,
    GenFinishRecord,
    SubdialogCreatedRecord,
    TeammateResponseRecord,
)

TEAM_YAML = """\
member_defaults:
  provider: {lead}
  model: fake-model
  diligence_push_max: 0
default_responder: lead
members:
  lead: {{name: Lead, gofor: [plans and delegates]}}
  coder: {{name: Coder, gofor: [writes code], provider: {coder}}}
  researcher: {{name: Researcher, gofor: [finds facts]}}
"""

LLM_YAML = """\
providers:
  fake-anthropic:
    apiType: anthropic
    baseUrl: {url}
    apiKeyEnvVar: FAKE_E2E_ANTHROPIC_KEY
    models:
      fake-model: {{context_length: 200000, pricing: {{input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75}}}}
  fake-openai:
    apiType: openai-compatible
    baseUrl: {url}/v1
    apiKeyEnvVar: null
    models:
      fake-model: {{context_length: 128000, pricing: {{input: 1.0, output: 2.0}}}}
  fake-responses:
    apiType: openai-responses
    baseUrl: {url}/v1
    apiKeyEnvVar: null
    models:
      fake-model: {{context_length: 1050000, pricing: {{input: 2.0, output: 10.0, cache_read: 0.1, cache_write: 2.5}}}}
"""


def write_workspace(root: Path, url: str, lead_provider: str, coder_provider: str) -> Rtws:
    rtws = Rtws(root)
    rtws.minds_dir.mkdir(parents=True)
    rtws.team_yaml.write_text(TEAM_YAML.format(lead=lead_provider, coder=coder_provider))
    rtws.llm_yaml.write_text(LLM_YAML.format(url=url))
    (root / "tasks" / "t.tsk").mkdir(parents=True)
    (root / "tasks" / "t.tsk" / "goals.md").write_text("Ship the parser.\n")
    rtws.ensure_layout()
    return rtws


class TeamPlayer:
    """The fake server's responder: answers as whichever member the system prompt names."""

    def __init__(self) -> None:
        self.reported: list[dict[str, int]] = []
        """Usage as Usage fields, one per request, as the provider should record it."""

    def __call__(self, request: RecordedRequest) -> Reply:
        anthropic = request.path == "/v1/messages"
        if request.path == "/v1/responses":
            return self.responses(request)
        system = request.body["system"][0]["text"] if anthropic else request.body["messages"][0]["content"]
        agent = system.split("# You are @", 1)[1].split(" ", 1)[0]
        last = str(request.body["messages"][-1]["content"])
        if "provided response" in last:
            reply: dict[str, Any] = {"text": {"lead": "All done.", "coder": "Parser built (LL(1))."}[agent]}
        elif agent == "lead":
            reply = {
                "thinking": "Delegate, and remember to check.",
                "text": "Delegating.\n!?@coder build the parser\n",
                "call": ("call_rem_1", "add_reminder", {"content": "check the parser"}),
            }
        elif agent == "coder":
            reply = {"text": "Need facts first.\n!?@researcher find the grammar\n"}
        else:
            reply = {"text": "The grammar is LL(1)."}
        n = len(self.reported) + 1
        prompt, output, cached, written = 100 * n, 10 * n, n, 2 * n
        if anthropic:
            self.reported.append(
                {"input": prompt, "output": output, "cache_read": cached, "cache_write": written}
            )
            blocks: list[dict[str, Any]] = []
            if "thinking" in reply:
                blocks.append({"thinking": reply["thinking"], "signature": f"sig-{agent}-{n}"})
            blocks.append({"text": reply["text"]})
            if "call" in reply:
                call_id, name, arguments = reply["call"]
                blocks.append({"tool_use": {"id": call_id, "name": name, "input": arguments}})
            frames = anthropic_frames(
                blocks, input_tokens=prompt, output_tokens=output, cache_read=cached, cache_write=written
            )
            return Reply(frames=frames)
        # OpenAI counts cached tokens inside prompt_tokens
        self.reported.append(
            {"input": prompt - cached, "output": output, "cache_read": cached, "cache_write": 0}
        )
        frames = openai_frames(
            reasoning=reply.get("thinking"),
            content=reply["text"],
            tool_calls=[reply["call"]] if "call" in reply else None,
            prompt_tokens=prompt,
            completion_tokens=output,
            cached_tokens=cached,
        )
        return Reply(frames=frames)

    def responses(self, request: RecordedRequest) -> Reply:
        """The Responses API: the same team, with reasoning items the next request must carry back."""
        agent = request.body["instructions"].split("# You are @", 1)[1].split(" ", 1)[0]
        last = request.body["input"][-1]
        last_text = str(last.get("content") or last.get("output") or "")
        n = len(self.reported) + 1
        blocks: tuple[Any, ...]
        if "provided response" in last_text:
            blocks = (Text({"lead": "All done.", "coder": "Parser built (LL(1))."}[agent]),)
        elif agent == "lead":
            blocks = (
                Thinking("Delegate, and remember to check.", f"lead-{n}"),
                Text("Delegating.\n!?@coder build the parser\n"),
                Tool("call_rem_1", "add_reminder", {"content": "check the parser"}),
            )
        elif agent == "coder":
            blocks = (Text("Need facts first.\n!?@researcher find the grammar\n"),)
        else:
            blocks = (Text("The grammar is LL(1)."),)
        usage = ScriptUsage(input=100 * n - n - 2 * n, output=10 * n, cache_read=n, cache_write=2 * n)
        self.reported.append({"input": usage.input, "output": usage.output, "cache_read": n, "cache_write": 2 * n})
        return OpenAiResponsesDialect().reply(Script(blocks, usage=usage))


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLlmServer]:
    monkeypatch.setenv("FAKE_E2E_ANTHROPIC_KEY", "sk-ant-e2e-not-a-real-key")
    async with running_fake_server() as server:
        yield server


def records(engine: Engine, root_id: str, self_id: str | None = None) -> list[CourseRecord]:
    dialog = engine.get_dialog(root_id, self_id)
    return dialog.files.read_course(dialog.latest.current_course)


def only_sub(recs: list[CourseRecord]) -> str:
    created = [r for r in recs if isinstance(r, SubdialogCreatedRecord)]
    assert len(created) == 1
    return created[0].subdialog_id


@pytest.mark.parametrize(
    ("lead_provider", "coder_provider"),
    [
        ("fake-anthropic", "fake-anthropic"),
        ("fake-openai", "fake-openai"),
        ("fake-responses", "fake-responses"),
        ("fake-anthropic", "fake-openai"),
    ],
)
async def test_tellask_and_function_call_through_a_real_sdk(
    tmp_path: Path, fake: FakeLlmServer, lead_provider: str, coder_provider: str
) -> None:
    player = TeamPlayer()
    fake.responder = player
    engine = Engine(write_workspace(tmp_path / "ws", fake.url, lead_provider, coder_provider))
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "Kick off the parser work.")
        await engine.wait_idle(timeout=20)
        lead = records(engine, root.root_id)
        coder_id = only_sub(lead)
        researcher_id = only_sub(records(engine, root.root_id, coder_id))

        words = [r.content for r in lead if isinstance(r, AgentWordsRecord)]
        assert words == ["Delegating.\n!?@coder build the parser\n", "All done."]
        thoughts = [r for r in lead if isinstance(r, AgentThoughtRecord)]
        assert [t.content for t in thoughts] == ["Delegate, and remember to check."]
        call = next(r for r in lead if isinstance(r, FuncCallRecord))
        assert (call.id, call.name, call.arguments) == (
            "call_rem_1",
            "add_reminder",
            {"content": "check the parser"},
        )
        assert any(isinstance(r, FuncResultRecord) and r.id == "call_rem_1" and not r.is_error for r in lead)
        assert [r.content for r in root.files.read_reminders().reminders] == ["check the parser"]
        response = next(r for r in lead if isinstance(r, TeammateResponseRecord))
        assert "Parser built (LL(1))." in response.result
        researcher_words = [
            r.content for r in records(engine, root.root_id, researcher_id) if isinstance(r, AgentWordsRecord)
        ]
        assert researcher_words == ["The grammar is LL(1)."]
        assert engine.get_dialog(root.root_id).latest.run_state.kind == "idle"

        lead_requests = [r for r in fake.requests if "# You are @lead" in str(r.body)]
        assert len(lead_requests) == 2
        if lead_provider == "fake-anthropic":
            assert thoughts[0].provider_data == {"signature": "sig-lead-1"}
            replayed = [b for m in lead_requests[1].body["messages"] for b in m["content"]]
            assert {
                "type": "thinking",
                "thinking": "Delegate, and remember to check.",
                "signature": "sig-lead-1",
            } in replayed
            assert any(b["type"] == "tool_result" and b["tool_use_id"] == "call_rem_1" for b in replayed)
        elif lead_provider == "fake-responses":
            # The reasoning item (with its encrypted content) is carried to the next turn, before the call.
            assert thoughts[0].provider_data == {
                "openai_reasoning": {"id": "rs_lead-1", "summary": ["Delegate, and remember to check."], "encrypted_content": "enc-lead-1"}
            }
            replayed = lead_requests[1].body["input"]
            kinds = [item.get("type", item.get("role")) for item in replayed]
            reasoning_at = kinds.index("reasoning")
            assert replayed[reasoning_at]["encrypted_content"] == "enc-lead-1"
            assert kinds.index("function_call") > reasoning_at and "function_call_output" in kinds
        else:
            replayed = lead_requests[1].body["messages"]
            assert any(m["role"] == "tool" and m["tool_call_id"] == "call_rem_1" for m in replayed)

        total = engine.usage_totals(root.root_id)["total"]
        assert total["generations"] == len(fake.requests) == len(player.reported) == 5
        for field, key in [
            ("inputTokens", "input"),
            ("outputTokens", "output"),
            ("cacheReadTokens", "cache_read"),
            ("cacheWriteTokens", "cache_write"),
        ]:
            assert total[field] == sum(u[key] for u in player.reported), field
        assert total["costUsd"] > 0
        if lead_provider == coder_provider == "fake-anthropic":
            # cache reads and writes are priced at their own rates (llm.yaml: 3 / 15 / 0.3 / 3.75)
            expected = sum(3 * u["input"] + 15 * u["output"] + 0.3 * u["cache_read"] + 3.75 * u["cache_write"] for u in player.reported)
            assert total["costUsd"] == pytest.approx(expected / 1e6)
    finally:
        await engine.close()


@pytest.mark.parametrize("provider", ["fake-anthropic", "fake-openai"])
async def test_stop_during_a_stream_closes_the_connection(
    tmp_path: Path, fake: FakeLlmServer, provider: str
) -> None:
    if provider == "fake-anthropic":
        frames = anthropic_frames([{"text": "." * 400}])
        frames = frames[:3] + frames[3:4] * 200  # message_start, block start, then many deltas
    else:
        frames = [openai_chunk({"content": "."})] * 200
    fake.queue(Reply(frames=frames, delay_s=0.05))
    engine = Engine(write_workspace(tmp_path / "ws", fake.url, provider, provider))
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "Talk for a long time.")
        await until(lambda: root.streaming_text.get("saying"), "the stream started")
        stopped_at = time.monotonic()
        assert engine.stop(root)
        await engine.wait_idle(timeout=5)
        disconnected_at = await fake.first_disconnect()
        assert disconnected_at is not None and disconnected_at - stopped_at < 1.0, (
            "the server saw the hang-up"
        )
        latest = root.files.read_latest()
        assert latest is not None
        state = latest.run_state
        assert state.kind == "interrupted" and state.reason == "user_stop"
    finally:
        await engine.close()


@pytest.mark.parametrize("provider", ["fake-anthropic", "fake-openai", "fake-responses"])
async def test_a_members_streaming_false_sends_a_request_that_does_not_stream(
    tmp_path: Path, fake: FakeLlmServer, provider: str
) -> None:
    """Before, `streaming: false` in team.yaml was ignored: every request streamed."""
    player = TeamPlayer()

    def json_reply(request: RecordedRequest) -> Reply:
        assert not request.body.get("stream"), "the request must not ask for a stream"
        dialect = {"/v1/messages": AnthropicDialect(), "/v1/chat/completions": OpenAiChatDialect()}.get(
            request.path, OpenAiResponsesDialect()
        )
        player.reported.append({})
        return dialect.json_reply(Script((Thinking("Quick check.", "sig-b"), Text("Batch answer."))))

    fake.responder = json_reply
    rtws = write_workspace(tmp_path / "ws", fake.url, provider, provider)
    rtws.team_yaml.write_text(rtws.team_yaml.read_text().replace("diligence_push_max: 0", "diligence_push_max: 0\n  streaming: false"))
    engine = Engine(rtws)
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "Answer in one go.")
        await engine.wait_idle(timeout=20)
        lead = records(engine, root.root_id)
        assert [r.content for r in lead if isinstance(r, AgentWordsRecord)] == ["Batch answer."]
        assert [r.content for r in lead if isinstance(r, AgentThoughtRecord)] == ["Quick check."]
        finish = [r for r in lead if isinstance(r, GenFinishRecord)][-1]
        assert finish.streaming is False and finish.status == "ok" and len(player.reported) == 1
    finally:
        await engine.close()
