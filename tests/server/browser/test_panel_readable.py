"""Issue 36 item 15 in real Chromium: what the panel shows reads as the user means it.

The bugs: a single newline in a reply rendered as a hard line break; a subdialog's title was its raw
directive ("!tellaskSession demo-build Write a plan…"); the caller's answer to an ask-back, inside the
subdialog, was labelled "open subdialog @lead"; two dialogs with the same first message had identical
rows (no time); "Mark done" on an interrupted dialog kept its "interrupted" badge.
Screenshots: panel-subdialog-<width>.png, panel-same-message-<width>.png (docs/images/ with
DOMINDS_UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_kit import Panel
from chromium import screenshot_dir
from playwright.async_api import expect

IMAGES = screenshot_dir()  # docs/images/ with DOMINDS_UPDATE_SCREENSHOTS=1

RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "message": "wrap", "response": "A paragraph the model\nwrapped at a column.\n\nA second one."},
    {"agent": "lead", "message": "build", "response": "!?@coder !tellaskSession demo-build Write a plan for a hello-world script\n"},
    {"agent": "coder", "contains": "Write a plan for a hello-world script", "response": "!?@tellasker English or Chinese?\n"},
    {"agent": "lead", "contains": "TellaskBack", "response": "English, please."},
    {"agent": "coder", "contains": "English, please.", "response": "Plan: print Hello."},
    {"agent": "lead", "contains": "@coder provided response", "response": "The coder has a plan."},
    {"agent": "lead", "message": "hello", "response": "Hello!"},
    {"agent": "lead", "message": "slow", "response": "tick " * 400, "chunk_chars": 5, "delay_ms": 20},
]


@pytest.fixture
def panel_responses() -> list[dict[str, Any]]:
    return RESPONSES


async def start_dialog(page: Any, message: str) -> None:
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    await page.fill("#input", message)
    await page.click("#send")


async def test_a_soft_line_break_is_soft(panel: Panel) -> None:
    page: Any = panel.page
    await page.goto(panel.url)
    await start_dialog(page, "wrap")
    first = page.locator(".bubble.gen .md p").first
    await expect(first).to_have_text("A paragraph the model\nwrapped at a column.")
    assert await first.locator("br").count() == 0
    assert await first.evaluate("p => p.innerText") == "A paragraph the model wrapped at a column."


async def test_subdialog_title_is_human_and_the_callers_answer_says_caller(panel: Panel) -> None:
    page: Any = panel.page
    await page.goto(panel.url)
    await start_dialog(page, "build")
    await expect(page.locator(".bubble.gen .md").last).to_have_text("The coder has a plan.")
    sub_row = page.locator("#dialog-lists .tree ul .row").first
    await expect(sub_row.locator(".head")).to_have_text("Write a plan for a hello-world script")
    await page.locator(".tellask .subdialog-link").first.click()
    await expect(page.locator("#dh-agent")).to_have_text("@coder")
    await expect(page.locator("#dh-title")).to_have_text("Write a plan for a hello-world script")
    answer = page.locator(".bubble.response", has_text="English, please.")
    await expect(answer.locator(".who")).to_contain_text("Answer from your caller @lead")
    await expect(answer.locator(".subdialog-link")).to_have_text("↑ open caller @lead")
    await expect(page.locator("#transcript")).not_to_contain_text("open subdialog @lead")
    for width in (420, 1280):
        await page.set_viewport_size({"width": width, "height": 800})
        await page.screenshot(path=str(IMAGES / f"panel-subdialog-{width}.png"))
    await answer.locator(".subdialog-link").click()  # it opens the caller
    await expect(page.locator("#dh-agent")).to_have_text("@lead")


async def test_two_dialogs_with_the_same_first_message_show_when_they_started(panel: Panel) -> None:
    page: Any = panel.page
    await page.goto(panel.url)
    for _ in range(2):
        await start_dialog(page, "hello")
        await expect(page.locator(".bubble.gen .md")).to_have_text("Hello!")
    rows = page.locator("#dialog-lists .row")
    await expect(rows).to_have_count(2)
    stamps = await rows.locator("time.when").evaluate_all("els => els.map(e => [e.dateTime, e.textContent, e.title])")
    assert len(stamps) == 2 and all(text and title for _, text, title in stamps), stamps
    assert stamps[0][0] != stamps[1][0], "each row carries its own start time"
    for width in (420, 1280):
        await page.set_viewport_size({"width": width, "height": 800})
        if width == 420:
            await page.click("#pane-tabs [data-pane=list]")
        await page.screenshot(path=str(IMAGES / f"panel-same-message-{width}.png"))


async def test_mark_done_on_an_interrupted_dialog_clears_the_interrupted_badge(panel: Panel) -> None:
    page: Any = panel.page
    await page.goto(panel.url)
    await start_dialog(page, "slow")
    await expect(page.locator(".bubble.gen .md.streaming")).to_contain_text("tick tick")
    await page.click("#stop")
    await expect(page.locator("#dh-state")).to_have_text("interrupted")
    await page.click("#ctl-done")
    await expect(page.locator("#ctl-done")).to_be_hidden()
    await expect(page.locator("#dh-state")).to_have_text("idle")
    await page.click(".tab[data-status=done]")
    await expect(page.locator("#dialog-lists .row .badge")).to_have_text("idle")
    await page.reload()  # the state is on disk, not only on the page
    await expect(page.locator("#dh-state")).to_have_text("idle")
    await expect(page.locator("#ctl-resume")).to_be_hidden()


RECORD_SHOWN = """
window.__shown = [];
const record = () => {
  const pane = document.querySelector('#dialog-pane');
  const lists = document.querySelector('#dialog-lists');
  if (!pane || !lists) return;
  window.__shown.push({
    header: pane.hidden ? null : `${document.querySelector('#dh-title').textContent} ${document.querySelector('#dh-state').textContent}`,
    list: lists.textContent,
  });
};
new MutationObserver(record).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
"""


async def test_starting_a_dialog_from_a_suggestion_never_shows_untitled_or_an_empty_list(panel: Panel) -> None:
    """The bug: for a moment after a suggestion chip started a dialog, the header said "(untitled) idle"
    and the list "No dialogs here". Every state the page went through is recorded (a MutationObserver)."""
    page: Any = panel.page
    await page.add_init_script(RECORD_SHOWN)
    await page.goto(panel.url)
    await expect(page.locator("#dialog-lists")).to_contain_text("No dialogs here")  # an empty workspace
    await page.evaluate("() => { window.__shown = []; }")
    await page.locator("#empty-suggestions .chip", has_text="hello").click()
    await expect(page.locator(".bubble.gen .md")).to_have_text("Hello!")
    await expect(page.locator("#dh-title")).to_have_text("hello")
    await expect(page.locator("#dh-state")).to_have_text("idle")
    shown = await page.evaluate("() => window.__shown")
    headers = [s["header"] for s in shown if s["header"] is not None]
    assert headers, "the dialog was shown"
    assert not [h for h in headers if "(untitled)" in h], headers
    empty = [s["list"] for s in shown if s["header"] is not None and "No dialogs here" in s["list"]]
    assert not empty, "the list never said it was empty while the new dialog was shown"
    running = [i for i, h in enumerate(headers) if h.endswith(" generating")]
    assert running, headers
    assert not [h for h in headers[: running[0]] if h.endswith(" idle")], f"idle before it ran: {headers}"


async def test_the_first_message_of_a_new_dialog_names_it_at_once(panel: Panel) -> None:
    """The same flash on the New-dialog form's path: after the first message was sent, the header said
    "(untitled) idle" until the daemon's title and run state arrived."""
    page: Any = panel.page
    await page.add_init_script(RECORD_SHOWN)
    await page.goto(panel.url)
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-title")).to_have_text("(untitled)")  # true until a message is sent
    await page.fill("#input", "hello")
    # Forget what was recorded and click Send in one task: a reset and a separate click left a gap in
    # which a late render of the form (still "(untitled) idle", before anything was sent) was recorded.
    await page.evaluate("() => { window.__shown = []; document.querySelector('#send').click(); }")
    await expect(page.locator(".bubble.gen .md")).to_have_text("Hello!")
    await expect(page.locator("#dh-state")).to_have_text("idle")
    headers = [s["header"] for s in await page.evaluate("() => window.__shown") if s["header"] is not None]
    assert not [h for h in headers if "(untitled)" in h], headers
    running = [i for i, h in enumerate(headers) if h.endswith(" generating")]
    assert running and not [h for h in headers[: running[0]] if h.endswith(" idle")], headers
