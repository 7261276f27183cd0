"""POST /api/multi-agent on a real aiohttp server: full SSE transcripts, keep-alive, disconnect, stop, errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from deadlines import until
from test_debate_kit import (
    AngleEmbedder,
    critic_answer,
    parse_sse,
    planner_answer,
    reporter_answer,
    step,
    write_workspace,
)

from dominds.driver.engine import Engine
from dominds.server import keys
from dominds.workflows.debate.session import ACTIVE_SESSIONS
from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.state import load_state
from dominds.workflows.debate.web import COMPARER_FACTORY, add_routes

Serve = Callable[..., Awaitable[tuple[TestClient[Any, Any], Engine]]]


@pytest.fixture
async def serve(tmp_path: Path, aiohttp_client: Any) -> AsyncIterator[Serve]:
    engines: list[Engine] = []

    async def factory(responses: list[dict[str, Any]], debate_yaml: str | None = None) -> tuple[TestClient[Any, Any], Engine]:
        engine = Engine(write_workspace(tmp_path / "ws", responses, debate_yaml))
        await engine.start()
        engines.append(engine)
        app = web.Application()
        app[keys.ENGINE] = engine
        app[COMPARER_FACTORY] = lambda: PositionComparer(AngleEmbedder())
        add_routes(app)
        return await aiohttp_client(app), engine

    yield factory
    for engine in engines:
        await engine.close()


async def transcript(client: TestClient[Any, Any], body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    resp = await client.post("/api/multi-agent", json=body)
    assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
    events, comments, done_last = parse_sse(await resp.text())
    assert done_last, "the stream ends with data: [DONE]"
    return [e for e in events if e["type"] != "agent_status"], comments  # the seed's vocabulary; statuses: test_debate_live.py


def flow(events: list[dict[str, Any]]) -> list[str]:
    """Event types with agent and round, round 1's parallel pair sorted (its order is a race)."""
    out = []
    for e in events:
        if e["type"] == "agent_status":
            continue  # status changes are checked in test_debate_live.py
        label = e["type"] + (f":{e['agent']}{e['round']}" if e["type"] == "agent_output" else "")
        label += f":{e['action']}" if e["type"] == "host_decision" else ""
        out.append(label)
    if out[1:3] == ["agent_output:critic1", "agent_output:planner1"]:
        out[1:3] = out[2:0:-1]
    return out


async def test_transcript_converge_in_round_one(serve: Serve) -> None:
    client, _ = await serve([
        step("planner", 1, planner_answer(1, 0)),
        step("critic", 1, critic_answer(1, 10)),
        step("reporter", 1, reporter_answer("Converged plan")),
    ])
    events, _ = await transcript(client, {"message": "帮我制定IELTS备考计划", "mode": "multi_agent", "userId": "u", "conversationId": "c"})
    assert flow(events) == [
        "session_start", "agent_output:planner1", "agent_output:critic1", "host_decision:converge", "final_report"
    ]
    assert events[0]["question"] == "帮我制定IELTS备考计划" and events[0]["similarityMethod"] == "embedding:angle"
    planner = next(e for e in events if e.get("agent") == "planner")
    assert planner["content"] == "Plan of round 1." and planner["position"]["confidence"] == 0.8
    final = events[-1]
    assert (final["agent"], final["status"], final["plan"]["title"]) == ("reporter", "converged", "Converged plan")
    assert final["content"].startswith("# Converged plan")


