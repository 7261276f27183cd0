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
from workflow_pages import CHROMIUM, CHROMIUM_PRESENT, workflow_page

from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.web import COMPARER_FACTORY, add_routes

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM_PRESENT, reason=f"{CHROMIUM} is not installed")]


def angle_comparer(app: Any) -> None:
    app[COMPARER_FACTORY] = lambda: PositionComparer(AngleEmbedder())


async def test_the_page_streams_rounds_positions_and_the_trend(tmp_path: Path, aiohttp_server: Any) -> None:
    rtws = write_workspace(tmp_path / "ws", [
        step("planner", 1, planner_answer(1, 0)),
        step("critic", 1, critic_answer(1, 60)),
        step("critic", 2, critic_answer(2, 5)),
        step("planner", 2, planner_answer(2, 0)),
        step("reporter", 2, reporter_answer("Final plan")),
    ])  # fmt: skip
    async with workflow_page(rtws, aiohttp_server, add_routes, "/debate", language="en", configure=angle_comparer) as debate:
        page = debate.page
        await page.fill("#question", "IELTS plan?")
        await page.click("#start")
        await page.wait_for_selector("#report-section:not([hidden])", timeout=10_000)
        assert (await page.inner_text("#report")).startswith("# Final plan")
        assert await page.locator(".round").count() == 2
        assert await page.locator(".host .badge").all_inner_texts() == ["force opposition", "converge"]
        assert await page.locator("#chart circle").count() == 2
        assert "converged" in await page.inner_text("#status")
        similarity = "Positions compared by embeddings (angle). Converge above 0.90, force opposition at or below 0.70."
        assert await page.inner_text("#similarity") == similarity
        assert await page.locator("#agents li.completed").count() == 4 and await page.locator("#error").is_hidden()
        assert "auth=" not in page.url, "the token left the address bar"
    assert debate.errors == []


async def test_a_failed_debate_is_shown_as_a_failure_in_chinese(tmp_path: Path, aiohttp_server: Any) -> None:
    """The bug: with no usable provider the page showed a consensus and a report computed over
    "Scripted response not found" texts, in English only."""
    rtws = write_workspace(tmp_path / "ws", [], "embedder: {kind: jaccard}\n")  # no answers for any role
    async with workflow_page(rtws, aiohttp_server, add_routes, "/debate", language="zh") as debate:
        page = debate.page
        assert await page.inner_text("header h1") == "辩论"
        await page.fill("#question", "帮我制定IELTS备考计划")
        await page.click("#start")
        await page.wait_for_selector("#error:not([hidden])", timeout=10_000)
        assert "辩论在第 1 轮失败" in await page.inner_text("#status")
        assert await page.locator("#agents li.running, #agents li.waiting").count() == 0, "nothing is left working"
        assert "no debater gave a usable answer in round 1" in await page.inner_text("#error")
        assert await page.locator("#report-section").is_hidden()
        assert await page.locator(".host").count() == 0 and await page.locator("#chart circle").count() == 0
        assert await page.inner_text("#similarity") == "立场按词语重叠（Jaccard）比较。"
        body = await page.inner_text("body")
        assert "seed" not in body.lower() and "共识 " not in body
        await debate.screenshot("debate-page-failed-zh")
        await page.select_option("#lang", "en")
        await page.wait_for_function("document.querySelector('header h1').textContent === 'Debate'")
        assert "The debate failed in round 1" in await page.inner_text("#status")
    assert debate.errors == []
