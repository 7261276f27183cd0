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
