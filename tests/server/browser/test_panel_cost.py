"""Item 6 of issue 18 in real Chromium: one cost figure in the row, the header and `dominds status`.

The bug: the header said $0.06 while the same dialog's row said $0, and `dominds status` disagreed
again (the row's cost was cached by a file's mtime and went stale; the CLI priced on its own). Here a
real daemon serves the page; after each reply the row and the header must show the same text, live,
and `dominds status` (asking that daemon) must print it too, along with the panel's URL.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from browser_kit import open_with_a_new_dialog
from cli.test_cli_kit import Daemon, dominds
from playwright.async_api import expect
from server_kit import COST_RESPONSES
from workspace_kit import write_workspace

pytestmark = pytest.mark.browser

async def test_the_row_the_header_and_dominds_status_show_one_cost(tmp_path: Path, browser: Any) -> None:
    ws = write_workspace(tmp_path / "ws", COST_RESPONSES).root
    with Daemon(ws) as daemon:
        context, page = await open_with_a_new_dialog(browser, daemon.url)
        row_cost = page.locator("#dialog-lists .tree > li > .row .cost")
        header_cost = page.locator("#dh-cost")
        await expect(header_cost).to_have_text("$0.00 · 0 tok")
        await expect(row_cost).to_have_text("$0.00 · 0 tok")

        await page.fill("#input", "hello")
        await page.click("#send")
        await expect(page.locator(".bubble.gen .md")).to_have_text("Hi.")
        await expect(header_cost).to_contain_text("$0.048")  # 30k in at $1/M plus 9k out at $2/M
        await expect(row_cost).to_have_text(await header_cost.inner_text()), "the row follows live"

        await page.fill("#input", "delegate")
        await page.click("#send")
        await expect(page.locator(".bubble.gen .md").last).to_have_text("Thanks.")
        await expect(header_cost).to_contain_text("$0.0571"), "the whole tree, subdialog included"
        shown = await header_cost.inner_text()
        await expect(row_cost).to_have_text(shown)
        await page.locator("#dialog-lists .tree ul .row").click()  # the subdialog's header shows its tree's figure
        await expect(page.locator("#dh-agent")).to_have_text("@coder")
        await expect(header_cost).to_have_text(shown)

        status = await asyncio.to_thread(dominds, ws, "status")
        assert status.returncode == 0, status.stderr
        assert f"panel: {daemon.url}" in status.stdout, "`dominds status` shows the URL"
        assert shown.split(" · ")[0] in status.stdout, f"the CLI prints the panel's figure {shown}:\n{status.stdout}"
        (tree,) = json.loads((await asyncio.to_thread(dominds, ws, "status", "--json")).stdout)["roots"]
        assert f"{tree['usage']['costText']} · {tree['usage']['tokensText']} tok" == shown
        await context.close()
