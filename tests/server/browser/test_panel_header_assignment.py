"""A subdialog's assignment line in the dialog header, in real Chromium: rendered, sanitised, two lines at most.

The bug: the header showed the assignment's body as raw text: `**bold**`, backticks and `[links](…)`
literally, a list's dashes and a code fence's backticks as typed, while the Assignment bubble in the
course renders the same body. Now the header shows the body as the server rendered and sanitised it
(the ``bodyHtml`` that ``dialog_ready`` carries), flattened into one paragraph and clipped to two lines
with an ellipsis, so a long assignment never pushes the course down; the full assignment stays in the
Assignment bubble. The headline stays as written (like the bubble's and the call site's headline).
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_kit import Panel, open_the_subdialog_of_a_suggestion
from playwright.async_api import expect

pytestmark = pytest.mark.browser

BODY = [
    "Read `docs/notes.md` and the [style guide](https://example.com/guide), then make them **shorter**:",
    "",
    "## Steps",
    "",
    "- fix the typos",
    '- merge the duplicate entries <img src=x onerror="window.pwned=1">',
    "",
    "```python",
    'print("keep the code as code")',
    "```",
    "",
    "Finally tell me which sections you changed and why, with every heading you renamed and the reason, so "
    "that I can check the changes against the changelog before the release goes out tomorrow morning.",
]
RESPONSES: list[dict[str, Any]] = [
    {
        "agent": "lead",
        "message": "delegate",
        "response": "Asking coder.\n!?@coder please tidy the release notes\n" + "".join(f"!?{line}\n" for line in BODY),
    },
    {"agent": "coder", "contains": "please tidy the release notes", "response": "Tidied."},
    {"agent": "lead", "contains": "@coder provided response", "response": "Thanks."},
]

HEADER_SHAPE = """() => {
  const box = document.querySelector("#dh-assignment");
  const style = getComputedStyle(box);
  const header = document.querySelector("#dialog-header");
  return {
    height: box.getBoundingClientRect().height,
    lineHeight: parseFloat(style.lineHeight),
    clipped: box.scrollHeight > box.clientHeight + 1,
    clamp: style.webkitLineClamp,
    overflowX: header.scrollWidth - header.clientWidth,
    pageOverflowX: document.documentElement.scrollWidth - innerWidth,
  };
}"""


@pytest.fixture
def panel_responses() -> list[dict[str, Any]]:
    return RESPONSES


@pytest.fixture
def panel_suggestions() -> list[str]:
    return ["delegate"]


async def test_the_header_shows_the_assignment_rendered_and_clipped_to_two_lines(panel: Panel) -> None:
    page = panel.page
    await open_the_subdialog_of_a_suggestion(panel, "delegate", "Tidied.", "@coder")

    line = page.locator("#dh-assignment")
    await expect(line).to_be_visible()
    await expect(line.locator(".head")).to_have_text("@coder please tidy the release notes")
    await expect(line.locator("strong")).to_have_text("shorter")
    await expect(line.locator("code").first).to_have_text("docs/notes.md")
    link = line.locator("a", has_text="style guide")
    await expect(link).to_have_attribute("href", "https://example.com/guide")
    await expect(link).to_have_attribute("rel", "noopener noreferrer")
    text = await line.text_content() or ""
    for syntax in ("**", "`", "](", "## ", "- fix"):
        assert syntax not in text, f"markdown syntax {syntax!r} is shown in the header: {text!r}"
    # the raw HTML of the body is text, never an element
    await expect(line.locator("img, script")).to_have_count(0)
    assert '<img src=x onerror="window.pwned=1">' in text
    assert not await page.evaluate("window.pwned === 1")
    # the full text (without markdown syntax) is the line's tooltip
    title = await line.get_attribute("title") or ""
    assert "before the release goes out tomorrow morning." in title and "**" not in title

    for width in (1280, 900, 420):
        await page.set_viewport_size({"width": width, "height": 820})
        shape = await page.evaluate(HEADER_SHAPE)
        assert shape["clamp"] == "2", shape
        assert shape["height"] <= 2 * shape["lineHeight"] + 1, f"more than two lines at {width} px: {shape}"
        assert shape["clipped"], f"the long assignment is cut at {width} px, so the ellipsis must show: {shape}"
        assert shape["overflowX"] <= 0 and shape["pageOverflowX"] <= 0, f"the header overflows at {width} px: {shape}"
        for scheme in ("light", "dark"):
            await page.emulate_media(color_scheme=scheme)
            await panel.screenshot(f"header-assignment-{width}-{scheme}")
        await page.emulate_media(color_scheme="light")

    # the bubble in the course still shows the whole body
    bubble = page.locator(".bubble.origin-assignment.framed-tellask")
    await expect(bubble.locator(".md li")).to_have_count(2)
    await expect(bubble.locator(".md pre")).to_contain_text('print("keep the code as code")')
