"""Where the demo's suggestion chips show, in real Chromium.

Bug (issue 36, item 16): the chips of a scripted database in `.minds/` showed in subdialogs (a click
sent the demo's prompt to a teammate mid-task) and in workspaces whose team answers from a paid
provider (one click sent a demo prompt to it). Now they show only on a main dialog of the agent whose
scripted database holds them, and not at all when the default responder answers from another provider.
"""

from __future__ import annotations

import pytest
from browser_kit import Panel, open_the_subdialog_of_a_suggestion
from playwright.async_api import expect

from dominds.cli.cmd_serve import announce_minds_change

pytestmark = pytest.mark.browser


async def test_chips_only_on_a_main_dialog_of_the_scripted_agent(panel: Panel) -> None:
    page = panel.page
    await open_the_subdialog_of_a_suggestion(panel, "delegate", "Implemented X.", "@coder")
    await expect(page.locator(".bubble.gen .md")).to_have_text("Implemented X.")
    await expect(page.locator("#suggestions .chip")).to_have_count(0)  # a subdialog: no demo prompts
    await page.click("#dh-parent")  # back to the caller
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    await expect(page.locator("#suggestions .chip")).to_have_count(3)  # the main dialog of @lead: its prompts


async def test_no_chips_when_the_team_answers_from_a_paid_provider(panel: Panel) -> None:
    page = panel.page
    await page.goto(panel.url)
    await expect(page.locator("#empty-suggestions .chip")).to_have_count(3)
    rtws = panel.engine.rtws
    rtws.llm_yaml.write_text(rtws.llm_yaml.read_text() + (
        "  paid:\n    name: Paid\n    apiType: anthropic\n    baseUrl: http://127.0.0.1:9\n    apiKeyEnvVar: PAID_TEST_KEY\n"
        "    models:\n      big: {context_length: 200000}\n"
    ))
    rtws.team_yaml.write_text(rtws.team_yaml.read_text().replace("  provider: scripted\n  model: test\n", "  provider: paid\n  model: big\n"))
    announce_minds_change(panel.engine, [".minds/team.yaml", ".minds/llm.yaml"])
    await page.reload()
    await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    await expect(page.locator("#suggestions .chip")).to_have_count(0)
    await expect(page.locator("#empty-suggestions .chip")).to_have_count(0)
