"""A past Plan & Solve run can be opened and read: its plan, its slides, how it ended, after a restart.

The bug: the page listed past runs (question, status, a .pptx link) but could not open one, and the run
record did not even keep the plan, so after the run (or a restart) nobody could read what was planned.
Now ``plan-solve-run.json`` keeps the plan as soon as the planner answers (``accepted: false`` while it
waits for the user) and again once accepted, with the user's edits; the page opens a run from its list
(``?run=<id>``) and shows the plan, the deck's slides, the final text and the downloads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chromium import launched_chromium
from ps_kit import task, world, write_workspace

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import make_app
from dominds.workflows.mount import route_adders, workflow_extensions

TOKEN = "plan-solve-past-token"
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"


async def _record(served: Any, run_id: str) -> tuple[int, dict[str, Any]]:
    answer = await served.client.get(f"/api/plan-solve/runs/{run_id}")
    return answer.status, await answer.json()


async def test_the_run_record_keeps_the_plan_offered_then_the_plan_accepted(serve: Any) -> None:
    served = await serve(world([1, 2, 3]), require_plan_confirmation=True)
    sock = await served.session()
    await sock.ask("Three slides please")
    confirm = await sock.until("agent.user_confirm")
    run_id = next(e for e in sock.events if e["event"] == "plan.start")["metadata"]["dialog_id"]
    status, offered = await _record(served, run_id)
    assert status == 200 and offered["status"] == "running"
    assert offered["plan"]["accepted"] is False and offered["plan"]["summary"] == "A plan", "kept before the user answers"
    assert [t["id"] for t in offered["plan"]["tasks"]] == [1, 2, 3]

    edited = [task(2, "Edited two"), task(1)]
    await sock.send_in_session("user.response", step_id=confirm["step_id"], content={"confirmed": True, "tasks": edited})
    await sock.finish()
    _, done = await _record(served, run_id)
    assert done["status"] == "completed" and done["plan"]["accepted"] is True
    assert [(t["id"], t["title"]) for t in done["plan"]["tasks"]] == [(1, task(1)["title"]), (2, "Edited two")]
    assert done["plan"]["tasks"][0]["objective"] == task(1)["objective"]

    status, missing = await _record(served, "0nosuchrun-0000")
    assert status == 404 and missing == {"error": "no Plan & Solve run '0nosuchrun-0000'"}


async def _serve_page(rtws: Rtws, aiohttp_server: Any) -> tuple[Engine, str]:
    engine = Engine(rtws, extensions=workflow_extensions())
    await engine.start()
    server = await aiohttp_server(make_app(engine, token=TOKEN, extra_routes=route_adders()))
    return engine, f"http://127.0.0.1:{server.port}"


@pytest.mark.browser
async def test_a_past_run_opens_from_the_list_after_a_restart_and_reads_like_the_live_one(
    tmp_path: Path, aiohttp_server: Any
) -> None:
    rtws = write_workspace(tmp_path / "ws", world([1, 2]))
    errors: list[str] = []
    async with launched_chromium() as browser:
        engine, base = await _serve_page(rtws, aiohttp_server)
        try:  # a run made on the page by the first daemon
            page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{base}/plan-solve?auth={TOKEN}")
            await page.wait_for_selector("#start:not([disabled])")
            await page.fill("#question", "Two slides on sales")
            await page.uncheck("#confirm-plan")
            await page.click("#start")
            await page.wait_for_selector("#result-section:not([hidden])", timeout=20_000)
            live_slides = await page.locator("#slides .slide h3").all_inner_texts()
            await page.context.close()
        finally:
            await engine.close()

        engine, base = await _serve_page(rtws, aiohttp_server)  # the daemon again: nothing in memory
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 900})
            page = await context.new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{base}/plan-solve?auth={TOKEN}")
            link = page.locator("#runs a.open-run", has_text="Two slides on sales")
            await link.click()
            await page.wait_for_selector("#result-section:not([hidden])")
            assert "?run=" in page.url
            assert await page.inner_text("#status") == "An earlier run (completed), read from its files."
            assert await page.inner_text("#plan-summary") == "A plan"
            assert await page.locator("#plan-tasks li").count() == 2
            assert await page.locator("#slides .slide h3").all_inner_texts() == live_slides
            assert await page.locator("#slides .slide .badge").all_inner_texts() == ["done", "done"]
            assert await page.locator("#slides .chart svg").count() == 2
            assert await page.locator(".slide .actions").count() == 0, "nothing to cancel in a past run"
            assert "slides" in await page.inner_text("#final-text")
            assert await page.get_attribute("#download-pptx", "href") == f"/api/plan-solve/runs/{page.url.split('run=')[1]}/deck.pptx"
            assert await page.input_value("#question") == "Two slides on sales"
            await page.screenshot(path=str(ARTIFACTS / "plan-solve-past-run.png"), full_page=True)

            await page.reload()  # the address keeps the run open
            await page.wait_for_selector("#result-section:not([hidden])")
            assert await page.locator("#slides .slide").count() == 2

            # a record written before plans were kept: the deck's slides are shown, and why there is no plan
            run_id = page.url.split("run=")[1]
            record_file = rtws.dialogs_dir / "run" / run_id / "plan-solve-run.json"
            record = json.loads(record_file.read_text())
            del record["plan"]
            record_file.write_text(json.dumps(record))
            await page.reload()
            await page.wait_for_selector("#result-section:not([hidden])")
            assert await page.locator("#slides .slide h3").all_inner_texts() == live_slides
            assert "plan was not kept" in await page.inner_text("#stats")

            await page.goto(f"{base}/plan-solve?run=0nosuchrun-0000")
            await page.wait_for_selector("#error:not([hidden])")
            assert await page.inner_text("#error") == "Run 0nosuchrun-0000 cannot be opened: no Plan & Solve run '0nosuchrun-0000'"
            await context.close()
        finally:
            await engine.close()
    assert errors == []
