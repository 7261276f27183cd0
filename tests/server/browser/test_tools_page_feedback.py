"""The Tools view says what "Start MCP servers" did, and what to do when there are none (Chromium).

The bugs: the button gave no feedback until a reload, and a workspace without MCP servers showed only
built-in toolsets with no word about `.minds/mcp.yaml`. Screenshots: test-artifacts/tools-page-<width>.png (docs/images/ with DOMINDS_UPDATE_SCREENSHOTS=1).
"""

from __future__ import annotations

from typing import Any

from browser_kit import Panel
from chromium import screenshot_dir
from playwright.async_api import expect

IMAGES = screenshot_dir()  # docs/images/ with DOMINDS_UPDATE_SCREENSHOTS=1


async def test_start_mcp_servers_reports_how_it_went(panel: Panel) -> None:
    page: Any = panel.page
    await page.goto(panel.url)  # the panel keeps the token from ?auth= for the pages it links to
    tools_url = panel.url.split("/?")[0] + "/tools"
    await page.goto(tools_url)
    await expect(page.locator("#tools-no-mcp")).to_be_visible()
    await expect(page.locator("#tools-no-mcp")).to_contain_text(".minds/mcp.yaml")
    (panel.engine.rtws.minds_dir / "mcp.yaml").write_text("servers:\n  files:\n    transport: stdio\n    command: /nonexistent/mcp-server\n")
    await page.reload()
    await expect(page.locator('#tools-table tr[data-toolset="files"]')).to_contain_text("not started")
    await expect(page.locator("#tools-no-mcp")).to_be_hidden()
    await page.click("#tools-connect")
    await expect(page.locator("#tools-status")).to_have_text("MCP servers: 0 running, 1 unreachable, 1 in all.", timeout=60_000)
    await expect(page.locator("#tools-connect")).to_be_enabled()
    await expect(page.locator('#tools-table tr[data-toolset="files"] td.state')).not_to_contain_text("unreachable: unreachable")
    for width in (420, 1280):
        await page.set_viewport_size({"width": width, "height": 800})
        await page.screenshot(path=str(IMAGES / f"tools-page-{width}.png"), full_page=True)
