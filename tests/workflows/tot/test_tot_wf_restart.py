"""ToT runs outlive the daemon: a real `dominds serve` process is SIGKILLed mid-run and started again.

The bug: the run list and the snapshots lived in the daemon's memory only. After a restart
``GET /api/tot/runs`` was empty, ``GET /api/tot/runs/{id}`` answered 404 "no ToT run … in this daemon",
so a deep link ``/tot?run=ID`` broke and past runs vanished from the page; and a run cut by the kill
kept ``status: running`` in its records forever. A daemon stopped (SIGTERM) mid-run recorded it as
``cancelled``, though nobody cancelled it.
"""

from __future__ import annotations

import json
import signal
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from chromium import launched_chromium
from cli.test_cli_kit import Daemon, wait_until
from tot_wf_kit import json_reply, write_workspace
from workflow_pages import CHROMIUM, CHROMIUM_PRESENT

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM_PRESENT, reason=f"{CHROMIUM} is not installed")]

SLOW_EVALUATOR = [
    json_reply("tot-decomposer", "decompose_task", {
        "thought_granularity": "equation", "intermediate_steps": [], "depth_estimate": 3, "constraints": [], "success_criteria": "24",
    }),
    json_reply("tot-generator", "generate_thoughts", {"candidates": [{"temp_id": "c", "content": "13 - 9 = 4 (left: 4 4 10)", "action_type": "-"}]}),
    # still scoring when the daemon is killed (minutes at this pace); the kill never waits for it
    {"agent": "tot-evaluator", "contains": "evaluate_thoughts", "response": "x " * 5000, "chunk_chars": 2, "delay_ms": 50},
]  # fmt: skip


def call(daemon: Daemon, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {**daemon.headers(), "Content-Type": "application/json"}
    request = urllib.request.Request(f"{daemon.http}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def stored_tree(ws: Path, root_id: str) -> dict[str, Any]:
    path = ws / ".dialogs" / "run" / root_id / "tot-run.json"
    return (json.loads(path.read_text()).get("tree") or {}) if path.exists() else {}


async def test_runs_and_their_trees_survive_a_kill_and_the_cut_run_reads_interrupted(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, SLOW_EVALUATOR)
    first = Daemon(ws)
    try:
        status, solved = call(first, "POST", "/api/tot/runs", {"problem": "4 9 10 13", "symbolic": True, "branching": 3})
        assert status == 201, solved
        wait_until(lambda: call(first, "GET", f"/api/tot/runs/{solved['runId']}")[1]["status"] != "running")
        status, cut = call(first, "POST", "/api/tot/runs", {"problem": "4 9 10 13"})
        assert status == 201, cut
        # the generator answered and the evaluator is busy: the thought it made is on disk
        wait_until(lambda: "node_1" in stored_tree(ws, cut["rootId"]).get("nodes", {}), timeout=60)
        first.stop(signal.SIGKILL)
    finally:
        first.stop(signal.SIGKILL)
    info = json.loads((ws / "logs" / cut["runId"] / "00-task-info.json").read_text())
    assert info["status"] == "running", "the kill left the seed's task info as it was (nothing rewrites it)"

    second = Daemon(ws)
    try:
        status, listed = call(second, "GET", "/api/tot/runs")
        assert status == 200
        assert [(r["runId"], r["status"]) for r in listed["runs"]] == [(solved["runId"], "completed"), (cut["runId"], "interrupted")]
        status, snapshot = call(second, "GET", f"/api/tot/runs/{cut['runId']}")
        assert status == 200, snapshot
        assert snapshot["status"] == "interrupted" and snapshot["rootId"] == cut["rootId"]
        assert snapshot["settings"]["strategy"] == "BFS" and "node_1" in snapshot["tree"]["nodes"]
        status, done = call(second, "GET", f"/api/tot/runs/{solved['runId']}")
        assert status == 200 and done["status"] == "completed" and done["solved"] is True
        assert "= 24" in done["solution"]["answer"] and len(done["layers"]) == 3 and len(done["tree"]["nodes"]) > 10
        status, refused = call(second, "POST", f"/api/tot/runs/{cut['runId']}/cancel")
        assert status == 409 and "interrupted" in refused["error"]
        assert call(second, "GET", "/api/tot/runs/tot-20250101-000000-nosuch")[0] == 404

        async with launched_chromium() as browser:  # the deep link of the cut run, opened after the restart
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.add_init_script("localStorage.setItem('dominds.uiLanguage', 'en')")
            await page.goto(f"{second.http}/tot?run={cut['runId']}&auth={second.token}")
            await page.wait_for_selector("#status.interrupted", timeout=15_000)
            assert await page.text_content("#status") == "interrupted"
            assert "interrupted" in (await page.text_content("#outcome") or "")
            assert await page.locator(".node").count() == 2  # the root and the thought it had made
            assert await page.locator("#cancel").is_hidden()
            await page.wait_for_function("document.querySelectorAll('#runs li').length === 2")
            assert "running" not in await page.inner_text("#runs")
            await page.locator("#runs li", has_text="solved").click()
            await page.wait_for_selector("#status.completed")
            assert await page.locator(".node").count() > 10
            assert errors == []
        # a daemon stopped (not killed) mid-run: the run it stops ends interrupted, not "cancelled" by nobody
        status, stopped = call(second, "POST", "/api/tot/runs", {"problem": "4 9 10 13"})
        assert status == 201, stopped
        wait_until(lambda: "node_1" in stored_tree(ws, stopped["rootId"]).get("nodes", {}), timeout=60)
    finally:
        second.stop(signal.SIGTERM)
    info = json.loads((ws / "logs" / stopped["runId"] / "00-task-info.json").read_text())
    assert info["status"] == "interrupted" and info["root_dialog_id"] == stopped["rootId"]
    assert "结果: 已中断" in (ws / "logs" / stopped["runId"] / "99-merged-timeline.log").read_text()
    with Daemon(ws) as third:
        assert [r["status"] for r in call(third, "GET", "/api/tot/runs")[1]["runs"]] == ["completed", "interrupted", "interrupted"]
        assert call(third, "GET", f"/api/tot/runs/{stopped['runId']}")[1]["status"] == "interrupted"
