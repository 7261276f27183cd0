"""The /tot page in real Chromium: start a symbolic run from the form and watch the tree appear."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tot_wf_kit import REPO_ROOT, write_workspace

from dominds.driver.engine import Engine
from dominds.server import make_app
from dominds.workflows.tot.web import add_routes

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
TOKEN = "tot-browser-token"

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed")]


async def test_the_page_starts_a_run_and_draws_its_tree_with_pruned_nodes(tmp_path: Path, aiohttp_server: Any) -> None:
    from playwright.async_api import async_playwright

    engine = Engine(write_workspace(tmp_path / "ws", []))
    await engine.start()
    app = make_app(engine, token=TOKEN)
    add_routes(app)
    server = await aiohttp_server(app)
    errors: list[str] = []
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"http://127.0.0.1:{server.port}/tot?auth={TOKEN}")
            assert "auth=" not in page.url, "the token leaves the address bar"
            await page.fill("#problem", "4 9 10 13")
            await page.check("#symbolic")
            await page.fill("#branching", "3")
            await page.click("button[type=submit]")
            await page.wait_for_selector("#status.completed", timeout=10_000)
            answer = await page.text_content("#answer")
            assert answer is not None and "= 24" in answer and "verified" in answer
            assert await page.locator("#layers tr").count() == 4  # header + 3 layers
            shown = await page.locator(".node").count()
            pruned = await page.locator(".node.pruned").count()
            assert shown > 100 and pruned > 0 and await page.locator(".node.best").count() == 4
            await page.check("#hidePruned")
            await page.wait_for_function(f"document.querySelectorAll('.node').length === {shown - pruned}")
            await page.screenshot(path=str(REPO_ROOT / "test-artifacts" / "tot-page.png"), full_page=False)
            await browser.close()
    finally:
        await engine.close()
    assert errors == []


async def test_an_unsolved_run_reads_as_unsolved_in_chinese(tmp_path: Path, aiohttp_server: Any) -> None:
    """The bug: the page showed a green "completed" with an empty answer when the search found nothing,
    was English only, and said "seed 000"."""
    from playwright.async_api import async_playwright

    engine = Engine(write_workspace(tmp_path / "ws", []))
    await engine.start()
    app = make_app(engine, token=TOKEN)
    add_routes(app)
    server = await aiohttp_server(app)
    errors: list[str] = []
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.add_init_script("localStorage.setItem('dominds.uiLanguage', 'zh')")
            await page.goto(f"http://127.0.0.1:{server.port}/tot?auth={TOKEN}")
            assert await page.text_content("header strong") == "思维树"
            await page.fill("#problem", "1 1 1 1")  # no way to make 24
            await page.check("#symbolic")
            await page.click("button[type=submit]")
            await page.wait_for_selector("#status.unsolved", timeout=10_000)
            assert await page.text_content("#status") == "未解决"
            assert await page.locator("#status.completed").count() == 0 and await page.locator(".status.completed").count() == 0
            outcome = await page.text_content("#outcome")
            assert outcome is not None and outcome.startswith("未解决：搜索没有保留任何思维") and "SEARCH_EXHAUSTED" in outcome
            assert (await page.text_content("#answerHeading")) == "最佳尝试——不是解"
            answer = await page.text_content("#answer") or ""
            assert "未验证" in answer and "已验证" not in answer
            body = await page.inner_text("body")
            assert "seed" not in body.lower() and "completed" not in body
            await page.screenshot(path=str(REPO_ROOT / "test-artifacts" / "tot-page-unsolved-zh.png"), full_page=False)
            await page.select_option("#lang", "en")
            await page.wait_for_function("document.getElementById('status').textContent === 'unsolved'")
            assert (await page.text_content("#answerHeading")) == "Best attempt — not a solution"
            await browser.close()
    finally:
        await engine.close()
    assert errors == []
