"""Long unattended runs with real models (issue 32), through the engine and a real SDK against the fake
server: outages waited out with the run state showing "retrying", overflow taking the new-course path,
and a generation that fails never recorded as ``ok``."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm is not a package
from dialects import OpenAiChatDialect, Script, Text
from fake_servers import FakeLlmServer, RecordedRequest, Reply, running_fake_server

from dominds.cli.render import run_state_label
from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.store.course_records import AgentWordsRecord, GenFinishRecord, HumanTextRecord

TEAM_YAML = """\
member_defaults:
  provider: local
  model: small
  diligence_push_max: 0
default_responder: lead
members:
  lead: {name: Lead, gofor: [plans]}
"""

LLM_YAML = """\
providers:
  local:
    apiType: openai-compatible
    baseUrl: {url}/v1
    apiKeyEnvVar: null
    retry: {{base_delay_s: 0.01, max_delay_s: 0.02, window_s: {window}}}
    models:
      small: {{context_length: {window_tokens}}}
"""

CHAT = OpenAiChatDialect()


def workspace(root: Path, url: str, *, window: float = 60, window_tokens: int = 200_000) -> Rtws:
    rtws = Rtws(root)
    rtws.minds_dir.mkdir(parents=True)
    rtws.team_yaml.write_text(TEAM_YAML)
    rtws.llm_yaml.write_text(LLM_YAML.format(url=url, window=window, window_tokens=window_tokens))
    (root / "tasks" / "t.tsk").mkdir(parents=True)
    (root / "tasks" / "t.tsk" / "goals.md").write_text("Keep going.\n")
    rtws.ensure_layout()
    return rtws


@pytest.fixture
async def fake() -> AsyncIterator[FakeLlmServer]:
    async with running_fake_server() as server:
        yield server


@pytest.fixture
async def engine_for(tmp_path: Path) -> AsyncIterator[Any]:
    engines: list[Engine] = []

    async def start(rtws: Rtws) -> Engine:
        engine = Engine(rtws)
        await engine.start()
        engines.append(engine)
        return engine

    yield start
    for engine in engines:
        await engine.close()


def finishes(engine: Engine, root_id: str, course: int | None = None) -> list[GenFinishRecord]:
    dialog = engine.get_dialog(root_id)
    recs = dialog.files.read_course(course or dialog.latest.current_course)
    return [r for r in recs if isinstance(r, GenFinishRecord)]


async def test_an_overload_storm_is_waited_out_and_shown_as_retrying(
    tmp_path: Path, fake: FakeLlmServer, engine_for: Any
) -> None:
    """Bug: after 5 attempts (≤ 7.5 s) the dialog was interrupted and waited for a human. Twelve 529s in a
    row (more than the old budget) are now waited out inside the configured window; meanwhile the run
    state says "retrying: attempt n, next in s, reason" (what the panel, `status` and `show --follow` show)."""
    storm = iter([CHAT.error(529, "Overloaded")] * 12)
    fake.responder = lambda _: next(storm, CHAT.reply(Script((Text("Back at work."),))))
    engine = await engine_for(workspace(tmp_path / "ws", fake.url))
    states: list[dict[str, Any]] = []
    engine.pubchan.subscribe(lambda e: states.append(e["runState"]) if e["type"] == "dlg_run_state_evt" else None, wants_all=True)
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "Carry on.")
    await engine.wait_idle(timeout=30)
    assert len(fake.requests) == 13
    [finish] = finishes(engine, root.root_id)
    assert finish.status == "ok"
    words = [r.content for r in root.files.read_course(1) if isinstance(r, AgentWordsRecord)]
    assert words == ["Back at work."] and root.latest.run_state.kind == "idle"
    retrying = [s for s in states if s.get("reason") == "retrying"]
    assert [run_state_label(s).split(",")[0] for s in retrying] == [f"retrying: attempt {n}" for n in range(2, 14)]
    assert all("next in 0 s, HTTP 529: Overloaded" in run_state_label(s) for s in retrying)


async def test_an_outage_longer_than_the_window_interrupts_with_an_error_never_ok(
    tmp_path: Path, fake: FakeLlmServer, engine_for: Any
) -> None:
    fake.responder = lambda _: CHAT.error(503, "down")
    engine = await engine_for(workspace(tmp_path / "ws", fake.url, window=0.2))
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "Carry on.")
    await engine.wait_idle(timeout=30)
    [finish] = finishes(engine, root.root_id)
    assert finish.status == "error" and finish.error is not None and "unavailable after" in finish.error
    assert root.latest.run_state.kind == "interrupted" and "503" in (root.latest.run_state.detail or "")


async def test_an_invalid_retry_after_is_retried_through_the_engine(
    tmp_path: Path, fake: FakeLlmServer, engine_for: Any
) -> None:
    """Bug: ``Retry-After: soon-ish`` raised ``ValueError``: the dialog was interrupted as an internal error
    and the course recorded that generation as ``status: ok`` with zero characters."""
    fake.queue(CHAT.error(429, "slow down", {"retry-after": "soon-ish"}), CHAT.reply(Script((Text("Done."),))))
    engine = await engine_for(workspace(tmp_path / "ws", fake.url))
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "Carry on.")
    await engine.wait_idle(timeout=30)
    assert [f.status for f in finishes(engine, root.root_id)] == ["ok"] and len(fake.requests) == 2
    assert root.latest.run_state.kind == "idle"


def prompt_chars(request: RecordedRequest) -> int:
    return len(json.dumps(request.body))


async def test_an_empty_200_stream_after_an_oversized_prompt_starts_a_new_course(
    tmp_path: Path, fake: FakeLlmServer, engine_for: Any
) -> None:
    """Bug: llama.cpp's server answers a prompt longer than its window with 200 and an empty stream; we
    called it "unavailable", retried 5 times and stopped with a misleading message. Now the catalog's
    window says the prompt overflowed: the runtime starts a new course carrying the message."""
    served: list[str] = []

    def llama_cpp(request: RecordedRequest) -> Reply:
        if prompt_chars(request) > 4 * 6000:  # beyond the window: what llama.cpp answers
            served.append("empty")
            return Reply(frames=[""])
        served.append("reply")
        return CHAT.reply(Script((Text(f"Answer {len(served)}."),)))

    fake.responder = llama_cpp
    engine = await engine_for(workspace(tmp_path / "ws", fake.url, window_tokens=6000))
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "First, a small question.")
    await engine.wait_idle(timeout=30)
    assert served == ["reply"], "the first prompt fits"
    engine.submit_user_message(root, "Now a long paste: " + "lorem ipsum " * 2500)  # 30 000 characters
    await engine.wait_idle(timeout=30)
    big_course = finishes(engine, root.root_id, 1)
    assert served[:2] == ["reply", "empty"], "the empty reply is not retried"
    assert big_course[-1].status == "error" and "context window" in (big_course[-1].error or "")
    assert root.latest.current_course == 2, "the overflow took the new-course path"
    second = root.files.read_course(2)
    prompts = [r for r in second if isinstance(r, HumanTextRecord)]
    assert prompts and prompts[0].origin == "new_course" and "lorem ipsum" in prompts[0].content


async def test_a_generation_that_raises_unexpectedly_is_recorded_as_an_error_never_ok(
    tmp_path: Path, fake: FakeLlmServer, engine_for: Any
) -> None:
    """Bug: an exception that was not a provider error (the ``Retry-After`` ValueError was one) left the
    generation's finish record at ``status: ok`` with zero characters."""
    engine = await engine_for(workspace(tmp_path / "ws", fake.url))

    class Broken:
        async def generate(self, request: Any, receiver: Any) -> Any:
            raise ValueError("could not convert string to float: 'soon-ish'")

    engine.providers._generators["openai-compatible"] = Broken()  # a bug inside a provider
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "Carry on.")
    await engine.wait_idle(timeout=30)
    [finish] = finishes(engine, root.root_id)
    assert finish.status == "error" and "internal error: ValueError" in (finish.error or "")


