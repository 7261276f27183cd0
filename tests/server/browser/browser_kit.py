"""What the browser tests share: the scripted replies and the ``Panel`` handle (the launch: tests/chromium.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import expect

from dominds.driver.engine import Engine

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"

BROWSER_RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "message": "hello", "response": "Hello **there**!", "chunk_chars": 4, "delay_ms": 2},
    {"agent": "lead", "message": "delegate", "response": "Asking coder.\n!?@coder please implement X\n"},
    {"agent": "coder", "contains": "please implement X", "response": "Implemented X."},
    {"agent": "lead", "contains": "@coder provided response", "response": "Thanks, X is done."},
    {
        "agent": "lead",
        "message": "paint",
        "response": "Let me ask.\n!?@human Which colour?\n!?Red or blue.\n",
    },
    {"agent": "lead", "message": "blue", "response": "Painting it **blue**."},
    {"agent": "lead", "message": "also make it shiny", "response": "Shiny too."},
    {"agent": "lead", "message": "slow", "response": "tick " * 400, "chunk_chars": 5, "delay_ms": 20},
]
SUGGESTIONS = ["hello", "delegate", "paint"]


@dataclass
class Panel:
    page: Any
    engine: Engine
    app: Any
    url: str
    errors: list[str] = field(default_factory=list)

    async def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        await self.page.screenshot(path=str(path), full_page=True)
        return path


async def open_with_a_new_dialog(browser: Any, url: str, *, width: int = 1280) -> tuple[Any, Any]:
    """A new browser context on ``url`` (a daemon's panel link), connected, with a new @lead dialog open."""
    context = await browser.new_context(viewport={"width": width, "height": 800})
    page = await context.new_page()
    await new_lead_dialog(page, url)
    return context, page


async def new_lead_dialog(page: Any, url: str) -> None:
    """``page`` on the panel at ``url``, connected, with a new @lead dialog open."""
    await page.goto(url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-agent")).to_have_text("@lead")


async def open_the_subdialog_of_a_suggestion(panel: Panel, suggestion: str, caller_reply: str, agent: str) -> None:
    """On the panel's page: start a dialog from the empty page's ``suggestion`` chip, wait for the
    caller's ``caller_reply`` (the teammate answered), and open the subdialog of its call."""
    page = panel.page
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.locator("#empty-suggestions .chip", has_text=suggestion).click()
    await expect(page.locator(".bubble.response")).to_contain_text(caller_reply)
    await page.locator(".tellask .subdialog-link").click()
    await expect(page.locator("#dh-agent")).to_have_text(agent)
