"""Forking a main dialog at a reply from the panel, in real Chromium (issue 35, item 4).

Each reply of a main dialog has a Fork button; the form offers the message that reply answered, to run
again as it is or edited; the fork opens, answers, and links back to the reply it was forked at. The
original is not changed. Screenshots at 420 and 1280 px (test-artifacts/).
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_kit import BROWSER_RESPONSES, Panel
from playwright.async_api import expect

pytestmark = pytest.mark.browser


@pytest.fixture
def panel_responses() -> list[dict[str, Any]]:
    return [*BROWSER_RESPONSES, {"agent": "lead", "message": "hello in French", "response": "Bonjour !"}]


@pytest.mark.parametrize("width", [1280, 420])
async def test_a_reply_is_forked_from_the_panel_with_its_message_edited(panel: Panel, width: int) -> None:
    page = panel.page
    await page.set_viewport_size({"width": width, "height": 800})
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await page.fill("#input", "hello")
    await page.click("#send")
    await expect(page.locator(".bubble.gen .md").first).to_contain_text("Hello")
    original_id = await page.locator("#dh-id").text_content()
    await page.fill("#input", "also make it shiny")
    await page.click("#send")
    await expect(page.locator(".bubble.gen .md").last).to_have_text("Shiny too.")

    first_reply = page.locator(".bubble.gen").first
    await first_reply.hover()
    await first_reply.locator(".fork-gen").click()
    form = page.locator("#fork-dialog")
    await expect(form.locator(".modal-input")).to_have_value("hello"), "the message that reply answered"
    await panel.screenshot(f"panel-fork-form-{width}")
    await form.locator(".modal-input").fill("hello in French")
    await form.locator("button[type=submit]").click()

    await expect(page.locator("#dh-id")).not_to_have_text(original_id or "")
    await expect(page.locator(".bubble.gen .md")).to_have_count(1)
    await expect(page.locator(".bubble.gen .md")).to_have_text("Bonjour !")
    back = page.locator("#dh-forked-from")
    await expect(back).to_be_visible()
    await expect(back).to_have_text("forked at reply #1")
    await panel.screenshot(f"panel-fork-done-{width}")
    await back.click()
    await expect(page.locator("#dh-id")).to_have_text(original_id or "")
    await expect(page.locator(".bubble.gen .md")).to_have_count(2), "the original is as it was"
    assert panel.errors == []
