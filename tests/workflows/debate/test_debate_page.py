"""The /debate page in real Chromium, mounted on the daemon's app with its token guard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_debate_kit import (
    AngleEmbedder,
    critic_answer,
    planner_answer,
    reporter_answer,
    step,
    write_workspace,
)

from dominds.driver.engine import Engine
from dominds.server import make_app
from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.web import COMPARER_FACTORY, add_routes

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_PRESENT = CHROMIUM.exists()
TOKEN = "debate-page-token"
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
pytestmark = pytest.mark.browser


async def test_the_page_streams_rounds_positions_and_the_trend(tmp_path: Path, aiohttp_server: Any) -> None:
    if not CHROMIUM_PRESENT:
        pytest.skip(f"{CHROMIUM} is not installed")
    from playwright.async_api import async_playwright

    engine = Engine(write_workspace(tmp_path / "ws", [
        step("planner", 1, planner_answer(1, 0)),
        step("critic", 1, critic_answer(1, 60)),
        step("critic", 2, critic_answer(2, 5)),
        step("planner", 2, planner_answer(2, 0)),
        step("reporter", 2, reporter_answer("Final plan")),
    ]))
    await engine.start()
    app = make_app(engine, token=TOKEN)
    app[COMPARER_FACTORY] = lambda: PositionComparer(AngleEmbedder())
    add_routes(app)
    server = await aiohttp_server(app)
    errors: list[str] = []
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox"])
            page = await browser.new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            await page.goto(f"http://127.0.0.1:{server.port}/debate?auth={TOKEN}")
            await page.fill("#question", "IELTS plan?")
            await page.click("#start")
            await page.wait_for_selector("#report-section:not([hidden])", timeout=10_000)
            assert (await page.inner_text("#report")).startswith("# Final plan")
            assert await page.locator(".round").count() == 2
            assert await page.locator(".host .badge").all_inner_texts() == ["force opposition", "converge"]
            assert await page.locator("#chart circle").count() == 2
            assert "converged" in await page.inner_text("#status")
            assert await page.inner_text("#similarity") == "Positions compared by embeddings (angle). Converge above 0.90, force opposition at or below 0.70."
            assert await page.locator("#agents li.completed").count() == 4 and await page.locator("#error").is_hidden()
            assert "auth=" not in page.url, "the token left the address bar"
            await browser.close()
    finally:
        await engine.close()
    assert errors == []


async def test_a_failed_debate_is_shown_as_a_failure_in_chinese(tmp_path: Path, aiohttp_server: Any) -> None:
    """The bug: with no usable provider the page showed a consensus and a report computed over
    "Scripted response not found" texts, in English only."""
    if not CHROMIUM_PRESENT:
        pytest.skip(f"{CHROMIUM} is not installed")
    from playwright.async_api import async_playwright

    engine = Engine(write_workspace(tmp_path / "ws", [], "embedder: {kind: jaccard}\n"))  # no answers for any role
    await engine.start()
    app = make_app(engine, token=TOKEN)
    add_routes(app)
    server = await aiohttp_server(app)
    errors: list[str] = []
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox"])
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.add_init_script("localStorage.setItem('dominds.uiLanguage', 'zh')")
            await page.goto(f"http://127.0.0.1:{server.port}/debate?auth={TOKEN}")
            assert await page.inner_text("header h1") == "辩论"
            await page.fill("#question", "帮我制定IELTS备考计划")
            await page.click("#start")
            await page.wait_for_selector("#error:not([hidden])", timeout=10_000)
            assert "辩论失败" in await page.inner_text("#status")
            assert "no debater gave a usable answer in round 1" in await page.inner_text("#error")
            assert await page.locator("#report-section").is_hidden()
            assert await page.locator(".host").count() == 0 and await page.locator("#chart circle").count() == 0
            assert await page.inner_text("#similarity") == "立场按词语重叠（Jaccard）比较。"
            body = await page.inner_text("body")
            assert "seed" not in body.lower() and "共识 " not in body
            await page.screenshot(path=str(ARTIFACTS / "debate-page-failed-zh.png"))
            await page.select_option("#lang", "en")
            await page.wait_for_function("document.querySelector('header h1').textContent === 'Debate'")
            assert "The debate failed" in await page.inner_text("#status")
            await browser.close()
    finally:
        await engine.close()
    assert errors == []
