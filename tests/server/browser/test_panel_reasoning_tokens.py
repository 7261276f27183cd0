"""Issue 33 item 3 in real Chromium: a thinking model's reasoning tokens are shown with the generation's
usage in the panel, live and after a reload (replayed from the files).

Before this test the figure was only checked on the event (``test_tellask_tools.py``); nothing looked at
what the panel draws."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from browser_kit import Panel, new_lead_dialog
from playwright.async_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))  # tests/llm is not a package
from dialects import OpenAiChatDialect, Script, ScriptUsage, Text, Thinking
from fake_servers import RecordedRequest, Reply, running_fake_server

pytestmark = pytest.mark.browser


async def test_reasoning_tokens_are_shown_with_the_generations_usage(panel: Panel) -> None:
    async with running_fake_server() as fake:

        def respond(request: RecordedRequest) -> Reply:
            usage = ScriptUsage(input=40, output=30, reasoning=12)
            return OpenAiChatDialect().reply(Script((Thinking("weigh it"), Text("Thought it through.")), usage=usage))

        fake.responder = respond
        rtws = panel.engine.rtws
        rtws.llm_yaml.write_text(
            "providers:\n  fake-openai:\n    apiType: openai-compatible\n"
            f"    baseUrl: {fake.url}/v1\n    apiKeyEnvVar: null\n"
            "    models:\n      fake-model: {context_length: 128000}\n"
        )
        rtws.team_yaml.write_text(
            "member_defaults: {provider: fake-openai, model: fake-model, diligence_push_max: 0}\n"
            "default_responder: lead\nmembers:\n  lead: {name: Lead}\n"
        )
        page = panel.page
        await new_lead_dialog(page, panel.url)
        await page.fill("#input", "think")
        await page.click("#send")
        await expect(page.locator(".bubble.gen .md").last).to_have_text("Thought it through.")
        usage = page.locator(".bubble.gen .gen-usage")
        await expect(usage).to_have_count(1)
        await expect(usage).to_contain_text("→ 30")
        await expect(usage).to_contain_text("12 reasoning")
        await page.reload()  # the same from the files (replay)
        await expect(page.locator(".bubble.gen .gen-usage")).to_contain_text("12 reasoning")
        await panel.screenshot("reasoning-tokens")
