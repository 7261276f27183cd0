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
from workflow_pages import CHROMIUM, CHROMIUM_PRESENT, TOKEN, workflow_page

from dominds.workflows.debate.similarity import PositionComparer
from dominds.workflows.debate.web import COMPARER_FACTORY, add_routes

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM_PRESENT, reason=f"{CHROMIUM} is not installed")]


TWO_ROUNDS_TO_CONSENSUS = [
    step("planner", 1, planner_answer(1, 0)),
    step("critic", 1, critic_answer(1, 60)),
    step("critic", 2, critic_answer(2, 5)),
    step("planner", 2, planner_answer(2, 0)),
    step("reporter", 2, reporter_answer("Final plan")),
]
"""Round 1 far apart (the critic 60° off), round 2 converged (5°): the report follows."""


def angle_comparer(app: Any) -> None:
    app[COMPARER_FACTORY] = lambda: PositionComparer(AngleEmbedder())


async def test_the_page_streams_rounds_positions_and_the_trend(tmp_path: Path, aiohttp_server: Any) -> None:
    rtws = write_workspace(tmp_path / "ws", TWO_ROUNDS_TO_CONSENSUS)
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


async def test_statuses_change_live_and_a_stopped_debate_is_resumed_from_the_page(tmp_path: Path, aiohttp_server: Any) -> None:
    """The page showed agent statuses only when a round ended and gave no way to see a stopped run
    resumed: here the Critic is still working when the user stops, the page says so and offers the
    session id, and Resume runs the debate to its report."""
    slow = {"chunk_chars": 20, "delay_ms": 80}  # the critic writes for a few seconds
    rtws = write_workspace(tmp_path / "ws", [
        step("planner", 1, planner_answer(1, 0), max_rounds=1),
        step("critic", 1, critic_answer(1, 10), max_rounds=1, **slow),
        step("reporter", 1, reporter_answer("Resumed plan"), max_rounds=1),
    ])  # fmt: skip
    async with workflow_page(rtws, aiohttp_server, add_routes, "/debate", language="en", configure=angle_comparer) as debate:
        page = debate.page
        await page.fill("#question", "IELTS plan?")
        await page.select_option("#max-rounds", "1")
        await page.click("#start")
        critic = page.locator("#agents li[data-agent=critic]")
        await page.wait_for_selector("#agents li[data-agent=critic].running", timeout=10_000)
        await page.wait_for_selector("#agents li[data-agent=planner].completed", timeout=10_000)
        assert await critic.inner_text() == "Critic: working"
        assert await page.locator(".round .output").count() == 1, "the planner's position is shown before the round ends"
        assert await page.is_enabled("#stop") and await page.is_disabled("#start")

        await page.click("#stop")
        await page.wait_for_selector("#status.bad", timeout=10_000)
        session_id = await page.input_value("#resume-id")
        assert session_id and f"Session {session_id} interrupted (user_stop) after round 0" in await page.inner_text("#status")
        assert await page.locator("#agents li.running").count() == 0, "a stopped run leaves nobody working"
        assert await page.locator("#report-section").is_hidden() and await page.locator(".host").count() == 0
        await page.wait_for_function("!document.getElementById('resume').disabled")

        await page.click("#resume")
        await page.wait_for_selector("#report-section:not([hidden])", timeout=20_000)
        assert (await page.inner_text("#report")).startswith("# Resumed plan")
        assert f"Session {session_id}: converged after 1 round(s)." == await page.inner_text("#status")
        assert await page.locator("#agents li.completed").count() == 4 and await page.locator("#error").is_hidden()
    assert debate.errors == []


async def test_the_token_form_replaces_a_missing_token_and_a_fallback_is_stated(tmp_path: Path, aiohttp_server: Any) -> None:
    """Opened without a token, the page used prompt() (or failed silently); and a debate whose embedder
    could not be used compared by word overlap without saying so. Both must be visible in the page."""
    rtws = write_workspace(tmp_path / "ws", [
        step("planner", 1, planner_answer(1, 0), max_rounds=1),
        step("critic", 1, critic_answer(1, 10), max_rounds=1),
        step("reporter", 1, reporter_answer(), max_rounds=1),
    ], "embedder: {kind: provider}\n")  # fmt: skip  (no provider named: unusable)
    async with workflow_page(rtws, aiohttp_server, add_routes, "/debate", language="en") as debate:
        context = await debate.page.context.browser.new_context()  # a browser that never saw the token
        page = await context.new_page()
        page.on("pageerror", lambda error: debate.errors.append(str(error)))
        page.on("dialog", lambda dialog: debate.errors.append(f"a {dialog.type} dialog opened"))
        await page.goto(debate.page.url.split("?")[0])
        await page.fill("#question", "IELTS plan?")
        await page.select_option("#max-rounds", "1")
        await page.click("#start")
        await page.wait_for_selector("#token-form:not([hidden])", timeout=10_000)
        assert await page.locator(".round").count() == 0 and await page.locator("#error").is_hidden()
        await page.fill("#token", f"http://127.0.0.1:5666/?auth={TOKEN}")
        await page.click("#token-form button[type=submit]")
        assert await page.inner_text("#status") == "Token saved; start again."
        await page.click("#start")
        await page.wait_for_selector("#report-section:not([hidden])", timeout=10_000)
        similarity = await page.inner_text("#similarity")
        assert similarity.startswith("Positions compared by word overlap (Jaccard).") and "embedder kind provider needs" in similarity
        warnings = await page.locator("#warnings li").all_inner_texts()
        assert any(w.startswith("using word overlap (Jaccard) instead of embeddings") for w in warnings), warnings
        await context.close()
    assert debate.errors == []


class _CalibratedAngleEmbedder(AngleEmbedder):
    name = "wordllama:angle"  # scored on WordLlama's calibrated English thresholds: 0.65 and 0.63


async def test_close_thresholds_keep_their_chart_labels_apart(tmp_path: Path, aiohttp_server: Any) -> None:
    """The bug: each threshold's label was drawn just above its line, so calibrated thresholds 0.02 apart
    (WordLlama's 0.65/0.63, word overlap's 0.14/0.12 for Chinese) printed "converge > 0.65" over
    "oppose ≤ 0.63". Now the converge label sits above its line and the oppose label below its own."""
    rtws = write_workspace(tmp_path / "ws", TWO_ROUNDS_TO_CONSENSUS)

    def calibrated(app: Any) -> None:
        app[COMPARER_FACTORY] = lambda: PositionComparer(_CalibratedAngleEmbedder())

    async with workflow_page(rtws, aiohttp_server, add_routes, "/debate", language="en", configure=calibrated) as debate:
        page = debate.page
        await page.fill("#question", "IELTS plan?")
        await page.click("#start")
        await page.wait_for_selector("#report-section:not([hidden])", timeout=10_000)
        labels = page.locator("#chart text[data-threshold]")
        assert await labels.all_text_contents() == ["converge > 0.65", "oppose ≤ 0.63"]
        converge, oppose = [await label.bounding_box() for label in await labels.all()]
        assert converge is not None and oppose is not None
        assert converge["y"] + converge["height"] <= oppose["y"], (converge, oppose)
        await debate.screenshot("debate-page-close-thresholds")
    assert debate.errors == []
