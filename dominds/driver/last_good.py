"""The last good copy of each ``.minds/`` configuration file, used while the live file has errors.

A configuration file (``team.yaml``, ``llm.yaml``, ``mcp.yaml``) that loads without an error is copied
to ``.dominds/last-good/.minds/<name>``. When an edit introduces an error — one YAML typo used to leave
the team empty, so new dialogs went to a hidden member and every existing one failed "not a member" —
the daemon keeps running on that copy and says so in a problem next to the file's own problems. The
copy survives restarts, so a daemon started on a broken file still runs the team that last worked.

The copies are a convenience, not dialog state: they are renamed into place but not fsynced, and a
lost or unwritable copy only means there is no fallback.
"""

from __future__ import annotations

import contextlib
import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dominds.rtws import Rtws
from dominds.store.atomic import replace_unsynced

if TYPE_CHECKING:  # `dominds status` prices with the path of a copy: it need not load problems and YAML
    from dominds.problems import Problem

CONFIG_FALLBACK = "config_fallback"
"""Kind of the problem that says a file's last good version is in use (or that there is none)."""


class LastGood:
    def __init__(self, rtws: Rtws) -> None:
        self.rtws = rtws
        self.shadow = Rtws(rtws.state_dir / "last-good")
        """Reads like a workspace: its ``.minds/`` holds the copies, so the usual loaders read them."""

    def copy_of(self, live: Path) -> Path:
        return self.shadow.root / live.relative_to(self.rtws.root)

    def keep(self, live: Path) -> None:
        """``live`` loaded without errors: remember it (a deleted file forgets its copy)."""
        copy = self.copy_of(live)
        try:
            data = live.read_bytes()
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                copy.unlink()
            return
        except OSError:
            return
        try:
            if copy.read_bytes() == data:
                return
        except OSError:
            pass
        with contextlib.suppress(OSError):
            replace_unsynced(copy, data)

    def saved_at(self, live: Path) -> str | None:
        """When the copy of ``live`` was taken (local time, to the minute), or None without a copy."""
        try:
            mtime = os.stat(self.copy_of(live)).st_mtime
        except OSError:
            return None
        return datetime.fromtimestamp(mtime).astimezone().strftime("%Y-%m-%d %H:%M")

    def fallback_problem(self, live: Path, saved_at: str | None) -> Problem:
        source = self.rtws.relpath(live) if live.is_absolute() else str(live)
        name = live.name
        if saved_at is None:
            message = (
                f"{name} has errors and there is no earlier good version to fall back on: what could be read "
                "is in use; fix the lines below"
            )
        else:
            message = (
                f"{name} has errors: the last good version (saved {saved_at}) stays in use until they are fixed"
            )
        from dominds.problems import make_problem

        return make_problem(CONFIG_FALLBACK, source, None, message)


def has_errors(problems: list[Problem]) -> bool:
    return any(p.severity == "error" for p in problems)