async def test_transcript_force_opposition_then_converge(serve: Serve) -> None:
    client, _ = await serve([
        step("planner", 1, planner_answer(1, 0)),
        step("critic", 1, critic_answer(1, 60)),
        step("critic", 2, critic_answer(2, 5), also="devil's advocate"),
        step("planner", 2, planner_answer(2, 0), also="Critique of round 2."),  # answers this round's critique
        step("reporter", 2, reporter_answer()),
    ])
    events, _ = await transcript(client, {"message": "plan?", "mode": "multi_agent"})
    assert flow(events) == [
        "session_start", "agent_output:planner1", "agent_output:critic1", "host_decision:force_opposition",
        "agent_output:critic2", "agent_output:planner2", "host_decision:converge", "final_report",
    ]
    oppose = events[3]
    assert oppose["round"] == 1 and oppose["consensus_level"] == 0.5 and oppose["next_agents"] == ["critic", "planner"]
    assert oppose["instructions"]["role"] == "devils_advocate" and oppose["reason"].startswith("consensus 0.50 <= 0.70")
    assert events[-2]["consensus_trend"] == [0.5, 0.9962] and events[-2]["trend"] == "rising"


async def test_transcript_terminate_at_round_five(serve: Serve) -> None:
    angles = {1: (0, 60), 2: (0, 30), 3: (0, 60), 4: (0, 30), 5: (0, 60)}  # consensus 0.5, 0.87, 0.5, 0.87, 0.5
    responses = []
    for n, (planner_angle, critic_angle) in angles.items():
        also = "Update command from the host" if n == 4 else ""
        responses += [step("planner", n, planner_answer(n, planner_angle), also=also), step("critic", n, critic_answer(n, critic_angle))]
    responses.append(step("reporter", 5, reporter_answer("Disagreement"), also="disagreement version"))
    client, engine = await serve(responses)
    events, _ = await transcript(client, {"message": "plan?"})
    decisions = [e for e in events if e["type"] == "host_decision"]
    assert [d["action"] for d in decisions] == ["force_opposition", "continue", "force_opposition", "continue", "terminate"]
    assert [d["consensus_level"] for d in decisions] == [0.5, 0.866, 0.5, 0.866, 0.5]
    assert [d["stubborn_agents"] for d in decisions] == [[], [], ["planner"], ["planner"], ["planner"]]
    assert [c["target_agent"] for c in decisions[2]["commands"]] == ["planner"] and decisions[4]["commands"] == []
    assert decisions[4]["instructions"] == {
        "status": "max_rounds_reached", "action": "force_summary", "reporter_instruction": decisions[4]["instructions"]["reporter_instruction"]
    }
    speaking = [(e["agent"], e["round"]) for e in events if e["type"] == "agent_output" and e["round"] > 1]
    assert speaking == [("critic", 2), ("planner", 2), ("planner", 3), ("critic", 3), ("critic", 4), ("planner", 4),
                        ("planner", 5), ("critic", 5)]
    assert all(e["fallback"] is None for e in events if e["type"] == "agent_output"), "every scripted step matched"
    final = events[-1]
    assert final["type"] == "final_report" and final["status"] == "terminated" and final["plan"]["consensus_level"] == "low"
    assert len([e for e in events if e["type"] == "agent_output"]) == 10, "never more than 5 rounds"
    saved = load_state(engine.load_root(final["sessionId"]).files.dir)
    assert saved.consensus_trend == [0.5, 0.866, 0.5, 0.866, 0.5] and saved.status == "terminated"


async def test_keep_alive_comments_while_an_agent_thinks(serve: Serve) -> None:
    client, _ = await serve(
        [
            step("planner", 1, planner_answer(1, 0), chunk_chars=100, delay_ms=60),
            step("critic", 1, critic_answer(1, 10)),
            step("reporter", 1, reporter_answer()),
        ],
        debate_yaml="keepalive_s: 0.05\n",
    )
    events, comments = await transcript(client, {"message": "plan?"})
    assert events[-1]["type"] == "final_report"
    assert len(comments) >= 3 and set(comments) == {"keep-alive"}


