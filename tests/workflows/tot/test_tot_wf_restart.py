"""ToT runs outlive the daemon: a real `dominds serve` process is SIGKILLed mid-run and started again.

The bug: the run list and the snapshots lived in the daemon's memory only. After a restart
``GET /api/tot/runs`` was empty, ``GET /api/tot/runs/{id}`` answered 404 "no ToT run … in this daemon",
so a deep link ``/tot?run=ID`` broke and past runs vanished from the page; a page left open on a run
blanked its view when the daemon went away and never came back; and a run cut by the kill
kept ``status: running`` in its records forever. A daemon stopped (SIGTERM) mid-run recorded it as
``cancelled``, though nobody cancelled it.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from chromium import launched_chromium
from cli.test_cli_kit import Daemon, wait_until
from tot_wf_kit import SLOW_EVALUATOR, stored_tree, write_workspace
from tot_wf_kit import daemon_call as call
from workflow_pages import CHROMIUM, CHROMIUM_PRESENT

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM_PRESENT, reason=f"{CHROMIUM} is not installed")]

async def test_runs_and_their_trees_survive_a_kill_and_the_cut_run_reads_interrupted(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, SLOW_EVALUATOR)
    async with launched_chromium() as browser:
        errors: list[str] = []
        watching = await _page(browser, errors)
        first = Daemon(ws)
        try:
            status, solved = call(first, "POST", "/api/tot/runs", {"problem": "4 9 10 13", "symbolic": True, "branching": 3})
            assert status == 201, solved
            wait_until(lambda: call(first, "GET", f"/api/tot/runs/{solved['runId']}")[1]["status"] != "running")
            status, cut = call(first, "POST", "/api/tot/runs", {"problem": "4 9 10 13"})
            assert status == 201, cut
            # the generator answered and the evaluator is busy: the thought it made is on disk
            wait_until(lambda: "node_1" in stored_tree(ws, cut["rootId"]).get("nodes", {}))
            await watching.goto(f"{first.http}/tot?run={cut['runId']}&auth={first.token}")  # a page open on the run
            await watching.wait_for_selector("#status.running", timeout=15_000)
            first.stop(signal.SIGKILL)
        finally:
            first.stop(signal.SIGKILL)
        info = json.loads((ws / "logs" / cut["runId"] / "00-task-info.json").read_text())
        assert info["status"] == "running", "the kill left the seed's task info as it was (nothing rewrites it)"
        await watching.wait_for_selector("#connection:not([hidden])")  # says the daemon is away, keeps the tree
        assert await watching.locator(".node").count() == 2

        second = Daemon(ws, "--port", str(first.port))
        try:
            # the open page picks the run up again by itself, now interrupted
            await watching.wait_for_selector("#status.interrupted", timeout=20_000)
            assert await watching.locator("#connection").is_hidden()
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

            page = await _page(browser, errors)  # the deep link of the cut run, opened after the restart
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
            wait_until(lambda: "node_1" in stored_tree(ws, stopped["rootId"]).get("nodes", {}))
        finally:
            second.stop(signal.SIGTERM)
    info = json.loads((ws / "logs" / stopped["runId"] / "00-task-info.json").read_text())
    assert info["status"] == "interrupted" and info["root_dialog_id"] == stopped["rootId"]
    assert "结果: 已中断" in (ws / "logs" / stopped["runId"] / "99-merged-timeline.log").read_text()
    with Daemon(ws) as third:
        assert [r["status"] for r in call(third, "GET", "/api/tot/runs")[1]["runs"]] == ["completed", "interrupted", "interrupted"]
        assert call(third, "GET", f"/api/tot/runs/{stopped['runId']}")[1]["status"] == "interrupted"


async def _page(browser: Any, errors: list[str]) -> Any:
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.add_init_script("localStorage.setItem('dominds.uiLanguage', 'en')")
    return page
