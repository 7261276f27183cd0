"""Item 1 of issue 18 in real Chromium: restart the daemon (a real `dominds serve` process) under an open page.

The bug: every restart made a new token; the open page then showed "Token required" and a native
``prompt()``. Now the token is kept in the workspace and the page holds a session cookie, so it just
reconnects; a page without the cookie asks in place (an in-page dialog), never with ``prompt()``.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from cli.test_cli_kit import Daemon, write_workspace
from playwright.async_api import expect

pytestmark = pytest.mark.browser


async def test_the_open_page_survives_a_daemon_restart_and_new_tabs_need_no_token(
    tmp_path: Path, browser: Any
) -> None:
    ws = write_workspace(tmp_path / "ws")
    native_dialogs: list[str] = []
    first = Daemon(ws)
    try:
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        page = await context.new_page()
        page.on("dialog", lambda d: native_dialogs.append(d.message))
        await page.goto(first.url)
        await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
        assert "auth=" not in page.url
        await page.click("#new-dialog-btn")
        await page.click("#new-dialog-form button[type=submit]")
        await page.fill("#input", "hello")
        await page.click("#send")
        await expect(page.locator(".bubble.gen .md")).to_have_text("Hello there!")

        first.stop(signal.SIGTERM)
        await expect(page.locator("#conn-status")).not_to_have_attribute("data-state", "connected")
        second = Daemon(ws, "--port", str(first.port))
        try:
            assert second.port == first.port and second.token == first.token
            await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected", timeout=20_000)
            await page.fill("#input", "hello")
            await page.click("#send")
            await expect(page.locator(".bubble.gen .md")).to_have_count(2)
            await expect(page.locator(".bubble.gen .md").last).to_have_text("Hello there!")
            await expect(page.locator("#token-dialog")).to_have_count(0)

            tab = await context.new_page()  # same browser session: the cookie is enough
            await tab.goto(f"{second.http}/")
            await expect(tab.locator("#conn-status")).to_have_attribute("data-state", "connected")
            await expect(tab.locator("#dialog-lists .row")).to_have_count(1)

            stranger = await browser.new_context()  # no cookie: asked in the page, not with prompt()
            lost = await stranger.new_page()
            lost.on("dialog", lambda d: native_dialogs.append(d.message))
            await lost.goto(f"{second.http}/")
            token_dialog = lost.locator("dialog#token-dialog")
            await expect(token_dialog).to_be_visible()
            await token_dialog.locator("input").fill("not-the-token")
            await token_dialog.locator("button[type=submit]").click()
            await expect(token_dialog.locator(".form-error")).to_contain_text("not this daemon's")
            await token_dialog.locator("input").fill(second.url)  # a pasted URL works as well as the token
            await token_dialog.locator("button[type=submit]").click()
            await expect(lost.locator("#conn-status")).to_have_attribute("data-state", "connected")
            await expect(token_dialog).to_have_count(0)
            await stranger.close()
            await context.close()
        finally:
            second.stop()
    finally:
        first.stop()
    assert native_dialogs == [], "no native prompt()/alert()"
