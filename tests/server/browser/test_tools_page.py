"""The Tools page (issue 17) in real Chromium: every toolset with its source and state, MCP problems listed."""

from __future__ import annotations

from typing import Any

from browser_kit import Panel
from playwright.async_api import expect


async def test_tools_page_lists_built_in_and_mcp_toolsets_with_problems(panel: Panel) -> None:
    page: Any = panel.page
    rtws = panel.engine.rtws
    (rtws.minds_dir / "mcp.yaml").write_text(
        "servers:\n"
        "  files:\n"
        "    transport: stdio\n"
        "    command: /nonexistent/mcp-server\n"
        "  broken:\n"
        "    transport: carrier-pigeon\n"
    )
    await page.goto(panel.url)  # the panel keeps the token from ?auth= for the pages it links to
    await page.goto(panel.url.split("/?")[0] + "/static/tools.html")

    rows = page.locator("#tools-table tbody tr")
    await expect(page.locator('#tools-table tr[data-toolset="ws_read"]')).to_contain_text("built-in")
    await expect(page.locator('#tools-table tr[data-toolset="files"]')).to_contain_text("MCP stdio")
    assert await rows.count() >= 5
    await expect(page.locator("#tools-problems")).to_be_visible()
    await expect(page.locator("#tools-problems li").first).to_contain_text(".minds/mcp.yaml:")
    await panel.screenshot("20-tools-page")
