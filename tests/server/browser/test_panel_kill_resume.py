"""Issue 36 item 15 in real Chromium and a real daemon killed with SIGKILL mid-generation.

The bug: after the daemon was killed while @lead generated and then resumed the dialog, the transcript
kept an empty "@lead #2" card (the generation the kill cut, of which nothing was kept).
Screenshots: panel-kill-resume-<width>.png (docs/images/ with DOMINDS_UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from chromium import screenshot_dir
from cli.test_cli_kit import Daemon, write_workspace
from playwright.async_api import expect

pytestmark = pytest.mark.browser
IMAGES = screenshot_dir()  # docs/images/ with DOMINDS_UPDATE_SCREENSHOTS=1


async def expect_one_card_per_kept_generation(page: Any) -> None:
    await expect(page.locator(".bubble.gen .md")).to_have_text("x" * 600)
    cards = await page.locator("#transcript > *").evaluate_all(
        "els => els.map(e => [e.className, (e.querySelector('.gen-body')?.textContent || '').length])"
    )
    assert [c[0] for c in cards] == [
        "bubble user origin-user",
        "marker marker-interrupted",
        "marker marker-resumed",
        "bubble gen",
    ], cards


@pytest.mark.slow  # a real daemon killed with SIGKILL and started again
async def test_no_empty_generation_card_after_a_kill_and_resume(tmp_path: Path, browser: Any) -> None:
    ws = write_workspace(tmp_path / "ws")
    first = Daemon(ws)
    try:
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        page = await context.new_page()
        await page.goto(first.url)
        await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
        await page.click("#new-dialog-btn")
        await page.click("#new-dialog-form button[type=submit]")
        await page.fill("#input", "slow")
        await page.click("#send")
        await expect(page.locator(".bubble.gen .md.streaming")).to_contain_text("xxxxxx")
        first.stop(signal.SIGKILL)
        await expect(page.locator("#conn-status")).not_to_have_attribute("data-state", "connected")
        second = Daemon(ws, "--port", str(first.port))
        try:
            await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected", timeout=20_000)
            await expect(page.locator("#dh-state")).to_have_text("idle", timeout=30_000)
            await expect(page.locator(".bubble.gen .md")).to_have_text("x" * 600)
            await expect_one_card_per_kept_generation(page)  # the page that saw the kill, reconnected
            await page.reload()
            await expect(page.locator("#dh-state")).to_have_text("idle")
            await expect_one_card_per_kept_generation(page)  # and a fresh one
            for width in (420, 1280):
                await page.set_viewport_size({"width": width, "height": 800})
                await page.screenshot(path=str(IMAGES / f"panel-kill-resume-{width}.png"))
            await context.close()
        finally:
            second.stop()
    finally:
        first.stop()
