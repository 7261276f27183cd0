"""The panel side: ToT routes mounted into the daemon's real app (token, guard), a run started over
HTTP, its live tree snapshot, ``tot_tree_evt`` on the main websocket, cancel, and the /tot page."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient
from tot_wf_kit import json_reply, write_workspace

from dominds.driver.engine import Engine
from dominds.server import make_app
from dominds.workflows.tot.schemas import tree_errors
from dominds.workflows.tot.web import add_routes

TOKEN = "tot-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def client(tmp_path: Path, aiohttp_client: Any) -> AsyncIterator[TestClient[Any, Any]]:
    responses = [
        json_reply("tot-decomposer", "decompose_task", {
            "thought_granularity": "equation", "intermediate_steps": [], "depth_estimate": 3, "constraints": [], "success_criteria": "24",
        }),
        json_reply("tot-generator", "generate_thoughts", {"candidates": [{"temp_id": "c", "content": "13 - 9 = 4 (left: 4 4 10)", "action_type": "-"}]}),
        {"agent": "tot-evaluator", "contains": "evaluate_thoughts", "response": "x " * 2000, "chunk_chars": 2, "delay_ms": 5},
    ]  # fmt: skip
    engine = Engine(write_workspace(tmp_path / "ws", responses))
    await engine.start()
    app = make_app(engine, token=TOKEN)
    add_routes(app)
    yield await aiohttp_client(app)
    await engine.close()


async def wait_for_status(client: TestClient[Any, Any], run_id: str, timeout: float = 10.0) -> dict[str, Any]:
    async def poll() -> dict[str, Any]:
        while True:
            snapshot: dict[str, Any] = await (await client.get(f"/api/tot/runs/{run_id}", headers=AUTH)).json()
            if snapshot["status"] != "running":
                return snapshot
            await asyncio.sleep(0.02)

    return await asyncio.wait_for(poll(), timeout)


async def test_a_run_started_over_http_shows_its_tree_with_scores_and_pruned_nodes(client: TestClient[Any, Any]) -> None:
    ws = await client.ws_connect("/ws", protocols=("dominds", f"dominds-auth.{TOKEN}"))
    response = await client.post("/api/tot/runs", json={"problem": "4 9 10 13", "symbolic": True, "branching": 3}, headers=AUTH)
    assert response.status == 201
    started = await response.json()
    assert started["page"] == f"/tot?run={started['runId']}" and started["rootId"]
    snapshot = await wait_for_status(client, started["runId"])
    assert snapshot["status"] == "completed" and snapshot["solution"]["verification"]["is_valid"]
    assert snapshot["settings"]["branching_factor"] == 3 and [layer["depth"] for layer in snapshot["layers"]] == [1, 2, 3]
    tree = snapshot["tree"]
    assert tree_errors(tree) == []
    nodes = tree["nodes"].values()
    assert all(n["evaluation"] is not None for n in nodes if n["depth"] and n["status"] != "pruned")
    assert {n["metadata"]["prune_reason"] for n in nodes if n["status"] == "pruned"} >= {"below_threshold", "beam"}
    assert Path(snapshot["logDir"]).name == started["runId"]
    listed = await (await client.get("/api/tot/runs", headers=AUTH)).json()
    assert [r["runId"] for r in listed["runs"]] == [started["runId"]]
    kinds = set()
    while "run_done" not in kinds:
        msg = await asyncio.wait_for(ws.receive(), 5)
        assert msg.type == WSMsgType.TEXT
        event = json.loads(msg.data)
        if event.get("type") == "tot_tree_evt":
            assert event["runId"] == started["runId"]
            kinds.add(event["event"])
    assert {"search_started", "layer_done", "solution"} <= kinds
    await ws.close()


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"problem": ""}, "the problem is empty"),
        ({"problem": "   "}, "the problem is empty"),
        # the same words as `dominds tot` run here, not pydantic's "String should have at most 20000 characters"
        ({"problem": "x " * 12_500}, "the problem is 25,000 characters; at most 20,000 are accepted"),
        ({"problem": "write a poem", "symbolic": True}, "only solves Game-of-24"),
        ({"problem": "4 9 10 13", "depth": 99}, "depth must be"),
        ({"problem": "4 9 10 13", "strategy": "A*"}, "strategy"),
        ({"problem": "4 9 10 13", "taskType": "poetry"}, "unknown task type"),
        ({"problem": "4 9 10 13", "colour": "red"}, "colour"),
        ([1, 2], "body"),
    ],
)
async def test_bad_requests_are_answered_with_400_and_a_reason(client: TestClient[Any, Any], body: Any, why: str) -> None:
    response = await client.post("/api/tot/runs", json=body, headers=AUTH)
    assert response.status == 400 and why in (await response.json())["error"]


async def test_the_routes_are_guarded_and_unknown_runs_are_404(client: TestClient[Any, Any]) -> None:
    assert (await client.post("/api/tot/runs", json={"problem": "4 9 10 13", "symbolic": True})).status == 401
    assert (await client.get("/api/tot/runs/tot-nope", headers=AUTH)).status == 404
    assert (await client.post("/api/tot/runs", data="{not json", headers=AUTH)).status == 400


async def test_a_teammate_run_can_be_cancelled_from_the_panel(client: TestClient[Any, Any]) -> None:
    started = await (await client.post("/api/tot/runs", json={"problem": "4 9 10 13", "candidates": 1}, headers=AUTH)).json()

    async def evaluator_busy() -> None:  # the search has begun; the scripted evaluator takes seconds
        while True:
            if (await (await client.get(f"/api/tot/runs/{started['runId']}", headers=AUTH)).json())["tree"]:
                return await asyncio.sleep(0.1)
            await asyncio.sleep(0.02)

    await asyncio.wait_for(evaluator_busy(), 30)  # an upper bound, not a pace: 5 s failed at load 30
    cancelled = await (await client.post(f"/api/tot/runs/{started['runId']}/cancel", headers=AUTH)).json()
    assert cancelled["status"] == "cancelled"
    snapshot = await (await client.get(f"/api/tot/runs/{started['runId']}", headers=AUTH)).json()
    assert snapshot["status"] == "cancelled" and len(snapshot["tree"]["nodes"]) == 2
    info = json.loads((Path(snapshot["logDir"]) / "00-task-info.json").read_text())
    assert info["status"] == "cancelled"


async def test_the_tot_page_is_served_self_contained(client: TestClient[Any, Any]) -> None:
    response = await client.get("/tot")
    assert response.status == 200 and response.content_type == "text/html"
    html = await response.text()
    assert "/api/tot/runs" in html and "textContent" in html
    assert "src=\"http" not in html and "href=\"http" not in html, "nothing from a CDN"


async def test_a_run_is_never_listed_as_interrupted_while_it_runs_or_ends(client: TestClient[Any, Any]) -> None:
    """The run list reads the runs' files in a worker thread while runs go on (here a fast run that writes
    its file many times) and only then asks which runs are live, re-reading any that left meanwhile: a run
    is never listed as interrupted while it runs or as it ends. (The window this guards — a run's end
    written after its file was read as running — is too narrow to hit on purpose: this checks the
    invariant under load, it does not reproduce that race deterministically.)"""
    started = await (await client.post("/api/tot/runs", json={"problem": "4 9 10 13", "symbolic": True, "branching": 3}, headers=AUTH)).json()
    seen: list[str] = []
    while not seen or seen[-1] == "running":
        listed = await (await client.get("/api/tot/runs", headers=AUTH)).json()
        seen += [run["status"] for run in listed["runs"] if run["runId"] == started["runId"]]
    assert set(seen) <= {"running", "completed"} and seen[-1] == "completed", seen
