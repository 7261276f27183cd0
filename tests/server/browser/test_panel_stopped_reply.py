"""Item 10 of issue 18 in real Chromium: the text of a stopped reply stays after a reload and in `dominds show`.

The bug: a reply the user stopped was shown live while it streamed, but its text was thrown away; after
a reload (or a daemon restart) the bubble was gone and `dominds show` did not have it either. Here the
page stops a streaming reply, is reloaded, then the daemon is restarted under it: the same text is
shown each time, marked as stopped, and `dominds show` prints it.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest
from browser_kit import open_with_a_new_dialog
from cli.test_cli_kit import Daemon, dominds, write_workspace
from playwright.async_api import expect

pytestmark = pytest.mark.browser


async def test_a_stopped_reply_is_kept_after_a_reload_a_restart_and_in_dominds_show(tmp_path: Path, browser: Any) -> None:
    ws = write_workspace(tmp_path / "ws")
    first = Daemon(ws)
    try:
        context, page = await open_with_a_new_dialog(browser, first.url)
        await page.fill("#input", "slow")  # 600 x's, three every 15 ms
        await page.click("#send")
        streaming = page.locator(".bubble.gen .md.streaming")
        await expect(streaming).to_contain_text("x" * 30)
        await page.click("#stop")
        await expect(page.locator("#dh-state")).to_have_text("interrupted")
        reply = page.locator(".bubble.gen .md")
        await expect(reply).to_have_count(1)
        await expect(reply).not_to_have_class("md streaming")
        live = (await reply.inner_text()).strip()
        assert 30 <= len(live) < 600 and set(live) == {"x"}, live
        note = page.locator('.saying[data-incomplete="stopped"] .incomplete-note')
        await expect(note).to_have_text("⋯ incomplete: stopped by the user")

        await page.reload()
        await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
        await expect(reply).to_have_count(1)
        await expect(reply).to_have_text(live), "the stopped text is kept after a reload"
        await expect(note).to_have_text("⋯ incomplete: stopped by the user")

        first.stop(signal.SIGTERM)
        second = Daemon(ws, "--port", str(first.port))
        try:
            await page.reload()
            await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
            await expect(reply).to_have_text(live), "and after a daemon restart"
            await expect(note).to_have_count(1)
            root_id = await page.evaluate("new URLSearchParams(location.search).get('dialog')")
            shown = await asyncio.to_thread(dominds, ws, "show", root_id)
            assert shown.returncode == 0, shown.stderr
            assert f"{live}\n  ⋯ [incomplete: stopped by the user]" in shown.stdout, shown.stdout
            await context.close()
        finally:
            second.stop()
    finally:
        first.stop()
