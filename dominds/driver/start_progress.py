"""Progress of an engine start that goes through many trees, for whoever started it to show.

A start goes through every tree of ``run/`` before it serves (``recovery.py``). With the dialog index in
place that takes about a second at 10,000 dialogs; a first start on a workspace (no index yet, or the
index deleted) reads every dialog once, which takes minutes at 100,000 dialogs. Without a word the user
saw a daemon that neither printed its URL nor answered. The report starts only once a start has taken
``REPORT_AFTER_SECONDS`` (a usual start says nothing) and comes every ``REPORT_EVERY_SECONDS``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from dominds.ids import is_dialog_id

REPORT_AFTER_SECONDS = 2.0
REPORT_EVERY_SECONDS = 2.0

StartReport = Callable[[int, int], None]
"""Called with (trees gone through so far, trees of ``run/``)."""


class StartProgress:
    """Counts the trees a start goes through and reports now and then (see the module docstring)."""

    def __init__(self, run_dir: Path, report: StartReport | None) -> None:
        self._run_dir = run_dir
        self._report = report
        self._due = time.monotonic() + REPORT_AFTER_SECONDS
        self._total: int | None = None
        self.reported = False

    def tick(self, done: int) -> None:
        if self._report is None:
            return
        now = time.monotonic()
        if now < self._due:
            return
        self._due = now + REPORT_EVERY_SECONDS
        self._tell(done)

    def finish(self, done: int) -> None:
        """The last report (all trees), only if an earlier one was made."""
        if self.reported:
            self._tell(done)

    def _tell(self, done: int) -> None:
        if self._report is None:
            return
        if self._total is None:  # counted once, when the first report is due: a quick start never counts
            self._total = _count_trees(self._run_dir)
        self.reported = True
        self._report(done, max(self._total, done))


def _count_trees(run_dir: Path) -> int:
    try:
        with os.scandir(run_dir) as entries:
            return sum(1 for e in entries if e.is_dir(follow_symlinks=False) and is_dialog_id(e.name))
    except OSError:
        return 0
