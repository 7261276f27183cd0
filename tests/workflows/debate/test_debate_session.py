"""A debate on the real engine with scripted teammates: state, fallbacks, timeouts, budget, resume."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_debate_kit import (
    AngleEmbedder,
    critic_answer,
    planner_answer,
    reporter_answer,
    set_responses,
    started_engine,
    step,
    write_workspace,
)

from dominds.workflows.debate.launch import open_debate
from dominds.workflows.debate.session import ACTIVE_SESSIONS
from dominds.workflows.debate.settings import DebateSettings
from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.state import STATE_FILE_NAME, load_state


def converge_in_round_one() -> list[dict[str, Any]]:
    return [
        step("planner", 1, planner_answer(1, 0)),
        step("critic", 1, critic_answer(1, 10)),
        step("reporter", 1, reporter_answer()),
    ]


async def test_a_converging_debate_persists_the_seed_state_in_the_root_dialog(tmp_path: Path) -> None:
    rtws = write_workspace(tmp_path / "ws", converge_in_round_one())
    async with started_engine(rtws) as engine:
        events: list[dict[str, Any]] = []
        session = await open_debate(engine, emit=events.append, question="IELTS plan?", comparer=PositionComparer(AngleEmbedder()))
        state = await session.run_to_end()
        assert state.status == "converged" and state.current_round == 1
        assert [e["type"] for e in events if e["type"] != "agent_status"] == [
            "session_start", "agent_output", "agent_output", "host_decision", "final_report",
        ]  # fmt: skip
        decision = next(e for e in events if e["type"] == "host_decision")
        assert (decision["action"], decision["consensus_level"], decision["similarity_method"]) == ("converge", 0.9848, "embedding:angle")
        assert decision["most_different_pair"] == [0, 1] and decision["similarity_matrix"][0][1] == 0.9848
        assert events[-1]["content"].startswith("# IELTS plan") and events[-1]["plan"]["consensus_level"] == "high"
        saved = json.loads((session.run.root.files.dir / STATE_FILE_NAME).read_text())
        assert saved["format"] == "dominds.debate-state" and saved["version"] == 1
        assert {k: saved[k] for k in ("user_query", "mode", "status", "current_round", "max_rounds", "consensus_trend")} == {
            "user_query": "IELTS plan?", "mode": "multi_agent", "status": "converged", "current_round": 1, "max_rounds": 5,
            "consensus_trend": [0.9848],
        }
        assert set(saved["agents"]) == {"planner", "critic", "host", "reporter"}
        assert saved["agents"]["planner"]["last_output"]["metadata"]["position"]["changes_from_last_round"] == {
            "conclusion_changed": False, "reasons_added": [], "confidence_delta": 0.0
        }
        assert [o["agent_id"] for o in saved["history"][0]["outputs"]] == ["planner", "critic"]
        assert saved["history"][0]["host_decision"]["output_type"] == "control"
        root = session.run.root
        assert root.meta.conductor == "debate" and root.agent_id == "debate-host"
        assert len(engine.store.subdialog_ids("run", root.root_id)) == 3, "planner, critic and reporter were subdialogs"
        assert not ACTIVE_SESSIONS


async def test_broken_json_gets_fallbacks_and_the_debate_still_reports(tmp_path: Path) -> None:
    responses = [
        step("planner", 1, "Start with vocabulary angle=0. Then grammar."),  # no JSON at all
        step("critic", 1, '```json\n{"content": "ok", "metadata": {"position": {"conclusion": "fine angle=5"'),  # truncated
        step("reporter", 1, "Sorry, I cannot write JSON today."),
    ]
    rtws = write_workspace(tmp_path / "ws", responses)
    async with started_engine(rtws) as engine:
        events: list[dict[str, Any]] = []
        session = await open_debate(engine, emit=events.append, question="q", comparer=PositionComparer(AngleEmbedder()))
        state = await session.run_to_end()
    outputs = {e["agent"]: e for e in events if e["type"] == "agent_output"}
    assert outputs["planner"]["fallback"] == "unparsable_json"
    assert outputs["planner"]["position"]["conclusion"] == "Start with vocabulary angle=0."
    assert outputs["critic"]["fallback"] is None and outputs["critic"]["position"]["conclusion"] == "fine angle=5"
    report = events[-1]
    assert report["type"] == "final_report" and report["fallback"] == "unparsable_json"
    assert "could not write this report" in report["content"] and state.status == "converged"


async def test_a_timed_out_agent_is_skipped_and_its_last_output_reused(tmp_path: Path) -> None:
    slow = {"chunk_chars": 1, "delay_ms": 50}
    responses = [
        step("planner", 1, planner_answer(1, 0)),
        step("critic", 1, critic_answer(1, 30)),
        step("planner", 2, planner_answer(2, 0), **slow),  # times out
        step("critic", 2, critic_answer(2, 5)),
        step("reporter", 2, reporter_answer()),
    ]
    rtws = write_workspace(tmp_path / "ws", responses)
    async with started_engine(rtws) as engine:
        events: list[dict[str, Any]] = []
        settings = replace(DebateSettings(), agent_timeout_s=0.3)
        session = await open_debate(engine, emit=events.append, question="q", settings=settings, comparer=PositionComparer(AngleEmbedder()))
        state = await session.run_to_end()
        dead = [engine.get_dialog(state.session_id, s) for s in engine.store.subdialog_ids("run", state.session_id)]
    error = next(e for e in events if e["type"] == "agent_error")
    assert error == {"type": "agent_error", "error": "agent_timeout", "agent": "planner", "round": 2,
                     "action": "skip_agent", "fallback": "use_last_output"}
    reused = next(e for e in events if e["type"] == "agent_output" and e["round"] == 2 and e["agent"] == "planner")
    assert reused["fallback"] == "reused_last_output" and reused["metadata"]["reused_from_round"] == 1
    assert reused["content"] == "Plan of round 1."
    second = [e for e in events if e["type"] == "host_decision"][1]
    assert second["self_similarity"] == {"planner": None, "critic": 0.9063}, "a reused output is not a stubborn signal"
    assert state.status == "converged" and state.agents["planner"].status == "skipped"
    assert sum(d.latest.run_state.kind == "dead" for d in dead) == 1


async def test_the_token_budget_terminates_the_run(tmp_path: Path) -> None:
    responses = [
        step("planner", 1, planner_answer(1, 0)),
        step("critic", 1, critic_answer(1, 30)),
        step("reporter", 1, reporter_answer()),
    ]
    rtws = write_workspace(tmp_path / "ws", responses)
    async with started_engine(rtws) as engine:
        events: list[dict[str, Any]] = []
        settings = replace(DebateSettings(), run_token_budget=300)  # round 1 costs 2 × 150 tokens
        session = await open_debate(engine, emit=events.append, question="q", settings=settings, comparer=PositionComparer(AngleEmbedder()))
        state = await session.run_to_end()
    decision = next(e for e in events if e["type"] == "host_decision")
    assert decision["action"] == "terminate" and decision["tokens_used"] == 300
    assert decision["instructions"]["status"] == "token_budget_reached"
    assert state.status == "terminated"


async def test_a_stopped_run_resumes_from_its_last_completed_round_after_a_restart(tmp_path: Path) -> None:
    stuck = {"chunk_chars": 1, "delay_ms": 200}
    responses = [
        step("planner", 1, planner_answer(1, 0)),
        step("critic", 1, critic_answer(1, 60)),  # 0.5: force_opposition, the critic speaks first in round 2
        step("critic", 2, critic_answer(2, 5), also="devil's advocate", **stuck),
    ]
    rtws = write_workspace(tmp_path / "ws", responses)
    async with started_engine(rtws) as engine:
        first: list[dict[str, Any]] = []
        critic_in_round_two = asyncio.Event()

        def record(event: dict[str, Any]) -> None:
            first.append(event)
            if event == {"type": "agent_status", "agent": "critic", "status": "running", "round": 2}:
                critic_in_round_two.set()

        session = await open_debate(engine, emit=record, question="q", comparer=PositionComparer(AngleEmbedder()))
        task = asyncio.create_task(session.run_to_end())
        # the critic's round-2 step is under way (was a fixed 0.1-s sleep after round 1's decision: under load
        # the step had not begun, or had ended, when the stop came)
        await asyncio.wait_for(critic_in_round_two.wait(), 30)
        assert session.stop("user_stop")
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled()
        session_id = session.session_id
    saved = load_state(session.run.root.files.dir)
    assert (saved.status, saved.stop_reason, saved.current_round) == ("interrupted", "user_stop", 1)
    assert first[-1] == {"type": "session_interrupted", "sessionId": session_id, "completedRounds": 1, "reason": "user_stop"}
    set_responses(rtws, [
        step("critic", 2, critic_answer(2, 5), also="devil's advocate"),
        step("planner", 2, planner_answer(2, 0)),
        step("reporter", 2, reporter_answer()),
    ])
    async with started_engine(rtws) as engine:  # a new engine on the same workspace: a restart
        second: list[dict[str, Any]] = []
        resumed = await open_debate(engine, emit=second.append, resume_id=session_id, comparer=PositionComparer(AngleEmbedder()))
        state = await resumed.run_to_end()
        subs = [engine.get_dialog(session_id, s) for s in engine.store.subdialog_ids("run", session_id)]
    assert second[0]["type"] == "session_start" and second[0]["resumedFromRound"] == 1
    assert [h["action"] for h in second[0]["history"]] == ["force_opposition"]
    assert [(e["agent"], e["round"]) for e in second if e["type"] == "agent_output"] == [("critic", 2), ("planner", 2)]
    assert state.status == "converged" and [r.round for r in state.history] == [1, 2]
    assert state.consensus_trend == [0.5, 0.9962]
    # round 1 was not asked again: its 2 steps, the abandoned critic step, round 2's 2 steps, the reporter
    assert len(subs) == 6
    assert sum(s.latest.run_state.kind == "dead" for s in subs) == 1


async def test_a_run_stopped_while_the_reporter_writes_resumes_with_the_report_only(tmp_path: Path) -> None:
    responses = [*converge_in_round_one()[:2], step("reporter", 1, reporter_answer(), chunk_chars=1, delay_ms=100)]
    rtws = write_workspace(tmp_path / "ws", responses)
    async with started_engine(rtws) as engine:
        decided = asyncio.Event()
        session = await open_debate(
            engine, emit=lambda e: decided.set() if e["type"] == "host_decision" else None,
            question="q", comparer=PositionComparer(AngleEmbedder()),
        )
        task = asyncio.create_task(session.run_to_end())
        await asyncio.wait_for(decided.wait(), 10)
        await asyncio.sleep(0.05)
        session.stop()
        await asyncio.gather(task, return_exceptions=True)
        set_responses(rtws, converge_in_round_one())
        events: list[dict[str, Any]] = []
        resumed = await open_debate(engine, emit=events.append, resume_id=session.session_id, comparer=PositionComparer(AngleEmbedder()))
        state = await resumed.run_to_end()
    assert [e["type"] for e in events if e["type"] != "agent_status"] == ["session_start", "final_report"]
    assert [(e["agent"], e["status"]) for e in events if e["type"] == "agent_status"] == [("reporter", "running"), ("reporter", "completed")]
    assert state.status == "converged" and state.current_round == 1 and state.agents["reporter"].status == "completed"


def test_the_state_file_round_trips_and_refuses_other_formats(tmp_path: Path) -> None:
    from dominds.workflows.debate.state import DebateState, DebateStateError, save_state

    state = DebateState(session_id="s1", user_query="q", max_rounds=3)
    save_state(tmp_path, state)
    again = load_state(tmp_path)
    assert again.to_json() == state.to_json() and again.agents["reporter"].status == "idle"
    raw = json.loads((tmp_path / STATE_FILE_NAME).read_text())
    for change, message in (({"version": 2}, "version 2"), ({"format": "x"}, "not a debate"), ({"status": "done"}, "status"),
                            ({"history": [{"round": 1}]}, "malformed")):
        (tmp_path / STATE_FILE_NAME).write_text(json.dumps({**raw, **change}))
        with pytest.raises(DebateStateError, match=message):
            load_state(tmp_path)


async def test_per_agent_token_limits_come_from_the_members_model_params(tmp_path: Path) -> None:
    rtws = write_workspace(tmp_path / "ws", [
        step("planner", 1, planner_answer(1, 0, content="Long plan. " + "word " * 100)),
        step("critic", 1, critic_answer(1, 10)),
        step("reporter", 1, reporter_answer()),
    ])
    rtws.team_yaml.write_text(rtws.team_yaml.read_text() + "  debate-planner: {model_params: {max_tokens: 20}}\n")
    async with started_engine(rtws) as engine:
        team = engine.config.get().team
        assert team.member("debate-critic").model_params == {"max_tokens": 2000}, "the seed's §10.2 default"
        assert team.member("debate-planner").hidden and team.member("debate-planner").toolsets == ("debate-time",)
        events: list[dict[str, Any]] = []
        session = await open_debate(engine, emit=events.append, question="q", comparer=PositionComparer(AngleEmbedder()))
        await session.run_to_end()
    planner = next(e for e in events if e["type"] == "agent_output" and e["agent"] == "planner")
    assert len(planner["content"]) == 80 and planner["content"].endswith("…"), "20 tokens ≈ 80 characters"
