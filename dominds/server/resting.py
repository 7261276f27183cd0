"""Trees the daemon drove and left at rest are unloaded, so its memory does not grow with dialogs.

The engine keeps every tree it loads (to drive it, answer it, show it) in ``engine.roots``; recovery
unloads the trees it finds at rest, but a tree driven later stayed loaded until the daemon stopped, so
a daemon that drove thousands of dialogs held them all. Every ``interval`` seconds this sweep unloads
each loaded tree that no panel displays and that was already loaded and not displayed at the previous
sweep, if the engine finds it at rest (``Engine.unload_if_at_rest``: no drive, no wanted drive, no
stream, no failed write, no workflow; its files are the truth and it is read again when needed), and
notes it as settled in the dialog index like recovery does, so the next start need not load it either.
A tree a panel displays stays loaded: the panel follows its events (and Taskdoc refreshes go to the
loaded dialogs).

An unloaded tree is freed by the cycle collector, not by reference counting: a dialog and its root
point at each other (and at their locks, tasks and records), so the garbage of a sweep waits for a
full collection, which CPython runs only once the objects that survived earlier ones grew by a
quarter. A daemon that drove 600 dialogs still held ~400 unloaded trees (~3 MiB) 21 s later, and
the allocator keeps the memory they pinned. A sweep that unloaded trees therefore runs a full
collection itself; ``dominds serve`` freezes the objects of its imports once they are loaded
(``gc.freeze``, cli/cmd_serve.py), so a collection walks only what was created since (a few
milliseconds instead of ~50 ms).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable

from dominds.driver.engine import Engine

log = logging.getLogger("dominds.server")

SWEEP_SECONDS = 10.0


class RestingTrees:
    """Unloads the trees at rest that nobody displays (see the module docstring)."""

    def __init__(self, engine: Engine, displayed: Callable[[], set[str]]) -> None:
        self.engine = engine
        self.displayed = displayed
        """selfIds of the dialogs panels display now."""
        self._candidates: set[str] = set()
        """Roots loaded and not displayed at the previous sweep."""

    def sweep(self) -> list[str]:
        """One sweep: the ids of the roots unloaded."""
        engine = self.engine
        shown = {engine.sub_roots.get(self_id, self_id) for self_id in self.displayed()}
        candidates = set(engine.roots) - shown
        unloaded = []
        for root_id in sorted(candidates & self._candidates):
            if engine.unload_if_at_rest(root_id):  # and notes it settled, as recovery's unloads
                unloaded.append(root_id)
        self._candidates = candidates - set(unloaded)
        if unloaded:
            gc.collect()  # their cycles (see the module docstring)
        return unloaded

    async def run(self, interval: float = SWEEP_SECONDS) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                self.sweep()
            except Exception:  # never stop sweeping for one bad tree
                log.exception("unloading resting trees failed")
