"""The /plan-solve page in real Chromium (Debian's /usr/bin/chromium via Playwright), mounted in the daemon's app.

Bug pinned here: Plan & Solve had no page in the panel (ToT and the debate had one). The page runs a
question, shows the plan for confirmation and editing, each slide's progress and queries with
cancel/restart, the finished deck as a download, in English and Chinese, and a failed run as a failure.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from chromium import launched_chromium
from pptx import Presentation
from ps_kit import planner, world, write_workspace

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import make_app
from dominds.store.course_records import HumanTextRecord
from dominds.workflows.mount import route_adders, workflow_extensions
from dominds.workflows.plan_solve.example.workspace import DEFAULT_QUESTION

TOKEN = "plan-solve-page-token"
TEMPLATE = Path(__file__).resolve().parents[3] / "rtws-template"
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
pytestmark = pytest.mark.browser


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with launched_chromium() as launched:
        yield launched


async def open_page(browser: Any, aiohttp_server: Any, rtws: Rtws, *, auth: bool = True) -> tuple[Any, Engine, list[str]]:
    engine = Engine(rtws, extensions=workflow_extensions())
    await engine.start()
    server = await aiohttp_server(make_app(engine, token=TOKEN, extra_routes=route_adders()))
    page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" and "4401" not in msg.text else None)
    await page.goto(f"http://127.0.0.1:{server.port}/plan-solve" + (f"?auth={TOKEN}" if auth else ""))
    return page, engine, errors


async def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


async def test_the_demo_plan_is_edited_confirmed_solved_and_downloaded(
    browser: Any, aiohttp_server: Any, tmp_path: Path
) -> None:
    shutil.copytree(TEMPLATE, tmp_path / "demo")
    page, engine, errors = await open_page(browser, aiohttp_server, Rtws(tmp_path / "demo"))
    try:
        await page.wait_for_selector("#start:not([disabled])")
        assert "auth=" not in page.url, "the token left the address bar"
        # the page's example is the demo question: the only one the offline demo answers
        assert DEFAULT_QUESTION in (await page.get_attribute("#question", "placeholder") or "")
        await page.fill("#question", DEFAULT_QUESTION)
        assert await page.is_checked("#confirm-plan")
        await page.click("#start")
        await page.wait_for_selector("#plan-editor:not([hidden])", timeout=15_000)
        assert "SELECT min(order_date)" in await page.inner_text("#plan-queries"), "the planner's query is shown"
        assert await page.locator("#task-list .task-edit").count() == 3
        await page.fill('.task-edit[data-task-id="2"] .task-title', "East and the other regions")
        await page.click('.task-edit[data-task-id="3"] .remove-task')
        await shot(page, "plan-solve-page-plan")
        await page.click("#confirm-btn")
        await page.wait_for_selector("#result-section:not([hidden])", timeout=20_000)
        assert await page.inner_text("#status") == "Done: the deck is ready."
        assert await page.locator("#status.good").count() == 1 and await page.locator("#error").is_hidden()
        cards = page.locator("#slides .slide")
        assert await cards.count() == 2, "slide 3 was removed from the plan"
        assert await page.locator("#slides .badge.completed").count() == 2
        first = await page.inner_text('#slides .slide[data-task-id="1"]')
        assert "GROUP BY quarter" in first and "8 rows" in first and "2 rows" in first
        assert await page.locator('#slides .slide[data-task-id="1"] .chart svg rect').count() == 8
        assert "LLM calls" in await page.inner_text("#stats")
        await shot(page, "plan-solve-page-done")
        href = await page.get_attribute("#download-pptx", "href")
        download = await page.request.get(await page.evaluate("document.getElementById('download-pptx').href"))
        assert download.status == 200 and "attachment" in download.headers["content-disposition"]
        deck = Presentation(io.BytesIO(await download.body()))
        assert len(deck.slides) == 3, "the cover and the two confirmed slides"
        root_id = href.split("/")[4]
        requests = [
            r.content
            for sub in engine.store.subdialog_ids(engine.store.locate_root(root_id), root_id)
            for n in engine.get_dialog(root_id, sub).files.course_numbers()
            for r in engine.get_dialog(root_id, sub).files.read_course(n)
            if isinstance(r, HumanTextRecord)
        ]
        assert any("Slide task #2: East and the other regions" in text for text in requests), requests
        await page.wait_for_selector("#runs li")
        assert "completed" in await page.inner_text("#runs")
        panel = await page.request.get(await page.evaluate("location.origin + '/'"))
        assert 'href="/plan-solve"' in await panel.text(), "the main panel links the page"
    finally:
        await engine.close()
    assert errors == []


async def test_slides_are_cancelled_and_restarted_from_their_cards(
    browser: Any, aiohttp_server: Any, tmp_path: Path
) -> None:
    rtws = write_workspace(tmp_path / "ws", world([1, 2, 3], slow_tasks={2: 6.0, 3: 4.0}))
    page, engine, errors = await open_page(browser, aiohttp_server, rtws)
    try:
        await page.wait_for_selector("#start:not([disabled])")
        await page.fill("#question", "Three slides")
        await page.uncheck("#confirm-plan")
        await page.click("#start")
        await page.wait_for_selector('#slides .slide[data-task-id="2"] .badge.running', timeout=10_000)
        await page.click('#slides .slide[data-task-id="2"] .cancel-slide')
        await page.wait_for_selector('#slides .slide[data-task-id="2"] .badge.cancelled', timeout=10_000)
        await page.click('#slides .slide[data-task-id="3"] .restart-slide')  # still working: 4 s
        await page.wait_for_selector('#notices li:has-text("Restart task request for 3 accepted")', timeout=10_000)
        await page.wait_for_selector("#result-section:not([hidden])", timeout=20_000)
        assert "Cancel task request for 2 accepted" in await page.inner_text("#notices")
        assert await page.locator('#slides .slide[data-task-id="3"] .badge.completed').count() == 1
        assert await page.locator('#slides .slide[data-task-id="2"] .badge.cancelled').count() == 1
        assert "cancelled: 2" in await page.inner_text("#final-text")
        await shot(page, "plan-solve-page-cancel-restart")
    finally:
        await engine.close()
    assert errors == []


async def test_a_failed_run_is_shown_as_a_failure_in_chinese_after_the_token_is_entered(
    browser: Any, aiohttp_server: Any, tmp_path: Path
) -> None:
    rejected = {**planner("{}"), "error": {"kind": "rejected", "status": 401, "message": "bad key for the planner"}}
    page, engine, errors = await open_page(browser, aiohttp_server, write_workspace(tmp_path / "ws", [rejected]), auth=False)
    try:
        await page.wait_for_selector("#token-form:not([hidden])")
        await page.select_option("#lang", "zh")
        assert await page.inner_text("#start") == "开始"
        await page.fill("#token", f"http://127.0.0.1/?auth={TOKEN}")
        await page.click("#token-form button[type=submit]")
        await page.wait_for_selector("#start:not([disabled])")
        await page.fill("#question", "分析数据并生成2页PPT")
        await page.click("#start")
        await page.wait_for_selector("#error:not([hidden])", timeout=10_000)
        assert "bad key for the planner" in await page.inner_text("#error")
        assert await page.inner_text("#status") == "运行失败。" and await page.locator("#status.bad").count() == 1
        assert await page.locator("#result-section").is_hidden() and await page.locator("#plan-section").is_hidden()
        assert await page.inner_text("h1") == "计划与求解"
        await shot(page, "plan-solve-page-failed-zh")
    finally:
        await engine.close()
    assert errors == []
