"""How long a test waits for what must happen (docs/testing.md, "Waiting in tests").

A passing wait returns the moment its condition holds, so these only bound a failing run. They are
generous on purpose: on a two-core machine at load 10 (the suite in several workers, or two CPU burners
beside it) a daemon's start, a `dominds` command or a provider SDK's first import takes 10-20 times what
it takes on an idle machine, and 30 s deadlines failed there while nothing was wrong.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

COMMAND_SECONDS = 120.0
"""One `dominds …` process, from spawn to exit (or a daemon until it prints its URL)."""
WAIT_SECONDS = 90.0
"""A condition polled until it holds: a dialog settles, a file appears, a daemon answers."""
PAGE_MS = 30_000
"""Playwright's `expect(...)` in real Chromium (its own default, 5 s, flaked under load)."""


async def until(
    condition: Callable[[], object], what: str = "the condition", seconds: float = WAIT_SECONDS, every: float = 0.01
) -> None:
    """Poll ``condition`` on the running event loop until it holds; fail naming ``what`` after ``seconds``.

    Returns the moment it holds. Loops of a fixed count (100 × 10 ms) bounded a failing run too tightly:
    a SIGKILLed process or a stream's first chunk can take longer than a second at load 12."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what} (waited {seconds:g} s)")
        await asyncio.sleep(every)
