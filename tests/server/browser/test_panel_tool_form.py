"""Issue 33 in real Chromium: a tellask made with a function tool (``tellask: tools``) is drawn like a
text-form block: the call site with its headline and body, the link to its subdialog, and the reply."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from browser_kit import Panel
from playwright.async_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))  # tests/llm is not a package
from dialects import AnthropicDialect, Script, Text, Tool
from fake_servers import RecordedRequest, Reply, running_fake_server

pytestmark = pytest.mark.browser


async def test_a_tool_form_tellask_is_drawn_like_a_text_form_one(panel: Panel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_PANEL_TOOLS_KEY", "sk-ant-panel-not-a-real-key")
    async with running_fake_server() as fake:
        fake.validate_tool_history = True

        def respond(request: RecordedRequest) -> Reply:
            system = request.body["system"][0]["text"]
            last = json.dumps(request.body["messages"][-1])
            if "# You are @coder" in system:
                blocks: tuple[Text | Tool, ...] = (Text("Implemented X."),)
            elif "Implemented X." in last:
                blocks = (Text("Thanks, X is done."),)
            else:
                blocks = (Text("Asking coder."), Tool("call_x", "tellaskSessionless", {"targetAgentId": "coder", "tellaskContent": "please implement X"}))
            return AnthropicDialect().reply(Script(blocks))

        fake.responder = respond
        rtws = panel.engine.rtws
        rtws.llm_yaml.write_text(
            "providers:\n  fake-anthropic:\n    apiType: anthropic\n"
            f"    baseUrl: {fake.url}\n    apiKeyEnvVar: FAKE_PANEL_TOOLS_KEY\n"
            "    models:\n      fake-model: {context_length: 200000}\n"
        )
        rtws.team_yaml.write_text(
            "member_defaults: {provider: fake-anthropic, model: fake-model, diligence_push_max: 0, tellask: tools}\n"
            "default_responder: lead\nmembers:\n  lead: {name: Lead}\n  coder: {name: Coder}\n"
        )
        page = panel.page
        await page.goto(panel.url)
        await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
        await page.click("#new-dialog-btn")
        await page.click("#new-dialog-form button[type=submit]")
        await expect(page.locator("#dh-agent")).to_have_text("@lead")
        await page.fill("#input", "delegate")
        await page.click("#send")
        await expect(page.locator(".bubble.gen .md").last).to_have_text("Thanks, X is done.")
        call = page.locator(".tellask").first
        await expect(call.locator(".tellask-head")).to_have_text("@coder")
        await expect(call.locator(".tellask-body")).to_have_text("please implement X")
        await expect(call.locator(".call-link")).to_have_count(1)
        await expect(page.locator(".bubble.response")).to_contain_text("Implemented X.")
        await page.reload()  # the same from the files (replay)
        await expect(page.locator(".tellask .tellask-head").first).to_have_text("@coder")
        await expect(page.locator(".tellask .call-link")).to_have_count(1)
        assert not fake.history_problems
        await panel.screenshot("tool-form-tellask")
