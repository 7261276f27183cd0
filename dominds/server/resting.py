"""Trees the daemon drove and left at rest are unloaded, so its memory does not grow with dialogs.

The engine keeps every tree it loads (to drive it, answer it, show it) in ``engine.roots``; recovery
unloads the trees it finds at rest, but a tree driven later stayed loaded until the daemon stopped, so
a daemon that drove thousands of dialogs held them all. Every ``interval`` seconds this sweep unloads
each loaded tree that has been quiet for two intervals: no panel displayed it, the engine found it at
rest at every sweep (``Engine.tree_at_rest``: no drive, no wanted drive, no stream, no failed write,
no workflow; its files are the truth and it is read again when needed), and nothing fetched it
(``Engine.fetched_at``: a request or a drive holding one of its dialogs across an await must not write
into a forgotten copy). The tree is noted as settled in the dialog index like recovery does, so the
next start need not load it either. A tree a panel displays stays loaded: the panel follows its
events (and Taskdoc refreshes go to the loaded dialogs).

Why soon (a sweep every half second, a second of quiet): the trees a burst of work leaves behind are
all in memory until the sweep frees them, and CPython's allocator keeps the arenas that peak needed
(a few objects that live on pin each one). With a sweep every 10 s and two sweeps of grace, a daemon
that drove 1,000 dialogs one after another sat at 69.6 MiB, 2,000 at 71.0; freed within a second or
two, at 64–66.6 MiB for 200, 1,000 and 2,000 alike (docs/performance.md, Memory). A tree read again
costs its files' read (a few milliseconds), which a dialog quiet for a second can afford.

An unloaded tree is freed by the cycle collector, not by reference counting: a dialog and its root
point at each other (and at their locks, tasks and records), so the garbage of a sweep waits for a
full collection, which CPython runs only once the objects that survived earlier ones grew by a
quarter. A daemon that drove 600 dialogs still held ~400 unloaded trees (~3 MiB) 21 s later, and
the allocator keeps the memory they pinned. A sweep that unloaded trees therefore runs a full
collection itself; ``dominds serve`` freezes the objects of its imports once they are loaded
(``gc.freeze``, cli/cmd_serve.py), so a collection walks only what was created since (a few
milliseconds instead of ~50 ms). A daemon that holds much (long transcripts on display) takes longer
over each: ~120 ms for 900,000 objects. Sweeps every half second must not spend that twice a second,
so a collection waits until ``COLLECT_SHARE`` of the time since the last one covers what that one took
(after one of up to 50 ms the next may run at the next sweep, after one of 120 ms 1.2 s later), and
the trees unloaded meanwhile wait for it as garbage. In the memory bench a collection takes 25–60 ms
(150–220 trees loaded: a bench connection displays its 50 dialogs until it closes), and the RSS
after 1,000 and 2,000 dialogs is the same as with a collection at every sweep that unloaded trees.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable

from dominds.driver.engine import Engine

log = logging.getLogger("dominds.server")

SWEEP_SECONDS = 0.5
"""Seconds between sweeps; a tree is unloaded once it has been quiet for two of them."""
COLLECT_SHARE = 0.1
"""At most this share of the daemon's time goes to the sweeps' full collections (see the module docstring)."""


class RestingTrees:
    """Unloads the trees at rest that nobody displays or fetched lately (see the module docstring)."""

    def __init__(
        self, engine: Engine, displayed: Callable[[], set[str]], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.engine = engine
        self.displayed = displayed
        """selfIds of the dialogs panels display now."""
        self.clock = clock
        """``time.monotonic`` (the engine stamps ``fetched_at`` with it); tests pass their own."""
        self._quiet_since: dict[str, float] = {}
        """rootId → since when the loaded tree was seen undisplayed and at rest at every sweep."""
        self._collect_due = False
        """Trees were unloaded since the last full collection."""
        self._next_collect = 0.0
        """``clock()`` from which the next full collection may run."""

    def sweep(self, quiet_for: float = 2 * SWEEP_SECONDS) -> list[str]:
        """One sweep: the ids of the roots unloaded (quiet for at least ``quiet_for`` seconds)."""
        engine = self.engine
        now = self.clock()
        shown = {engine.sub_roots.get(self_id, self_id) for self_id in self.displayed()}
        quiet_since = {}
        unloaded = []
        for root_id in sorted(set(engine.roots) - shown):
            if not engine.tree_at_rest(root_id):
                quiet_since[root_id] = now
                continue
            since = max(self._quiet_since.get(root_id, now), engine.fetched_at.get(root_id, now))
            if now - since >= quiet_for and engine.unload_if_at_rest(root_id):  # notes it settled, as recovery's unloads
                unloaded.append(root_id)
            else:
                quiet_since[root_id] = since
        self._quiet_since = quiet_since
        self._collect_due = self._collect_due or bool(unloaded)
        if self._collect_due and now >= self._next_collect:
            gc.collect()  # the unloaded trees' cycles (see the module docstring)
            self._collect_due = False
            self._next_collect = now + (self.clock() - now) / COLLECT_SHARE
        return unloaded

    async def run(self, interval: float = SWEEP_SECONDS) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                self.sweep(2 * interval)
            except Exception:  # never stop sweeping for one bad tree
                log.exception("unloading resting trees failed")
