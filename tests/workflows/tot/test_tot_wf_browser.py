"""The /tot page in real Chromium: start runs from the form and watch the tree appear; solved and unsolved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tot_wf_kit import write_workspace
from workflow_pages import CHROMIUM, CHROMIUM_PRESENT, workflow_page

from dominds.workflows.tot.web import add_routes

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM_PRESENT, reason=f"{CHROMIUM} is not installed")]


async def test_the_page_starts_a_run_and_draws_its_tree_with_pruned_nodes(tmp_path: Path, aiohttp_server: Any) -> None:
    async with workflow_page(write_workspace(tmp_path / "ws", []), aiohttp_server, add_routes, "/tot", language="en") as tot:
        page = tot.page
        assert "auth=" not in page.url, "the token leaves the address bar"
        await page.fill("#problem", "4 9 10 13")
        await page.check("#symbolic")
        await page.fill("#branching", "3")
        await page.click("button[type=submit]")
        await page.wait_for_selector("#status.completed", timeout=10_000)
        assert await page.text_content("#status") == "solved"
        answer = await page.text_content("#answer")
        assert answer is not None and "= 24" in answer and "verified" in answer
        assert await page.locator("#layers tr").count() == 4  # header + 3 layers
        shown = await page.locator(".node").count()
        pruned = await page.locator(".node.pruned").count()
        assert shown > 100 and pruned > 0 and await page.locator(".node.best").count() == 4
        await page.check("#hidePruned")
        await page.wait_for_function(f"document.querySelectorAll('.node').length === {shown - pruned}")
        await tot.screenshot("tot-page")
        # on a phone the run is not squeezed into a strip beside the form (it was 80 px wide at 420 px)
        await page.set_viewport_size({"width": 420, "height": 800})
        run_width = await page.locator("main > section").evaluate("el => el.getBoundingClientRect().width")
        assert run_width >= 380, run_width
        assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth"), "no sideways scrolling"
        await tot.screenshot("tot-page-420")
    assert tot.errors == []


async def test_an_unsolved_run_reads_as_unsolved_in_chinese(tmp_path: Path, aiohttp_server: Any) -> None:
    """The bug: the page showed a green "completed" with an empty answer when the search found nothing,
    was English only, and said "seed 000"."""
    async with workflow_page(write_workspace(tmp_path / "ws", []), aiohttp_server, add_routes, "/tot", language="zh") as tot:
        page = tot.page
        assert await page.text_content("header strong") == "思维树"
        await page.fill("#problem", "1 1 1 1")  # no way to make 24
        await page.check("#symbolic")
        await page.click("button[type=submit]")
        await page.wait_for_selector("#status.unsolved", timeout=10_000)
        assert await page.text_content("#status") == "未解决"
        assert await page.locator(".status.completed").count() == 0
        outcome = await page.text_content("#outcome")
        assert outcome is not None and outcome.startswith("未解决：搜索没有保留任何思维") and "SEARCH_EXHAUSTED" in outcome
        assert (await page.text_content("#answerHeading")) == "最佳尝试——不是解"
        answer = await page.text_content("#answer") or ""
        assert "未验证" in answer and "已验证" not in answer
        body = await page.inner_text("body")
        assert "seed" not in body.lower() and "completed" not in body
        await tot.screenshot("tot-page-unsolved-zh")
        await page.select_option("#lang", "en")
        await page.wait_for_function("document.getElementById('status').textContent === 'unsolved'")
        assert (await page.text_content("#answerHeading")) == "Best attempt — not a solution"
    assert tot.errors == []



async def test_a_run_whose_every_model_step_failed_reads_as_a_failure_in_en_and_zh(tmp_path: Path, aiohttp_server: Any) -> None:
    """Item 8 of issue 18 through the page with model steps (no exact solver): the bug was a green
    "completed" with an empty answer when every step had failed. No scripted reply exists here, so every
    role call fails. The run stays "unsolved" (as the CLI and its exit code say), but the page says in red
    that the model steps failed — before, its amber note blamed pruning ("every candidate was pruned or
    could not be evaluated") when not one candidate had been made — and lists the failed calls."""
    async with workflow_page(write_workspace(tmp_path / "ws", []), aiohttp_server, add_routes, "/tot", language="en") as tot:
        page = tot.page
        await page.fill("#problem", "Plan a three-day trip to Kyoto")
        await page.click("button[type=submit]")
        await page.wait_for_selector("#status.unsolved", timeout=20_000)
        failed_calls = await page.locator("#errors li").count()
        assert failed_calls >= 1
        outcome = page.locator("#outcome.outcome.bad")
        assert await outcome.count() == 1, "shown as a failure, not a warning"
        first_line = await outcome.locator("div").first.text_content()
        assert first_line == (
            f"Unsolved because the model steps failed: not one thought was produced ({failed_calls} failed call(s), listed below)."
        )
        body = await page.inner_text("body")
        assert "pruned" not in (await outcome.inner_text()) and "seed" not in body.lower() and "solved\n" not in body
        assert await page.locator(".status.completed").count() == 0
        await tot.screenshot("tot-page-steps-failed")
        await page.select_option("#lang", "zh")
        await page.wait_for_function("document.getElementById('status').textContent === '未解决'")
        assert (await outcome.locator("div").first.text_content() or "").startswith("未解决，因为模型步骤失败")
    assert tot.errors == []
