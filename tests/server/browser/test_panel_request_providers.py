"""The Request view reads each API's shape (issue 35, item 2): the system prompt, the messages and the tools of
an Anthropic, a Chat Completions and a Responses request, sent through the real SDKs to the fake server."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from browser_kit import ARTIFACTS
from playwright.async_api import expect
from server_kit import TOKEN

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))  # tests/llm is not a package
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dialects import AnthropicDialect, OpenAiChatDialect, OpenAiResponsesDialect, Script, Text, Tool
from fake_servers import FakeLlmServer, running_fake_server
from test_generation_requests import write_workspace

from dominds.driver.engine import Engine
from dominds.server import make_app

pytestmark = pytest.mark.browser

DIALECTS = {"fake-anthropic": AnthropicDialect(), "fake-openai": OpenAiChatDialect(), "fake-responses": OpenAiResponsesDialect()}


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLlmServer]:
    monkeypatch.setenv("FAKE_REQUEST_KEY", "sk-browser-not-a-real-key")
    async with running_fake_server() as server:
        yield server


@pytest.mark.parametrize("provider", ["fake-anthropic", "fake-openai", "fake-responses"])
async def test_the_request_view_shows_each_apis_parts(
    tmp_path: Path, fake: FakeLlmServer, aiohttp_server: Any, browser: Any, provider: str
) -> None:
    dialect = DIALECTS[provider]
    engine = Engine(write_workspace(tmp_path / "ws", fake.url, provider))
    await engine.start()
    context = await browser.new_context(viewport={"width": 420, "height": 800})
    try:
        server = await aiohttp_server(make_app(engine, token=TOKEN))
        base = f"http://127.0.0.1:{server.port}"
        root = engine.create_dialog("lead", "tasks/t.tsk")
        fake.queue(
            dialect.reply(Script((Text("Noting it."), Tool("call_1", "add_reminder", {"content": "check the parser"})))),
            dialect.reply(Script((Text("Noted."),))),
        )
        engine.submit_user_message(root, "Remember to check the parser.")
        await engine.wait_idle(timeout=20)
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(f"{base}/?auth={TOKEN}")  # the session cookie
        await page.goto(f"{base}/static/request.html?self={root.self_id}&root={root.root_id}&genseq=2&course=1")
        await expect(page.locator("dd[data-figure=model]")).to_have_text(f"{provider}/fake-model ({engine.config.get().catalog.provider(provider).api_type})")  # type: ignore[union-attr]
        await expect(page.locator("#rq-system .rq-item summary")).to_contain_text("system")
        await page.locator("#rq-system .rq-item summary").click()
        await expect(page.locator("#rq-system pre")).to_contain_text("# You are @lead")
        messages = page.locator("#rq-messages .rq-message")
        await expect(messages.filter(has_text="Remember to check the parser.")).not_to_have_count(0)
        await expect(page.locator("#rq-messages")).to_contain_text("call_1")  # the tool call and its result
        await expect(page.locator("#rq-tools .rq-tool summary", has_text="add_reminder")).to_have_count(1)
        await expect(page.locator("#rq-params pre")).to_contain_text('"stream": true')
        await page.screenshot(path=str(ARTIFACTS / f"request-{provider}-420.png"), full_page=True)
        assert errors == []
    finally:
        await context.close()
        await engine.close()
