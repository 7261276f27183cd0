"""Trees recovery leaves at rest are noted as settled at that very start, through real daemon restarts.

Bug pinned here (issue 21): a start that recovered a tree waiting for a person could not note it as
settled when its files had changed within the dialog index's two-second racy window (which they always
had when the previous daemon had just written them), so the next start loaded and recovered it again
(at 100,000 dialogs: 4,000 waiting trees, 24 s). The note now holds the digest of the files' bytes as
well as their signatures, so it can be taken at once and is still never fooled by an edit in place.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from workspace_kit import write_workspace

from dominds.rtws import Rtws
from dominds.store.course_records import AgentWordsRecord
from dominds.store.dialog_store import DialogStore

DAEMON = Path(__file__).with_name("crash_daemon.py")
RESPONSES = [
    {"agent": "lead", "message": "ask", "response": "!?@human Which database?\n"},
    {"agent": "lead", "message": "postgres", "response": "Built on postgres."},
]


def _run_until_idle(rtws: Rtws, *extra: str) -> str:
    """One real daemon start that exits once idle; its recovery summary line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, str(DAEMON), str(rtws.root), "--exit-when-idle", "--log-info", *extra],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return next(line for line in done.stderr.splitlines() if "recovery:" in line)


def _mtimes(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_the_start_that_recovers_a_waiting_tree_settles_it_for_the_next(tmp_path: Path) -> None:
    rtws = write_workspace(tmp_path / "ws", RESPONSES)
    assert "0 of 0 trees" in _run_until_idle(rtws, "--submit", "ask")  # the tree now waits on its question
    assert "1 of 1 trees" in _run_until_idle(rtws), "a start after the daemon that wrote it looks at it once"
    before = _mtimes(rtws.dialogs_dir)
    # the next start comes at once: the files are still within the racy window of the note
    assert "0 of 1 trees" in _run_until_idle(rtws), "the tree recovered and left at rest by the last start is not recovered again"
    assert _mtimes(rtws.dialogs_dir) == before, "nothing at rest was rewritten"

    # an edit in place after the note (same inode, same size) is seen: the tree is looked at again
    # (an edit within the same clock tick as the note: tests/store/test_index.py)
    store = DialogStore(rtws)
    [root_id] = store.root_ids("run")
    latest = store.files("run", root_id).latest_yaml
    text = latest.read_text()
    edited = text.replace('title: "ask"', 'title: "ASK"')
    assert len(edited) == len(text) and edited != text
    with open(latest, "r+", encoding="utf-8") as handle:
        handle.write(edited)
    assert "1 of 1 trees" in _run_until_idle(rtws), "a tree edited by hand since its note is recovered"

    # nothing was lost: the question is still there, and answering it drives the dialog on
    _run_until_idle(rtws, "--answer-all", "postgres")
    said = [r.content for r in store.files("run", root_id).read_course(1) if isinstance(r, AgentWordsRecord)]
    assert said[-1].strip() == "Built on postgres."
