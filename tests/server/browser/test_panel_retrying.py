"""The panel while a provider is overloaded (issue 32), in real Chromium against a real daemon.

Bug: an outage stopped the team after 7.5 s, and nothing showed it was being waited out. Now the retry
window waits (30 minutes by default) and the dialog's state reads "retrying: attempt n, next in s,
reason" in the panel's header; Stop stays available and ends the wait at once. Until now only the CLI's
label had a test; this one holds the panel's, with a fake Anthropic server answering 529 every time.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from browser_kit import open_with_a_new_dialog
from cli.test_cli_kit import Daemon, cli_env, write_provider_workspace
from deadlines import PAGE_MS
from playwright.async_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))  # tests/llm is not a package
from fake_servers import anthropic_error, fake_server_in_thread

pytestmark = pytest.mark.browser

KEY_VAR = "FAKE_PANEL_RETRY_KEY"
TEAM_YAML = """\
member_defaults: {provider: fake-anthropic, model: fake-claude, diligence_push_max: 0}
default_responder: lead
members:
  lead: {name: Lead, gofor: [answers]}
"""
LLM_YAML = """\
providers:
  fake-anthropic:
    apiType: anthropic
    baseUrl: {url}
    apiKeyEnvVar: FAKE_PANEL_RETRY_KEY
    models:
      fake-claude: {{context_length: 200000}}
"""


async def test_the_header_says_retrying_while_the_provider_is_overloaded_and_stop_ends_the_wait(
    tmp_path: Path, browser: Any
) -> None:
    with fake_server_in_thread() as fake:
        # Every attempt is refused as overloaded, asking for 600 s: the first wait outlasts the test.
        fake.responder = lambda _request: anthropic_error(529, "overloaded_error", "Overloaded", {"retry-after": "600"})
        ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, LLM_YAML.format(url=fake.url))
        daemon = Daemon(ws, env={**cli_env(), KEY_VAR: "k"})
        try:
            context, page = await open_with_a_new_dialog(browser, daemon.url)
            await page.fill("#input", "Status?")
            await page.click("#send")
            state = page.locator("#dh-state")
            # (the first attempt imports the SDK in the daemon: seconds on a loaded machine)
            await expect(state).to_have_text(
                "retrying: attempt 2, next in 600 s, HTTP 529: overloaded_error: Overloaded", timeout=4 * PAGE_MS
            )
            await expect(page.locator("#stop")).to_be_enabled()
            await page.click("#stop")
            await expect(state).to_have_text("interrupted")  # at once, not after the 600 s
            assert len(fake.requests) == 1, "no attempt after the Stop"
            await page.reload()
            await expect(page.locator("#conn-status")).to_have_attribute("data-state", "connected")
            await expect(state).to_have_text("interrupted")
            await context.close()
        finally:
            daemon.stop()
