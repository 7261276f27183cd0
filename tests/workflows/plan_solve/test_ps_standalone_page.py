"""The /plan-solve page served by the standalone service (`dominds plan-solve serve`), in real Chromium.

The bug: the page was blank there. Its script imports ``/static/workflow_i18n.js`` (and the page links
``/static/workflow_theme.css``), files of the panel's static folder that only ``dominds serve`` served;
the standalone service answered them with 404, so the module graph failed and nothing ran. Screenshots
at 420 and 1280 px go to test-artifacts/ (``docs/images/plan-solve-standalone-<width>.png`` with DOMINDS_UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from chromium import launched_chromium, screenshot_dir
from ps_kit import write_workspace

from dominds.driver.engine import Engine
from dominds.workflows.plan_solve.settings import PlanSolveSettings
from dominds.workflows.plan_solve.web import make_standalone_app

IMAGES = screenshot_dir()  # docs/images/ with DOMINDS_UPDATE_SCREENSHOTS=1
pytestmark = pytest.mark.browser


async def test_the_standalone_page_loads_its_shared_scripts_and_runs(tmp_path: Path, aiohttp_server: Any) -> None:
    engine = Engine(write_workspace(tmp_path / "ws", []))
    await engine.start()
    server = await aiohttp_server(make_standalone_app(engine, PlanSolveSettings(workdir=tmp_path / "out")))
    base = f"http://127.0.0.1:{server.port}"
    try:
        async with aiohttp.ClientSession() as http:
            for shared in ("/static/workflow_i18n.js", "/static/workflow_theme.css"):
                async with http.get(base + shared) as response:
                    assert response.status == 200, shared
            async with http.get(base + "/static/app.js") as response:
                assert response.status == 404, "only the workflow pages' shared files, not the panel"
        failed: list[str] = []
        async with launched_chromium() as browser:
            for width in (420, 1280):
                page = await (await browser.new_context(viewport={"width": width, "height": 900})).new_page()
                page.on("pageerror", lambda error: failed.append(str(error)))
                page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
                await page.goto(base + "/plan-solve")
                await page.wait_for_selector("#start:not([disabled])", timeout=15_000)
                assert await page.inner_text("#start"), "the script ran: the button has its text"
                assert await page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgba(0, 0, 0, 0)", "themed"
                assert failed == [], failed
                await page.screenshot(path=str(IMAGES / f"plan-solve-standalone-{width}.png"), full_page=True)
                await page.context.close()
    finally:
        await server.close()
        await engine.close()
