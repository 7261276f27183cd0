"""CI crash soak (N=20 by default; DOMINDS_SOAK_N overrides; bin/soak N runs longer)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from soak_driver import run_soak


@pytest.mark.timeout(600)
def test_crash_soak_keeps_every_invariant(tmp_path: Path) -> None:
    rounds = int(os.environ.get("DOMINDS_SOAK_N", "20"))
    report = run_soak(tmp_path, rounds, seed=int(os.environ.get("SOAK_SEED", "7")))
    assert report.problems == []
    assert report.rounds == rounds + 1
    assert len(report.acked_messages) > rounds, "the soak did real work"
    assert report.kills_mid_drive > 0, "some kills landed while dialogs were being driven"
