"""A subdialog's Assignment bubble in real Chromium: the caller's request, readable, not the model's prompt.

The bug: the bubble showed the prompt as the model gets it ("Hi @coder, this is @lead speaking, now:"
and the request quoted line by line, markdown markers and all) as raw text. Now it says who assigned
the work, shows the headline and renders the body as markdown like every other bubble, links back to
the call, and keeps the framed prompt one click away. The same for the ask-back the caller receives.
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_kit import Panel, open_the_subdialog_of_a_suggestion
from playwright.async_api import expect

pytestmark = pytest.mark.browser

RESPONSES: list[dict[str, Any]] = [
    {
        "agent": "lead",
        "message": "delegate",
        "response": "Asking coder.\n!?@coder please write the notes\n!?Cover **two** points:\n!?\n!?- the API\n!?- the fixes\n",
    },
    {"agent": "coder", "contains": "please write the notes", "response": "!?@tellasker Which **format**?\n!?Markdown or HTML?\n"},
    {"agent": "lead", "contains": "TellaskBack", "response": "Markdown."},
    {"agent": "coder", "contains": "Markdown.", "response": "Notes written."},
    {"agent": "lead", "contains": "@coder provided response", "response": "Thanks."},
]


@pytest.fixture
def panel_responses() -> list[dict[str, Any]]:
    return RESPONSES


@pytest.fixture
def panel_suggestions() -> list[str]:
    return ["delegate"]


async def test_the_assignment_bubble_shows_what_the_caller_assigned_as_markdown(panel: Panel) -> None:
    page = panel.page
    await open_the_subdialog_of_a_suggestion(panel, "delegate", "Notes written.", "@coder")

    bubble = page.locator(".bubble.origin-assignment.framed-tellask")
    await expect(bubble).to_have_count(1)
    await expect(bubble.locator(".who")).to_contain_text("Assignment from @lead")
    await expect(bubble.locator(".tellask-head")).to_have_text("@coder please write the notes")
    await expect(bubble.locator(".md strong")).to_have_text("two")
    await expect(bubble.locator(".md li")).to_have_text(["the API", "the fixes"])
    framed = bubble.locator("details.framed-prompt")
    await expect(framed.locator(".plain")).to_be_hidden()
    await expect(bubble.get_by_text("this is @lead speaking")).to_be_hidden()
    await framed.locator("summary").click()
    await expect(framed.locator(".plain")).to_contain_text("Hi @coder, this is @lead speaking, now:")
    clipped = "el => el.scrollHeight > el.clientHeight + 1"
    assert not await bubble.evaluate(clipped), "the whole bubble shows (the header's .assignment box once clipped it)"
    await panel.screenshot("assignment-bubble")
    await page.emulate_media(color_scheme="dark")
    await panel.screenshot("assignment-bubble-dark")

    await bubble.locator(".caller-link").click()
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    await expect(page.locator(".tellask.highlight")).to_contain_text("@coder please write the notes")

    asked = page.locator(".bubble.origin-tellask_back.framed-tellask")
    await expect(asked.locator(".who")).to_contain_text("Ask-back from @coder")
    await expect(asked.locator(".tellask-head strong")).to_have_count(0)
    await expect(asked.locator(".tellask-head")).to_have_text("@tellasker Which **format**?")
    await expect(asked.locator(".md")).to_have_text("Markdown or HTML?")
    await expect(asked.get_by_text("while working on the following original task")).to_be_hidden()
    await asked.locator(".caller-link").click()
    await expect(page.locator("#dh-agent")).to_have_text("@coder")
    await expect(page.locator(".tellask.highlight")).to_contain_text("@tellasker Which **format**?")
