"""What the workflow pages' Chromium tests share: a daemon app with the workflow's routes, and a page on it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chromium import CHROMIUM, CHROMIUM_PRESENT, launched_chromium

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import make_app

TOKEN = "workflow-page-token"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
__all__ = ["CHROMIUM", "CHROMIUM_PRESENT", "TOKEN", "WorkflowPage", "workflow_page"]


@dataclass
class WorkflowPage:
    page: Any
    engine: Engine
    errors: list[str] = field(default_factory=list)
    """Uncaught page errors; every test ends by asserting there were none."""

    async def screenshot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        await self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


@contextlib.asynccontextmanager
async def workflow_page(
    rtws: Rtws,
    aiohttp_server: Any,
    add_routes: Callable[[Any], None],
    path: str,
    *,
    language: str | None = None,
    configure: Callable[[Any], None] | None = None,
) -> AsyncIterator[WorkflowPage]:
    """``path`` of a daemon app on ``rtws`` with ``add_routes`` mounted, opened in Chromium with the token."""
    engine = Engine(rtws)
    await engine.start()
    app = make_app(engine, token=TOKEN)
    if configure is not None:
        configure(app)
    add_routes(app)
    server = await aiohttp_server(app)
    try:
        async with launched_chromium() as browser:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            handle = WorkflowPage(page, engine)
            page.on("pageerror", lambda error: handle.errors.append(str(error)))
            if language is not None:
                await page.add_init_script(f"localStorage.setItem('dominds.uiLanguage', '{language}')")
            await page.goto(f"http://127.0.0.1:{server.port}{path}?auth={TOKEN}")
            yield handle
    finally:
        await engine.close()