async def test_stop_ends_a_retry_wait_at_once(tmp_path: Path, fake: FakeLlmServer, engine_for: Any) -> None:
    """A dialog waiting out an outage shows "retrying" and Stop still works: the wait is cancelled."""
    import asyncio

    fake.responder = lambda _: CHAT.error(529, "Overloaded")
    rtws = workspace(tmp_path / "ws2", fake.url, window=600)
    rtws.llm_yaml.write_text(rtws.llm_yaml.read_text().replace("base_delay_s: 0.01, max_delay_s: 0.02", "base_delay_s: 300, max_delay_s: 300"))
    engine = await engine_for(rtws)
    retrying = asyncio.Event()
    engine.pubchan.subscribe(
        lambda e: retrying.set() if e["type"] == "dlg_run_state_evt" and e["runState"].get("reason") == "retrying" else None,
        wants_all=True,
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "Carry on.")
    await asyncio.wait_for(retrying.wait(), 30)
    assert engine.stop(root)
    await engine.wait_idle(timeout=30)  # the wait was 300 s: idle now means Stop cancelled it
    assert len(fake.requests) == 1, "no attempt after the stop"
    assert root.latest.run_state.kind == "interrupted" and root.latest.run_state.reason == "user_stop"
    [finish] = finishes(engine, root.root_id)
    assert finish.status == "interrupted"


async def test_a_repeated_call_id_in_one_reply_keeps_both_results_and_replays_cleanly(
    tmp_path: Path, fake: FakeLlmServer, engine_for: Any
) -> None:
    """Servers that repeat a call id (llama.cpp's ``call_0`` in every reply, or twice in one) made the
    second call's result pair with the first call and the next request was refused."""
    from dialects import Tool

    fake.strict_tool_history = True
    replies = iter([
        CHAT.reply(Script((Tool("call_0", "add_reminder", {"content": "a"}), Tool("call_0", "add_reminder", {"content": "b"})))),
        CHAT.reply(Script((Tool("call_0", "add_reminder", {"content": "c"}),))),
    ])  # fmt: skip
    fake.responder = lambda _: next(replies, CHAT.reply(Script((Text("All noted."),))))
    engine = await engine_for(workspace(tmp_path / "ws", fake.url))
    root = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(root, "Remember three things.")
    await engine.wait_idle(timeout=30)
    assert [f.status for f in finishes(engine, root.root_id)] == ["ok", "ok", "ok"], "no request was refused"
    assert sorted(r.content for r in root.files.read_reminders().reminders) == ["a", "b", "c"]
    last = json.dumps(fake.requests[-1].body)
    assert last.count('"role": "tool"') == 3
