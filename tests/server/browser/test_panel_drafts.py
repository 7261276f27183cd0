"""Issue 36 item 14 in real Chromium: what the user sends while the daemon is down is a draft, not lost.

The bug: an answer typed while the daemon was down failed with a toast, and on reconnect the page was
rendered again without it: the text was gone. Now the answer (or a message) is kept as a draft (listed
above the composer, stored in the browser), sent once the daemon is back, and never delivered twice:
each draft keeps its msgId, which the daemon accepts once.
Screenshots: panel-draft-<width>.png (docs/images/ with DOMINDS_UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from browser_kit import Panel
from chromium import screenshot_dir
from cli.test_cli_kit import Daemon, write_workspace
from playwright.async_api import expect

pytestmark = pytest.mark.browser
IMAGES = screenshot_dir()  # docs/images/ with DOMINDS_UPDATE_SCREENSHOTS=1


@pytest.mark.slow  # a real daemon killed with SIGKILL and started again
async def test_an_answer_and_a_message_typed_while_the_daemon_is_killed_are_sent_once_it_is_back(
    tmp_path: Path, browser: Any
) -> None:
    ws = write_workspace(tmp_path / "ws")
    first = Daemon(ws)
    try:
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        page = await context.new_page()
        await page.goto(first.url)
        await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
        await page.click("#new-dialog-btn")
        await page.click("#new-dialog-form button[type=submit]")
        await page.fill("#input", "paint")
        await page.click("#send")
        await expect(page.locator("#dh-state")).to_have_text("waiting for you")

        first.stop(signal.SIGKILL)
        await expect(page.locator("#conn-status")).not_to_have_attribute("data-state", "connected")
        await page.fill("#input", "blue")
        await page.click("#send")  # answers the question
        drafts = page.locator("#queued-list .draft")
        await expect(drafts).to_have_count(1)
        await expect(drafts.first).to_contain_text("Your answer · draft, sent when connected")
        await expect(page.locator("#input")).to_have_value("")
        # the question has its answer (a draft): Send is a message again, never a second answer
        await expect(page.locator("#composer")).to_have_attribute("data-mode", "message")
        await page.fill("#input", "hello")
        await page.click("#send")  # a message for after the answer
        await expect(drafts).to_have_count(2)
        await expect(drafts.nth(1)).to_contain_text("Draft · sent when connected")
        await expect(page.locator("#dialog-lists .row")).to_have_count(1)  # the list stays while the daemon is away
        stored = json.loads(await page.evaluate("() => localStorage.getItem('dominds.drafts')"))
        assert [(d["kind"], d["content"]) for d in stored] == [("answer", "blue"), ("message", "hello")]
        for width in (420, 1280):
            await page.set_viewport_size({"width": width, "height": 800})
            await page.screenshot(path=str(IMAGES / f"panel-draft-{width}.png"))

        second = Daemon(ws, "--port", str(first.port))
        try:
            await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected", timeout=20_000)
            await expect(page.locator(".bubble.gen .md", has_text="Hello there!")).to_have_count(1, timeout=20_000)
            await expect(page.locator(".bubble.gen .md", has_text="Painting it blue.")).to_have_count(1)
            await expect(drafts).to_have_count(0)
            assert await page.evaluate("() => localStorage.getItem('dominds.drafts')") == "[]"
            await page.reload()  # nothing is sent again, and each was delivered once
            await expect(page.locator(".bubble.gen .md", has_text="Hello there!")).to_have_count(1)
            await expect(page.locator(".bubble.user", has_text="blue")).to_have_count(1)
            await expect(page.locator(".bubble.user", has_text="hello")).to_have_count(1)
            await context.close()
        finally:
            second.stop()
    finally:
        first.stop()


async def test_a_draft_whose_first_send_arrived_is_not_delivered_again(panel: Panel) -> None:
    """A send whose reply was lost (the socket closed after it left) stays a draft; on reconnect the
    daemon says its msgId was already accepted, and the draft is dropped, not delivered a second time."""
    page: Any = panel.page
    await page.goto(panel.url)
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    root = next(iter(panel.engine.roots.values()))
    dialog = root.local[root.root_id]
    panel.engine.submit_user_message(dialog, "hello", "ui-lost-reply")  # the first send arrived
    await expect(page.locator(".bubble.gen .md strong")).to_have_text("there")
    kept = [{"kind": "message", "dialog": {"selfId": dialog.self_id, "rootId": dialog.root_id}, "content": "hello", "msgId": "ui-lost-reply"}]
    await page.evaluate("(items) => localStorage.setItem('dominds.drafts', JSON.stringify(items))", kept)
    await page.reload()
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.wait_for_function("() => localStorage.getItem('dominds.drafts') === '[]'")
    await expect(page.locator(".bubble.user", has_text="hello")).to_have_count(1)
    await expect(page.locator("#queued-list .draft")).to_have_count(0)
