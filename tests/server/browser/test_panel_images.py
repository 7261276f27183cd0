"""Issue 33 in real Chromium: an image pasted (or dropped) into the composer is stored as a dialog artifact, shown in
the transcript, and reaches the model's request as image content (the fake Anthropic server records it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from browser_kit import Panel
from playwright.async_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))  # tests/llm is not a package
from dialects import AnthropicDialect, Script, Text
from fake_servers import RecordedRequest, Reply, running_fake_server

pytestmark = pytest.mark.browser

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

PASTE = """(b64) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], "shot.png", { type: "image/png" }));
  document.querySelector("#input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
}"""
DROP = """(b64) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], "dropped.png", { type: "image/png" }));
  data.items.add(new File(["just text"], "notes.txt", { type: "text/plain" }));
  document.querySelector("#input").dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
}"""


async def test_a_pasted_image_is_shown_and_reaches_the_model(panel: Panel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_PANEL_ANTHROPIC_KEY", "sk-ant-panel-not-a-real-key")
    async with running_fake_server() as fake:

        def respond(request: RecordedRequest) -> Reply:
            return AnthropicDialect().reply(Script((Text("A single red pixel."),)))

        fake.responder = respond
        rtws = panel.engine.rtws
        rtws.llm_yaml.write_text(
            "providers:\n  fake-anthropic:\n    apiType: anthropic\n"
            f"    baseUrl: {fake.url}\n    apiKeyEnvVar: FAKE_PANEL_ANTHROPIC_KEY\n"
            "    models:\n      fake-model: {context_length: 200000}\n"
        )
        rtws.team_yaml.write_text(
            "member_defaults: {provider: fake-anthropic, model: fake-model, diligence_push_max: 0}\n"
            "default_responder: lead\nmembers:\n  lead: {name: Lead}\n"
        )
        page = panel.page
        await page.goto(panel.url)
        await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
        await page.click("#new-dialog-btn")
        await page.click("#new-dialog-form button[type=submit]")
        await expect(page.locator("#dh-agent")).to_have_text("@lead")

        await page.evaluate(PASTE, PNG_B64)
        await expect(page.locator("#attachments .attachment")).to_have_count(1)
        await page.evaluate(DROP, PNG_B64)  # a dropped picture too; a dropped text file is not an image
        await expect(page.locator("#attachments .attachment")).to_have_count(2)
        await page.fill("#input", "What is in this picture?")
        await page.click("#send")
        await expect(page.locator(".bubble.gen .md").last).to_have_text("A single red pixel.")
        await expect(page.locator(".bubble.user img.artifact")).to_have_count(2)
        await expect(page.locator("#attachments .attachment")).to_have_count(0)

        user = fake.requests[-1].body["messages"][-1]
        images = [b for b in user["content"] if b.get("type") == "image"]
        assert len(images) == 2 and all(i["source"]["media_type"] == "image/png" for i in images)
        assert all(i["source"]["data"] == PNG_B64 for i in images)
        texts = [b["text"] for b in user["content"] if b.get("type") == "text"]
        assert any("What is in this picture?" in t and "[image saved as artifact upload-" in t for t in texts)
        await panel.screenshot("composer-pasted-image")
