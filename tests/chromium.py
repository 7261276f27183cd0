"""Real Chromium for the browser tests: Debian's /usr/bin/chromium driven by Playwright.

Playwright's own browser download is never used (reference/tooling.md §3): the launch points at the
system binary with the flags a closed network needs. A test without the binary is skipped, never faked.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_PRESENT = CHROMIUM.exists()
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]



def screenshot_dir() -> Path:
    """Where a test's screenshots go: test-artifacts/ (untracked), or docs/images/ when
    DOMINDS_UPDATE_SCREENSHOTS=1 refreshes the documentation's pictures, so an ordinary run of the suite
    never rewrites tracked files."""
    if os.environ.get("DOMINDS_UPDATE_SCREENSHOTS") == "1":
        return REPO / "docs" / "images"
    return REPO / "test-artifacts"


@contextlib.asynccontextmanager
async def launched_chromium() -> AsyncIterator[Any]:
    """A launched browser, closed on exit; skips the test when Chromium is not installed."""
    if not CHROMIUM_PRESENT:
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    from deadlines import PAGE_MS
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=PAGE_MS)

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()
