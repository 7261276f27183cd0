"""Items 4 and 9 of issue 18 in real Chromium: the composer while a question is pending, and the keys.

Item 4, the bug: a message typed while a question was pending vanished into a hidden queue, was
delivered before the answer and the agent replied twice. Now the composer says what Send does (answer
the selected question, or queue a message), a queued message is listed with a Cancel button until the
agent reads it, and the agent reads the answer first.
Item 9, the bugs: Ctrl+Enter did nothing in the answer box, Escape did not close the New-dialog form,
and "Declare dead" used the browser's prompt().
"""

from __future__ import annotations

import pytest
from browser_kit import Panel
from playwright.async_api import expect

pytestmark = pytest.mark.browser


async def test_the_composer_answers_or_queues_visibly_and_a_queued_message_can_be_cancelled(panel: Panel) -> None:
    page = panel.page
    native: list[str] = []
    page.on("dialog", lambda d: native.append(d.message))
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.locator("#empty-suggestions .chip", has_text="paint").click()
    await expect(page.locator("#dh-state")).to_have_text("waiting for you")

    composer = page.locator("#composer")
    await expect(composer).to_have_attribute("data-mode", "answer")
    await expect(page.locator("#send")).to_have_text("Answer")
    await expect(page.locator("#composer-hint")).to_contain_text("Which colour?")

    await page.check('input[name="composer-mode"][value="queue"]')
    await expect(page.locator("#send")).to_have_text("Queue")
    await page.fill("#input", "also make it shiny")
    await page.keyboard.press("Control+Enter")
    queued = page.locator("#queued-list .queued")
    await expect(queued).to_have_count(1)
    await expect(queued).to_contain_text("read after your answer")
    await expect(queued).to_contain_text("also make it shiny")
    await expect(page.locator("#input")).to_have_value("")
    await panel.screenshot("composer-queued")
    await queued.locator(".queued-cancel").click()
    await expect(queued).to_have_count(0)

    await page.fill("#input", "also make it shiny")
    await page.click("#send")
    await expect(queued).to_have_count(1)
    await page.check('input[name="composer-mode"][value="answer"]')
    await page.fill("#input", "blue")
    await page.keyboard.press("Control+Enter")
    replies = page.locator(".bubble.gen .md")
    await expect(replies.last).to_have_text("Shiny too.")
    texts = await replies.all_inner_texts()
    assert texts[-2:] == ["Painting it blue.", "Shiny too."], "the answer first, then the queued message, once each"
    await expect(queued).to_have_count(0)
    await expect(composer).to_have_attribute("data-mode", "message")
    await expect(page.locator("#send")).to_have_text("Send")
    users = await page.locator(".bubble.user .plain").all_inner_texts()
    assert users == ["paint", "blue", "also make it shiny"]
    assert native == []


async def test_ctrl_enter_answers_escape_closes_the_form_and_declare_dead_asks_in_the_page(panel: Panel) -> None:
    page = panel.page
    native: list[str] = []
    page.on("dialog", lambda d: native.append(d.message))
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")

    await page.click("#new-dialog-btn")
    await expect(page.locator("#new-dialog-form")).to_be_visible()
    await page.locator("#nd-taskdoc").press("Escape")
    await expect(page.locator("#new-dialog-form")).to_be_hidden()

    await page.locator("#empty-suggestions .chip", has_text="paint").click()
    answer_box = page.locator(".tellask.asking form.answer textarea")
    await expect(answer_box).to_have_count(1)
    await answer_box.fill("blue")
    await answer_box.press("Control+Enter")
    await expect(page.locator(".bubble.gen .md strong").last).to_have_text("blue")
    await expect(page.locator(".tellask.answered")).to_have_count(1)

    await page.fill("#input", "delegate")
    await page.keyboard.press("Control+Enter")
    await expect(page.locator(".bubble.response")).to_contain_text("Implemented X.")
    await page.locator(".tellask .subdialog-link").first.click()
    await expect(page.locator("#dh-agent")).to_have_text("@coder")
    await page.click("#ctl-dead")
    dead = page.locator("dialog#declare-dead-dialog")
    await expect(dead).to_be_visible()
    await dead.locator("textarea").press("Escape")
    await expect(dead).to_have_count(0)
    await expect(page.locator("#dh-state")).not_to_have_text("dead")
    await page.click("#ctl-dead")
    await dead.locator("textarea").fill("not needed any more")
    await panel.screenshot("declare-dead-dialog")
    await dead.locator("textarea").press("Control+Enter")
    await expect(page.locator("#dh-state")).to_have_text("dead")
    assert native == [], "no prompt()"
