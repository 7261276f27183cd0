"""Agent statuses are saved live (not only at round boundaries), and the §6.2 session object is served.

The bug: `debate-state.json` (and `GET /api/multi-agent/{id}`) changed agent statuses only when a round
ended: while the Critic was still thinking, the saved state said every agent was idle. There was no
endpoint for the seed's §6.2 `multi_agent_session` object.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from aiohttp import web
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
from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.web import COMPARER_FACTORY, add_routes


async def next_event(resp: Any) -> dict[str, Any]:
    while True:
        line = (await resp.content.readline()).decode()
        assert line, "the stream ended early"
        if line.startswith("data: {"):
            event: dict[str, Any] = json.loads(line[len("data: ") :])
            return event


async def test_statuses_are_saved_as_agents_work_and_the_session_object_grows_live(tmp_path: Path, aiohttp_client: Any) -> None:
    rtws = write_workspace(tmp_path / "ws", [
        step("planner", 1, planner_answer(1, 0), max_rounds=1),
        step("critic", 1, critic_answer(1, 10), max_rounds=1, chunk_chars=40, delay_ms=60),  # still thinking for a while
        step("reporter", 1, reporter_answer(), max_rounds=1),
    ])  # fmt: skip
    engine = Engine(rtws)
    await engine.start()
    try:
        app = web.Application()
        app[keys.ENGINE] = engine
        app[COMPARER_FACTORY] = lambda: PositionComparer(AngleEmbedder())
        add_routes(app)
        client = await aiohttp_client(app)
        resp = await client.post("/api/multi-agent", json={"message": "plan?", "maxRounds": 1})
        start = await next_event(resp)
        sid = start["sessionId"]
        while (event := await next_event(resp))["type"] != "agent_output":
            assert event["type"] == "agent_status"
        assert event["agent"] == "planner", "the slow critic answers second"

        saved = await (await client.get(f"/api/multi-agent/{sid}")).json()
        statuses = {role: slot["status"] for role, slot in saved["agents"].items()}
        assert statuses == {"planner": "completed", "critic": "running", "host": "waiting", "reporter": "idle"}
        on_disk = json.loads((rtws.root / ".dialogs" / "run" / sid / "debate-state.json").read_text())
        assert {role: slot["status"] for role, slot in on_disk["agents"].items()} == statuses, "persisted, not just in memory"

        live = await (await client.get(f"/api/multi-agent/{sid}/session")).json()
        assert live["type"] == "multi_agent_session" and live["sessionId"] == sid and live["status"] == "in_progress"
        [round_one] = live["rounds"]
        assert round_one["round"] == 1 and "hostDecision" not in round_one
        assert [(o["agent"], o["position"]["conclusion"][:12]) for o in round_one["outputs"]] == [("planner", "A three-phas")]
        assert "finalReport" not in live

        events, _, done_last = parse_sse((await resp.text()).lstrip("\n"))
        assert done_last and events[-1]["type"] == "final_report"
        running = [e for e in events if e["type"] == "agent_status" and e["status"] == "running"]
        assert [e["agent"] for e in running] == ["host", "reporter"], "host compares, then the reporter writes"

        done = await (await client.get(f"/api/multi-agent/{sid}/session")).json()
        assert done["status"] == "converged"
        [round_one] = done["rounds"]
        assert [o["agent"] for o in round_one["outputs"]] == ["planner", "critic"]
        assert round_one["hostDecision"]["action"] == "converge" and round_one["hostDecision"]["reason"]
        assert done["finalReport"]["content"].startswith("# IELTS plan") and "title" in done["finalReport"]["plan"]
        final = await (await client.get(f"/api/multi-agent/{sid}")).json()
        assert {role: slot["status"] for role, slot in final["agents"].items()} == dict.fromkeys(
            ("planner", "critic", "host", "reporter"), "completed"
        )
        assert (await client.get("/api/multi-agent/nope/session")).status == 404
    finally:
        await engine.close()
        await asyncio.sleep(0)
