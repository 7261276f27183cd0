"""Issue 18's "readable blocks" in real Chromium: tool calls, tellasks, replies and code as people read them.

Before, tool calls and results, tellask calls and replies were raw text, and code blocks were plain.
Now a tool call is a closed block with a one-line summary (tool, the arguments' gist, ✓/✗) that opens
to pretty arguments and the result; a tellask shows its headline, body and a link to its subdialog; the
teammate's reply is its own block marked ✓; code is highlighted (by the server, coloured by the page,
in light and dark); thinking is folded once done.
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_kit import Panel
from playwright.async_api import expect
from showcase import SHOWCASE_RESPONSES, populate

pytestmark = pytest.mark.browser


@pytest.fixture
def panel_responses() -> list[dict[str, Any]]:
    return SHOWCASE_RESPONSES


async def test_tool_calls_tellasks_replies_and_code_are_readable_blocks(panel: Panel) -> None:
    ids = await populate(panel.engine)
    page = panel.page
    await page.goto(f"{panel.url}&dialog={ids['plan']}")
    await expect(page.locator("#dh-title")).to_have_text("Plan the 1.2 release")

    thinking = page.locator("details.thinking")
    await expect(thinking).to_have_count(1)
    assert await thinking.get_attribute("open") is None, "thinking is folded once done"

    call = page.locator("details.func", has_text="add_reminder")
    summary = call.locator("summary")
    await expect(summary.locator(".func-name")).to_have_text("add_reminder")
    await expect(summary.locator(".func-gist")).to_contain_text("ship 1.2 once the changelog is done")
    await expect(summary.locator(".block-status")).to_have_text("✓")
    await expect(call.locator(".func-args")).to_be_hidden(), "closed until asked"
    await summary.click()
    await expect(call.locator(".func-args")).to_have_text('{\n  "content": "ship 1.2 once the changelog is done"\n}')
    await expect(call.locator(".func-result")).to_contain_text("Reminder")
    await summary.click()
    await expect(call.locator(".func-args")).to_be_hidden()

    tellask = page.locator(".tellask", has_text="@coder please write the changelog")
    await expect(tellask.locator(".tellask-head")).to_have_text("@coder please write the changelog for 1.2")
    await expect(tellask.locator(".tellask-body")).to_have_text("List the API changes since 1.1.")
    await expect(tellask.locator(".subdialog-link")).to_have_count(1)
    reply = page.locator(".bubble.response")
    await expect(reply.locator(".block-status")).to_have_text("✓")
    await expect(reply.locator(".md li")).to_have_count(3)
    await expect(reply.locator(".md code")).to_have_text("dominds url")

    code = page.locator(".md pre.highlight[data-lang=python]")
    await expect(code).to_have_count(1)
    keyword = code.locator("span.k", has_text="def")
    await expect(keyword).to_have_count(1)
    colour = "el => getComputedStyle(el).color"
    plain = await code.locator("code").evaluate(colour)
    assert await keyword.evaluate(colour) != plain, "the keyword is coloured"
    assert await code.locator("span.c1").evaluate(colour) != plain, "the comment is coloured"
    await page.emulate_media(color_scheme="dark")
    dark_plain = await code.locator("code").evaluate(colour)
    assert dark_plain != plain and await keyword.evaluate(colour) != dark_plain, "and in the dark theme"
