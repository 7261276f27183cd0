"""A long engine start tells how far it has got (``driver/start_progress.py``); a quick one says nothing.

The gap this fills: a first start on a big workspace (no dialog index yet) reads every dialog before the
daemon serves, minutes at 100,000 dialogs, and said nothing meanwhile: no URL, no answer, no word.
"""

from __future__ import annotations

import pytest
from workspace_kit import write_idle_root

from dominds.driver import start_progress
from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.store.dialog_store import DialogStore


def _idle_roots(rtws: Rtws, count: int) -> None:
    store = DialogStore(rtws)
    for _ in range(count):
        write_idle_root(store)


async def test_a_start_past_the_delay_reports_each_tree_gone_through_and_the_end(
    tmp_rtws: Rtws, monkeypatch: pytest.MonkeyPatch
) -> None:
    _idle_roots(tmp_rtws, 12)
    monkeypatch.setattr(start_progress, "REPORT_AFTER_SECONDS", 0.0)
    monkeypatch.setattr(start_progress, "REPORT_EVERY_SECONDS", 0.0)
    reports: list[tuple[int, int]] = []
    engine = Engine(tmp_rtws, resume=False, take_lock=False, on_start_progress=lambda done, total: reports.append((done, total)))
    await engine.start()
    try:
        assert engine.trees_at_start == 12
        assert reports == [*((n, 12) for n in range(1, 13)), (12, 12)], "each tree, then the end"
    finally:
        await engine.close()


async def test_a_quick_start_says_nothing(tmp_rtws: Rtws) -> None:
    _idle_roots(tmp_rtws, 5)
    reports: list[tuple[int, int]] = []
    engine = Engine(tmp_rtws, resume=False, take_lock=False, on_start_progress=lambda done, total: reports.append((done, total)))
    await engine.start()
    try:
        assert engine.trees_at_start == 5
        assert reports == [], "a start of well under REPORT_AFTER_SECONDS is not reported"
    finally:
        await engine.close()
