"""An MCP server during a tool call, in the panel (real Chromium, a real FastMCP server over stdio).

Its progress shows on the tool call (before, the call showed only "…" until its result came), and
its question (elicitation) has a Decline button whose click goes back to the server as a decline
(before, the person had to know to type `decline`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from browser_kit import Panel
from playwright.async_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mcp"))  # tests/mcp is not a package
from mcp_kit import after_tool, call, give_the_lead_the_fake_server

pytestmark = pytest.mark.browser


@pytest.fixture
def panel_responses() -> list[dict[str, Any]]:
    return [
        call("sand it", "sand"),
        after_tool("sanded", "Sanded."),
        call("paint it", "paint"),
        after_tool("not painted (decline)", "Not painted, as you declined."),
        call("a haiku", "haiku", {"topic": "autumn"}),
        {"agent": "lead", "message": "Write a haiku about autumn.", "response": "Leaves drift on the pond"},
        after_tool("wrote:", "Nice poem."),
    ]


async def test_the_servers_progress_is_on_the_tool_call(panel: Panel) -> None:
    give_the_lead_the_fake_server(panel.engine.rtws)
    page = panel.page
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    await page.fill("#input", "sand it")
    await page.click("#send")
    call_block = page.locator("details.func").filter(has_text="sand")
    await expect(call_block.locator(".func-progress")).to_have_text("3/3 · coat 3 of 3", timeout=120_000)
    await expect(call_block.locator(".block-status")).to_have_text("✓", timeout=60_000)
    await expect(page.locator(".bubble.gen .md").last).to_have_text("Sanded.", timeout=60_000)
    await panel.screenshot("tool-call-progress-1400")
    await page.set_viewport_size({"width": 420, "height": 800})
    await expect(call_block.locator(".func-progress")).to_be_visible()
    await panel.screenshot("tool-call-progress-420")


async def test_a_servers_question_has_a_decline_button_that_declines(panel: Panel) -> None:
    give_the_lead_the_fake_server(panel.engine.rtws)
    page = panel.page
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    await expect(page.locator("#decline")).to_be_hidden()
    await page.fill("#input", "paint it")
    await page.click("#send")
    await expect(page.locator("#decline")).to_be_visible(timeout=120_000)
    await expect(page.locator("#decline")).to_have_text("Decline")
    await panel.screenshot("elicitation-decline-1400")
    await page.click("#decline")
    await expect(page.locator(".bubble.gen .md").last).to_have_text("Not painted, as you declined.", timeout=60_000)
    await expect(page.locator("details.func .func-result").last).to_have_text("not painted (decline)")
    await expect(page.locator("#decline")).to_be_hidden()


async def test_what_the_model_answered_a_server_shows_on_the_call(panel: Panel) -> None:
    """MCP sampling: the member's model's answer to the server shows under the call."""
    give_the_lead_the_fake_server(panel.engine.rtws, sampling="true")
    page = panel.page
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    await page.fill("#input", "a haiku")
    await page.click("#send")
    await expect(page.locator(".bubble.gen .md").last).to_have_text("Nice poem.", timeout=120_000)
    call_block = page.locator("details.func").filter(has_text="haiku")
    await call_block.locator("summary").click()
    await expect(call_block.locator(".func-sampling")).to_have_text("Leaves drift on the pond")
    await expect(call_block).to_contain_text("The model's answer to MCP server fake")
    await panel.screenshot("tool-call-sampling-1400")
