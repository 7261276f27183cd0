"""Real Chromium (Debian's /usr/bin/chromium) driven by Playwright against the daemon's app.

Playwright's own browser download is never used (reference/tooling.md §3): the launch points at the
system binary with the flags a closed network needs. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from browser_kit import BROWSER_RESPONSES, SUGGESTIONS, Panel
from chromium import launched_chromium
from server_kit import TOKEN, write_workspace

from dominds.driver.engine import Engine
from dominds.server import make_app


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with launched_chromium() as launched:
        yield launched


@pytest.fixture
def panel_responses() -> list[dict[str, Any]]:
    """The scripted replies of the panel's workspace (a test module may override this fixture)."""
    return BROWSER_RESPONSES


@pytest.fixture
def panel_suggestions() -> list[str]:
    return SUGGESTIONS


@pytest.fixture
async def panel(
    tmp_path: Path,
    aiohttp_server: Any,
    browser: Any,
    panel_responses: list[dict[str, Any]],
    panel_suggestions: list[str],
) -> AsyncIterator[Panel]:
    rtws = write_workspace(tmp_path / "ws", panel_responses, panel_suggestions)
    engine = Engine(rtws)
    await engine.start()
    app = make_app(engine, token=TOKEN, taskdoc_poll_interval=0.2)
    server = await aiohttp_server(app)
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    page = await context.new_page()
    opened = Panel(page, engine, app, f"http://127.0.0.1:{server.port}/?auth={TOKEN}")
    page.on("pageerror", lambda error: opened.errors.append(str(error)))
    page.on("console", lambda msg: opened.errors.append(msg.text) if msg.type == "error" else None)
    yield opened
    await context.close()
    await engine.close()
    assert opened.errors == [], "the page logged errors"
