"""The workflow pages in the offline demo offer the demo's example question as a button, in real Chromium.

Bug (issue 36, item 13): the Tree-of-Thoughts, Debate and Plan & Solve pages showed the only question
the offline demo answers as the field's placeholder, so Start said "Please fill out this field"; and
nothing said that any other question would fail (it failed quoting the workflow's internal framed
prompt, with a `contains:` suggestion matching every question: that message is now the demo's plain
one, tests/workflows/test_workflow_demos.py). Now each page offers the example as a button that fills
the field, says plainly that the offline demo answers only its example, and offers nothing when the
team answers from a real provider. Screenshots: test-artifacts/workflow-demo-example-<page>-<width>.png.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chromium import launched_chromium

from dominds.cli.main import main
from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import make_app
from dominds.workflows.mount import route_adders, workflow_extensions

TOKEN = "workflow-examples-token"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
pytestmark = pytest.mark.browser
PAGES = {  # page: (question field, the demo's examples)
    "tot": ("#problem", ["4 9 10 13"]),
    "debate": ("#question", ["帮我制定IELTS备考计划", "Help me plan three months of IELTS preparation"]),
    "plan-solve": ("#question", ["Analyse the 2024-2025 sales data and make a 3-slide presentation"]),
}


async def _pages(root: Path, aiohttp_server: Any, check: Any) -> None:
    engine = Engine(Rtws(root), extensions=workflow_extensions())
    await engine.start()
    server = await aiohttp_server(make_app(engine, token=TOKEN, extra_routes=route_adders()))
    errors: list[str] = []
    try:
        async with launched_chromium() as browser:
            page = await (await browser.new_context()).new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.add_init_script("localStorage.setItem('dominds.uiLanguage', 'en')")
            await page.goto(f"http://127.0.0.1:{server.port}/?auth={TOKEN}")  # the session cookie
            for name, (field, examples) in PAGES.items():
                await check(page, f"http://127.0.0.1:{server.port}/{name}", name, field, examples)
    finally:
        await engine.close()
    assert errors == []


async def test_each_workflow_page_offers_the_demo_example_as_a_button(
    tmp_path: Path, aiohttp_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)  # no key: the workspace answers from the offline demo script
    assert main(["init", str(tmp_path / "demo")]) == 0
    ARTIFACTS.mkdir(exist_ok=True)

    async def check(page: Any, url: str, name: str, field: str, examples: list[str]) -> None:
        await page.set_viewport_size({"width": 1280, "height": 900})
        await page.goto(url)
        buttons = page.locator("#demo-examples button.demo-example")
        await buttons.first.wait_for(timeout=15_000)
        assert await buttons.all_text_contents() == examples, name
        note = await page.text_content("#demo-examples .demo-note") or ""
        assert "answers only its example" in note and "real model" in note, note
        assert await page.locator(field).evaluate("el => !el.checkValidity()"), f"{name}: the field starts empty"
        await buttons.last.click()
        assert await page.locator(field).input_value() == examples[-1]
        assert await page.locator(field).evaluate("el => el.checkValidity()"), f"{name}: Start now has a question"
        for width in (420, 1280):
            await page.set_viewport_size({"width": width, "height": 900})
            assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth"), f"{name} at {width} px"
            await page.screenshot(path=str(ARTIFACTS / f"workflow-demo-example-{name}-{width}.png"), full_page=True)

    await _pages(tmp_path / "demo", aiohttp_server, check)


async def test_no_example_is_offered_when_the_team_answers_from_a_real_provider(
    tmp_path: Path, aiohttp_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key-0123")  # `init` then picks Anthropic
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["init", str(tmp_path / "mine")]) == 0

    async def check(page: Any, url: str, name: str, field: str, examples: list[str]) -> None:
        await page.goto(url)
        await page.wait_for_load_state("networkidle")
        assert await page.locator("#demo-examples").count() == 0, name

    await _pages(tmp_path / "mine", aiohttp_server, check)
