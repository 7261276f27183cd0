"""A debate with no usable provider fails clearly; a huge question is refused at the edge.

The bugs: with no usable provider (a rejected key, or an offline workspace with no script for the
debate roles) every agent step failed or answered "Scripted response not found", the host computed a
consensus over those texts, the Reporter's fallback wrote a report and the command exited 0. A
297,000-character question was accepted and sent to every agent in every round.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_debate_kit import (
    AngleEmbedder,
    critic_answer,
    parse_sse,
    planner_answer,
    reporter_answer,
    step,
    write_workspace,
)

from dominds.cli.main import main
from dominds.driver.engine import Engine
from dominds.server import keys
from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.state import load_state
from dominds.workflows.debate.web import COMPARER_FACTORY, add_routes

REJECTED = {"error": {"kind": "rejected", "status": 401, "message": "invalid x-api-key"}}


def rejected(role: str) -> dict[str, Any]:
    return {**step(role, 1, "unused"), **REJECTED}


@pytest.mark.parametrize(
    "responses",
    [
        pytest.param([rejected("planner"), rejected("critic")], id="provider-rejects-the-key"),
        pytest.param([], id="offline-workspace-with-no-script-for-the-debate"),
    ],
)
def test_no_usable_provider_fails_without_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], responses: list[dict[str, Any]]
) -> None:
    ws = tmp_path / "ws"
    rtws = write_workspace(ws, responses, "embedder: {kind: jaccard}\n")
    out = tmp_path / "report.md"
    assert main(["-C", str(ws), "debate", "How do I prepare for IELTS?", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert not out.exists() and "final report" not in printed and "host:" not in printed
    error = next(line for line in captured.err.splitlines() if line.startswith("error: "))
    assert "no debater gave a usable answer in round 1" in error and "debate-planner" in error and "debate-critic" in error
    assert f"resume with: dominds -C {ws} debate --resume" in printed, "the printed next step works as typed"
    [root] = (ws / ".dialogs" / "run").iterdir()
    state = load_state(root)
    assert state.status == "interrupted" and state.current_round == 0 and state.history == []
    assert state.stop_reason is not None and state.stop_reason.startswith("failed: no debater gave a usable answer")
    assert rtws.root.joinpath(".dialogs").exists()


async def test_sse_reports_the_failure_and_never_a_consensus(tmp_path: Path, aiohttp_client: Any) -> None:
    engine = Engine(write_workspace(tmp_path / "ws", [rejected("planner"), rejected("critic")], "embedder: {kind: jaccard}\n"))
    await engine.start()
    try:
        app = web_app(engine)
        client = await aiohttp_client(app)
        resp = await client.post("/api/multi-agent", json={"message": "How do I prepare for IELTS?", "mode": "multi_agent"})
        assert resp.status == 200
        events, _, done_last = parse_sse(await resp.text())
        assert done_last
        kinds = [e["type"] for e in events]
        assert "host_decision" not in kinds and "final_report" not in kinds
        assert kinds[-2:] == ["session_interrupted", "error"] or kinds[-2:] == ["error", "session_interrupted"]
        error = next(e for e in events if e["type"] == "error")
        assert "no debater gave a usable answer in round 1" in error["error"] and "invalid x-api-key" in error["error"]
        saved = await client.get(f"/api/multi-agent/{events[0]['sessionId']}")
        assert (await saved.json())["status"] == "interrupted"
    finally:
        await engine.close()


def web_app(engine: Engine) -> Any:
    from aiohttp import web

    app = web.Application()
    app[keys.ENGINE] = engine
    add_routes(app)
    return app


async def test_a_huge_question_is_refused_before_any_agent_sees_it(tmp_path: Path, aiohttp_client: Any) -> None:
    engine = Engine(write_workspace(tmp_path / "ws", [
        step("planner", 1, planner_answer(1, 0), max_rounds=1),
        step("critic", 1, critic_answer(1, 10), max_rounds=1),
        step("reporter", 1, reporter_answer(), max_rounds=1),
    ]))  # fmt: skip
    await engine.start()
    try:
        client = await aiohttp_client(web_app(engine))
        resp = await client.post("/api/multi-agent", json={"message": "p" * 297_000, "mode": "multi_agent"})
        assert resp.status == 400
        assert "297,000 characters; at most 10,000" in (await resp.json())["error"]
        assert not list((tmp_path / "ws" / ".dialogs" / "run").iterdir()), "no run was created"
    finally:
        await engine.close()


def test_the_cli_refuses_a_huge_question_as_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, [])
    assert main(["-C", str(ws), "debate", "x" * 297_000]) == 2
    assert "297,000 characters; at most 10,000" in capsys.readouterr().err



async def test_a_provider_lost_in_a_later_round_stops_there_without_a_report(tmp_path: Path, aiohttp_client: Any) -> None:
    """The same failure after a good round 1 (a key revoked, a quota spent mid-run): round 2 has nothing
    to compare, so the run stops there with round 1 kept, instead of reporting on fallback texts."""
    engine = Engine(write_workspace(tmp_path / "ws", [
        step("planner", 1, planner_answer(1, 0)),
        step("critic", 1, critic_answer(1, 60)),  # consensus 0.5: force opposition, round 2 follows
        {**step("critic", 2, "unused"), **REJECTED},
        {**step("planner", 2, "unused"), **REJECTED},
        step("reporter", 2, reporter_answer()),
    ]))  # fmt: skip
    await engine.start()
    try:
        app = web_app(engine)
        app[COMPARER_FACTORY] = lambda: PositionComparer(AngleEmbedder())
        client = await aiohttp_client(app)
        resp = await client.post("/api/multi-agent", json={"message": "How do I prepare for IELTS?"})
        events, _, done_last = parse_sse(await resp.text())
        assert done_last
        kinds = [e["type"] for e in events]
        assert [e["action"] for e in events if e["type"] == "host_decision"] == ["force_opposition"], "round 1 only"
        assert "final_report" not in kinds and "session_interrupted" in kinds
        error = next(e for e in events if e["type"] == "error")
        assert "no debater gave a usable answer in round 2" in error["error"] and "invalid x-api-key" in error["error"]
        state = (await (await client.get(f"/api/multi-agent/{events[0]['sessionId']}")).json())
        assert state["status"] == "interrupted" and state["current_round"] == 1 and len(state["history"]) == 1
        assert state["final_report"] is None and state["stop_reason"].startswith("failed: no debater gave a usable answer in round 2")
        assert {role: slot["status"] for role, slot in state["agents"].items()}["reporter"] == "idle", "the reporter never ran"
    finally:
        await engine.close()
