"""The panel in real Chromium: create, stream, delegate, answer a Q4H, stop. Screenshots in test-artifacts/."""

from __future__ import annotations

import json
from typing import Any

import pytest
from browser_kit import Panel
from playwright.async_api import expect

from dominds.server import keys

pytestmark = pytest.mark.browser


async def test_create_a_dialog_stream_a_reply_and_see_the_subdialog(panel: Panel) -> None:
    page = panel.page
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    assert "auth=" not in page.url, "the token is taken out of the address bar"
    await page.click("#new-dialog-btn")
    await page.select_option("#nd-agent", "lead")
    await page.fill("#nd-taskdoc", "tasks/t.tsk")
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    await expect(page.locator("#dialog-lists .row")).to_have_count(1)
    await expect(page.locator("#taskdoc-body")).to_contain_text("Ship the feature.")

    await page.fill("#input", "hello")
    await page.click("#send")
    await expect(page.locator(".bubble.user").last).to_contain_text("hello")
    await expect(page.locator(".bubble.gen .md strong")).to_have_text("there")
    await panel.screenshot("01-streamed-reply")

    await page.fill("#input", "delegate")
    await page.keyboard.press("Control+Enter")
    await expect(page.locator(".bubble.response")).to_contain_text("Implemented X.")
    sub_row = page.locator("#dialog-lists .tree ul .row")
    await expect(sub_row).to_have_count(1)
    await expect(sub_row.locator(".agent")).to_have_text("@coder")
    await expect(page.locator(".tellask .subdialog-link")).to_have_count(1)
    await panel.screenshot("02-delegation-tree")
    await page.locator(".tellask .subdialog-link").click()
    await expect(page.locator("#dh-agent")).to_have_text("@coder")
    await expect(page.locator("#dh-assignment")).to_contain_text("@coder please implement X")
    await expect(page.locator(".bubble.gen .md")).to_have_text("Implemented X.")
    await panel.screenshot("03-subdialog")


async def test_answer_a_q4h_from_the_panel_and_the_dialog_resumes(panel: Panel) -> None:
    page = panel.page
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.locator("#empty-suggestions .chip", has_text="paint").click()  # creates a dialog and sends
    await expect(page.locator("#q4h-count")).to_have_text("1")
    question = page.locator("#q4h-list .question")
    await expect(question).to_contain_text("@human Which colour?")
    await expect(page.locator("#dh-state")).to_have_text("waiting for you")
    await page.locator("#dialog-lists .row").first.click()  # leave and come back through the Q4H panel
    await question.click()
    form = page.locator(".tellask.asking form.answer")
    await expect(form).to_have_count(1)
    await expect(form.locator("textarea")).to_be_focused()
    await panel.screenshot("04-q4h-inline-answer")
    await form.locator("textarea").fill("blue")
    await form.locator("button").click()
    await expect(page.locator(".bubble.gen .md strong").last).to_have_text("blue")
    await expect(page.locator("#q4h-count")).to_have_text("0")
    await expect(page.locator(".tellask.answered")).to_have_count(1)
    await expect(page.locator("#dh-state")).to_have_text("idle")
    await panel.screenshot("05-q4h-answered")


async def test_stop_a_running_dialog_reconnect_and_switch_to_chinese(panel: Panel) -> None:
    page = panel.page
    modes: list[str] = []  # dialog_ready modes the page received, in order

    def watch(ws: Any) -> None:
        def frame(payload: str | bytes) -> None:
            message = json.loads(payload)
            if message.get("type") == "dialog_ready":
                modes.append(message["mode"])

        ws.on("framereceived", frame)

    page.on("websocket", watch)
    await page.goto(panel.url)
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    await page.fill("#input", "slow")
    await page.click("#send")
    await expect(page.locator("#dh-state")).to_have_text("generating")
    await expect(page.locator(".bubble.gen .md.streaming")).to_contain_text("tick tick")
    await page.click("#stop")
    await expect(page.locator("#dh-state")).to_have_text("interrupted")
    await expect(page.locator(".marker-interrupted")).to_contain_text("user_stop")
    await expect(page.locator("#ctl-resume")).to_be_visible()
    await panel.screenshot("06-stopped")

    # the daemon drops every socket: the panel reconnects and resumes without repeating anything
    await panel.app[keys.HUB].close_all(code=1012, message=b"restart")
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "reconnecting")
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.fill("#input", "hello")
    await page.click("#send")
    await expect(page.locator(".bubble.gen .md strong").last).to_have_text("there")
    kinds = await page.locator("#transcript > *").evaluate_all("els => els.map(e => e.className)")
    assert kinds == [
        "bubble user origin-user",
        "bubble gen",
        "marker marker-interrupted",
        "marker marker-resumed",
        "bubble user origin-user",
        "bubble gen",
    ], "the reconnect repeated or lost nothing"
    assert modes == ["replay", "resume"], (
        "created (replay), then resumed since the last seq after the reconnect"
    )

    await page.select_option("#lang", "zh")
    await expect(page.locator("#send")).to_have_text("发送")
    await expect(page.locator("#dh-state")).to_have_text("空闲")
    await expect(page.locator("#taskdoc-body .td-section h3").first).to_have_text("目标")  # the Goals section
    await expect(page.locator('#pane-tabs button[data-pane="side"] span').first).to_have_text("问题与差遣牒"), "the seed's word"
    await panel.screenshot("07-chinese-ui")