async def test_a_client_that_disconnects_stops_the_run(serve: Serve) -> None:
    client, engine = await serve([
        step("planner", 1, planner_answer(1, 0), chunk_chars=1, delay_ms=100),
        step("critic", 1, critic_answer(1, 10)),
    ])
    resp = await client.post("/api/multi-agent", json={"message": "plan?"})
    start = json.loads((await resp.content.readline()).decode()[len("data: ") :])
    assert start["type"] == "session_start"
    resp.close()
    await until(lambda: not ACTIVE_SESSIONS, "the run stopped")
    saved = load_state(engine.load_root(start["sessionId"]).files.dir)
    assert (saved.status, saved.stop_reason, saved.current_round) == ("interrupted", "client_disconnected", 0)
    subs = [engine.get_dialog(start["sessionId"], s) for s in engine.store.subdialog_ids("run", start["sessionId"])]
    assert any(s.latest.run_state.kind == "dead" for s in subs), "the slow step was declared dead, not left running"


async def test_the_stop_endpoint_interrupts_a_running_debate(serve: Serve) -> None:
    slow = {"chunk_chars": 1, "delay_ms": 100}
    client, _ = await serve([step("planner", 1, planner_answer(1, 0), **slow), step("critic", 1, critic_answer(1, 0), **slow)])
    resp = await client.post("/api/multi-agent", json={"message": "plan?"})
    start = json.loads((await resp.content.readline()).decode()[len("data: ") :])
    stopped = await client.post(f"/api/multi-agent/{start['sessionId']}/stop")
    assert stopped.status == 200 and (await stopped.json())["stopped"] is True
    events, _, done_last = parse_sse((await resp.text()).lstrip("\n"))  # the rest of the first frame's blank line
    assert done_last and events[-1]["type"] == "session_interrupted" and events[-1]["reason"] == "user_stop"
    state = await client.get(f"/api/multi-agent/{start['sessionId']}")
    assert state.status == 200 and (await state.json())["status"] == "interrupted"
    again = await client.post(f"/api/multi-agent/{start['sessionId']}/stop")
    assert again.status == 404


async def test_requests_that_cannot_start_are_json_errors(serve: Serve) -> None:
    client, _ = await serve([
        step("planner", 1, planner_answer(1, 0), max_rounds=1),
        step("critic", 1, critic_answer(1, 10), max_rounds=1),
        step("reporter", 1, reporter_answer(), max_rounds=1),
    ])
    cases = [
        ({"message": "  "}, 400, "empty"),
        ({"message": "x", "mode": "single"}, 400, "mode"),
        ({"message": "x", "maxRounds": 6}, 400, "maxRounds"),
        ({"sessionId": "nope"}, 404, "no debate"),
    ]
    for body, status, words in cases:
        resp = await client.post("/api/multi-agent", json=body)
        assert resp.status == status and words in (await resp.json())["error"], body
    not_json = await client.post("/api/multi-agent", data=b"{oops", headers={"Content-Type": "application/json"})
    assert not_json.status == 400
    events, _ = await transcript(client, {"message": "plan?", "maxRounds": 1})
    assert events[-1]["status"] == "converged", "a last round that agrees converges"
    finished = await client.post("/api/multi-agent", json={"sessionId": events[0]["sessionId"]})
    assert finished.status == 409 and "already converged" in (await finished.json())["error"]
    assert (await client.get("/api/multi-agent/nope")).status == 404


async def test_the_debate_page_and_its_assets_are_served(serve: Serve) -> None:
    client, _ = await serve([])
    page = await client.get("/debate")
    html = await page.text()
    assert page.status == 200 and "/debate/static/debate.js" in html and "http" not in html.replace("http-equiv", "")
    script = await client.get("/debate/static/debate.js")
    assert script.status == 200 and "/api/multi-agent" in await script.text()


async def test_server_shutdown_interrupts_streaming_debates(serve: Serve) -> None:
    slow = {"chunk_chars": 1, "delay_ms": 100}
    client, _ = await serve([step("planner", 1, planner_answer(1, 0), **slow), step("critic", 1, critic_answer(1, 0), **slow)])
    resp = await client.post("/api/multi-agent", json={"message": "plan?"})
    await resp.content.readline()
    await client.server.app.shutdown()
    events, _, done_last = parse_sse((await resp.text()).lstrip("\n"))
    assert done_last and events[-1]["type"] == "session_interrupted" and events[-1]["reason"] == "server_shutdown"
