"""Item 5 of issue 18 in real Chromium: a broken team.yaml shows a banner and keeps the team.

The bug: one YAML typo emptied the agent list, Create went to a hidden member, and the only signal was
a hover-only "⚠ 2 problem(s)". Now the banner lists each problem with its file and line, the last good
team stays in the New-dialog form, a dialog made before the typo still gets its replies, a broken
llm.yaml is listed the same way, and fixing the files clears the banner live.
"""

from __future__ import annotations

import pytest
from browser_kit import Panel
from playwright.async_api import expect
from server_kit import TEAM_YAML
from workspace_kit import LLM_YAML

from dominds.cli.cmd_serve import announce_minds_change

pytestmark = pytest.mark.browser


async def test_a_team_yaml_typo_shows_a_banner_with_lines_and_keeps_the_team(panel: Panel) -> None:
    page = panel.page
    rtws = panel.engine.rtws
    await page.goto(panel.url)
    await page.click("#new-dialog-btn")
    await page.click("#new-dialog-form button[type=submit]")  # a dialog made while the team is good
    await expect(page.locator("#dh-agent")).to_have_text("@lead")
    broken = TEAM_YAML.replace("members:\n", "members:\n  oops: [unclosed\n")
    rtws.team_yaml.write_text(broken)
    line = broken.splitlines().index("  oops: [unclosed") + 2
    broken_llm = LLM_YAML + "  broken: {apiType\n"
    rtws.llm_yaml.write_text(broken_llm)
    announce_minds_change(panel.engine, [".minds/team.yaml", ".minds/llm.yaml"])

    banner = page.locator("#problem-banner")
    await expect(banner).to_be_visible()
    await expect(banner).to_have_attribute("data-severity", "error")
    await expect(banner.locator("#pb-title")).to_have_text(
        "Configuration problems: 2 error(s). Each is shown with its file and line."
    ), "no '0 warning(s)'; one YAML error per file is one error (issue 36: the two 'last good version' notes were counted as two more)"
    await expect(banner.locator(".kind-config_fallback .message")).to_contain_text(["last good version"] * 2)
    syntax = banner.locator(".problem", has_text="YAML syntax error")
    llm_line = broken_llm.splitlines().index("  broken: {apiType") + 2
    await expect(syntax.locator(".where")).to_have_text([f".minds/llm.yaml:{llm_line}", f".minds/team.yaml:{line}"])
    await expect(banner.locator(".kind-config_fallback .where")).to_have_text([".minds/llm.yaml", ".minds/team.yaml"])
    await panel.screenshot("config-banner")
    await page.fill("#input", "hello")  # the dialog made before the typo is still served, not "not a member"
    await page.click("#send")
    await expect(page.locator(".bubble.gen .md strong")).to_have_text("there")

    await page.click("#new-dialog-btn")
    options = await page.locator("#nd-agent option").evaluate_all("os => os.map(o => o.value)")
    assert options == ["lead", "coder", "tester"], "the agent list did not go empty"
    await page.click("#new-dialog-form button[type=submit]")
    await expect(page.locator("#dh-agent")).to_have_text("@lead")

    rtws.team_yaml.write_text(TEAM_YAML)  # fixed: the daemon's watcher announces it, the banner goes
    rtws.llm_yaml.write_text(LLM_YAML)
    announce_minds_change(panel.engine, [".minds/team.yaml", ".minds/llm.yaml"])
    await expect(banner).to_be_hidden()
    await expect(page.locator("#problems")).to_be_hidden()
