"""Saved debates are listed and can be read on the page, also after a restart of the daemon.

The bug: the debate page only streamed a debate it started (or resumed): a finished debate, or one from
before a restart, could not be seen again, and no endpoint listed the saved debates. Now
``GET /api/multi-agent`` lists them from their files, newest first, and the page opens one from its list
(``?session=<id>``): rounds, positions, host decisions, the trend, the report and how it ended, drawn
from the saved ``/session`` object exactly as a live stream draws them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from chromium import launched_chromium
from test_debate_kit import (
    AngleEmbedder,
    critic_answer,
    parse_sse,
    planner_answer,
    reporter_answer,
    step,
    write_workspace,
)

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import keys, make_app
from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.web import COMPARER_FACTORY, add_routes

TOKEN = "debate-saved-token"
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
CONVERGING = [
    step("planner", 1, planner_answer(1, 0), also="IELTS plan?"),
    step("critic", 1, critic_answer(1, 60), also="IELTS plan?"),
    step("critic", 2, critic_answer(2, 5), also="IELTS plan?"),
    step("planner", 2, planner_answer(2, 0), also="IELTS plan?"),
    step("reporter", 2, reporter_answer("Final plan"), also="IELTS plan?"),
]  # fmt: skip


def _angle_comparer(app: web.Application) -> None:
    app[COMPARER_FACTORY] = lambda: PositionComparer(AngleEmbedder())


async def _serve(rtws: Rtws, aiohttp_server: Any) -> tuple[Engine, str]:
    engine = Engine(rtws)
    await engine.start()
    app = make_app(engine, token=TOKEN)
    _angle_comparer(app)
    add_routes(app)
    server = await aiohttp_server(app)
    return engine, f"http://127.0.0.1:{server.port}"


async def _what_the_page_shows(page: Any) -> dict[str, Any]:
    """The debate as the page draws it: status, rounds, the host's decisions, conclusions, report, similarity."""
    return {
        "status": await page.inner_text("#status"),
        "rounds": await page.locator(".round h3").all_inner_texts(),
        "decisions": await page.locator(".host .badge").all_inner_texts(),
        "conclusions": await page.locator(".output > div:nth-child(2)").all_inner_texts(),
        "report": await page.inner_text("#report"),
        "similarity": await page.inner_text("#similarity"),
    }


async def test_saved_debates_are_listed_newest_first_with_how_they_stand(tmp_path: Path, aiohttp_client: Any) -> None:
    engine = Engine(write_workspace(tmp_path / "ws", CONVERGING))
    await engine.start()
    try:
        app = web.Application()
        app[keys.ENGINE] = engine
        _angle_comparer(app)
        add_routes(app)
        client = await aiohttp_client(app)
        assert await (await client.get("/api/multi-agent")).json() == {"sessions": []}
        done = parse_sse(await (await client.post("/api/multi-agent", json={"message": "IELTS plan?"})).text())[0]
        failed = parse_sse(await (await client.post("/api/multi-agent", json={"message": "Rust rewrite?"})).text())[0]
        assert done[-1]["type"] == "final_report" and failed[-1]["type"] == "error"
        listed = (await (await client.get("/api/multi-agent")).json())["sessions"]
        assert [(s["question"], s["status"], s["currentRound"], s["resumable"]) for s in listed] == [
            ("Rust rewrite?", "interrupted", 0, True),
            ("IELTS plan?", "converged", 2, False),
        ]
        assert listed[1]["sessionId"] == done[0]["sessionId"] and listed[1]["maxRounds"] == 5
        missing = await client.get("/api/multi-agent/0nosuchdebate-0000/session")
        assert missing.status == 404 and (await missing.json()) == {"error": "no debate '0nosuchdebate-0000'"}
    finally:
        await engine.close()


@pytest.mark.browser
async def test_a_saved_debate_opens_from_the_list_after_a_restart_and_reads_like_the_live_one(
    tmp_path: Path, aiohttp_server: Any
) -> None:
    rtws = write_workspace(tmp_path / "ws", CONVERGING)
    errors: list[str] = []
    async with launched_chromium() as browser:
        engine, base = await _serve(rtws, aiohttp_server)
        try:  # a debate watched live on the page of the first daemon
            page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{base}/debate?auth={TOKEN}")
            await page.fill("#question", "IELTS plan?")
            await page.click("#start")
            await page.wait_for_selector("#report-section:not([hidden])", timeout=10_000)
            live = await _what_the_page_shows(page)
            await page.wait_for_selector("#saved a.open-session")  # listed once the stream ended
            await page.context.close()
        finally:
            await engine.close()

        engine, base = await _serve(rtws, aiohttp_server)  # the daemon again: nothing in memory
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 900})
            page = await context.new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{base}/?auth={TOKEN}")  # the panel's session cookie
            await page.goto(f"{base}/debate")
            item = page.locator("#saved li", has_text="IELTS plan?")
            assert "converged after 2 round(s)" in await item.inner_text()
            await item.locator("a.open-session").click()
            await page.wait_for_selector("#report-section:not([hidden])")
            assert "?session=" in page.url
            shown = await _what_the_page_shows(page)
            assert shown == live
            assert await page.locator("#chart circle").count() == 2
            assert await page.input_value("#question") == "IELTS plan?"
            await page.screenshot(path=str(ARTIFACTS / "debate-saved-session.png"), full_page=True)

            await page.select_option("#lang", "zh")  # drawn again in Chinese, from the same saved events
            await page.wait_for_function("document.querySelector('.round h3').textContent === '第 1 轮'")
            await page.select_option("#lang", "en")
            await page.reload()  # the address keeps the debate open
            await page.wait_for_selector("#report-section:not([hidden])")
            assert await page.inner_text("#status") == live["status"]

            await page.goto(f"{base}/debate?session=0nosuchdebate-0000")
            await page.wait_for_selector("#error:not([hidden])")
            assert await page.inner_text("#error") == "Debate 0nosuchdebate-0000 cannot be opened: no debate '0nosuchdebate-0000'"
            await context.close()
        finally:
            await engine.close()
    assert errors == []
