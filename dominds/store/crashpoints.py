"""The crash-point harness (tests only): every durable step of the store is counted here, and with
``DOMINDS_CRASH_AT=N`` the process kills itself right before step N. Below both ``atomic.py`` (whose
writes are steps) and ``commit.py`` (whose group fsyncs are one)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

_CRASH_AT = int(os.environ.get("DOMINDS_CRASH_AT", "0") or 0)
"""Crash-point harness (tests only): SIGKILL this process just before its N-th durable step."""
_steps_taken = 0


def durable_step(what: str, path: Path | None) -> None:
    """Count one durable step (a state-file replace, a course append, a removal, a directory rename,
    the fsyncs of a group commit).

    With ``DOMINDS_CRASH_AT=N`` the process kills itself with SIGKILL right before step N, exactly as a
    power cut or ``kill -9`` would, so tests can prove recovery from every point of a scenario.
    """
    global _steps_taken
    _steps_taken += 1
    if _CRASH_AT and _steps_taken == _CRASH_AT:
        os.write(2, f"crashpoint {_steps_taken}: before {what} {path.name if path else ''}\n".encode())
        os.kill(os.getpid(), signal.SIGKILL)
