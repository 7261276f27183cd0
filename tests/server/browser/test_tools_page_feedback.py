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


async def test_tools_page_speaks_chinese_and_links_back(panel: Panel) -> None:
    """The bugs: the Tools page was English only (the panel and the workflow pages offer 中文, shared
    through one stored choice) and, once MCP servers were configured, had no link back to the panel.
    Screenshots: docs/images/tools-page-zh-<width>.png."""
    page: Any = panel.page
    await page.goto(panel.url)
    await page.select_option("#lang", "zh")  # the panel's picker: the Tools page follows it
    tools_url = panel.url.split("/?")[0] + "/tools"
    await page.goto(tools_url)
    await expect(page.locator("#tools-no-mcp")).to_contain_text("尚未配置 MCP 服务器")
    await expect(page.locator("#tools-no-mcp code").first).to_have_text(".minds/mcp.yaml")
    await expect(page.locator("#tools-back")).to_have_text("← 返回面板")
    assert await page.locator("#tools-back").get_attribute("href") == "/"
    await expect(page.locator('#tools-table tr[data-toolset="ws_read"] td').nth(1)).to_have_text("内置")
    (panel.engine.rtws.minds_dir / "mcp.yaml").write_text("servers:\n  files:\n    transport: stdio\n    command: /nonexistent/mcp-server\n")
    await page.reload()
    await expect(page.locator('#tools-table tr[data-toolset="files"] td.state')).to_have_text("未启动")
    await expect(page.locator("#tools-back")).to_be_visible()  # the link back stays when there are servers
    await page.click("#tools-connect")
    await expect(page.locator("#tools-status")).to_have_text("MCP 服务器：0 个运行中，1 个不可达，共 1 个。", timeout=60_000)
    await expect(page.locator('#tools-table tr[data-toolset="files"] td.state')).to_contain_text("不可达: ")
    await expect(page.locator("thead th").first).to_have_text("工具集")
    assert await page.title() == "Dominds · 工具"
    for width in (420, 1280):
        await page.set_viewport_size({"width": width, "height": 800})
        # a phone gets one card per toolset: nothing wider than the screen (the table was cut at the right)
        overflow = await page.evaluate("() => { const m = document.querySelector('#tools-main'); return m.scrollWidth - m.clientWidth; }")
        assert overflow <= 1, f"the Tools page is {overflow} px wider than a {width} px screen"
        await page.screenshot(path=str(IMAGES / f"tools-page-zh-{width}.png"), full_page=True)
    await page.select_option("#lang", "en")  # switching back re-labels what is shown, the outcome too
    await expect(page.locator("#tools-status")).to_have_text("MCP servers: 0 running, 1 unreachable, 1 in all.")
    await expect(page.locator('#tools-table tr[data-toolset="files"] td.state')).to_contain_text("unreachable: ")
    await page.click("#tools-back")
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
