"""Issue 16 in real Chromium: a reply cut by the output limit says so in the panel, live and after a reload.

The bug: a reply stopped by ``max_tokens`` was recorded and shown as a normal reply; nothing told the
user it was cut. (The same generation through the CLI and the API: ``tests/cli/test_cut_replies_end_to_end.py``.)
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_kit import BROWSER_RESPONSES, Panel
from playwright.async_api import expect

pytestmark = pytest.mark.browser

NOTE = "Reply cut off: the output limit (max_tokens) was reached"


@pytest.fixture
def panel_responses() -> list[dict[str, Any]]:
    cut = {"agent": "lead", "message": "essay", "response": "Once upon a time", "finish_reason": "max_tokens"}
    return [*BROWSER_RESPONSES, cut]


async def test_a_reply_cut_by_max_tokens_says_so_live_and_after_a_reload(panel: Panel) -> None:
    page = panel.page
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await page.fill("#input", "essay")
    await page.click("#send")
    reply = page.locator(".bubble.gen .md")
    await expect(reply).to_have_text("Once upon a time")
    note = page.locator('.bubble.gen .finish-note[data-finish-reason="max_tokens"]')
    await expect(note).to_have_text(NOTE)

    await page.reload()
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await expect(reply).to_have_text("Once upon a time")
    await expect(note).to_have_text(NOTE), "the note is rebuilt from the course files"

    await page.fill("#input", "hello")  # the next, whole reply carries no note
    await page.click("#send")
    await expect(reply.last).to_contain_text("Hello")
    await expect(page.locator(".bubble.gen .finish-note")).to_have_count(1)
