"""`dominds fork DIALOG --at GENSEQ [--message TEXT]`, with and without a daemon (issue 35, item 4)."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli_kit import Daemon, dominds, run_state, wait_until, write_workspace

from dominds.rtws import Rtws
from dominds.store.course_records import AgentWordsRecord, GenStartRecord
from dominds.store.dialog_store import DialogStore


def _sayings(ws: Path, root_id: str) -> list[str]:
    files = DialogStore(Rtws(ws)).files("run", root_id)
    return [r.content for r in files.read_course(1) if isinstance(r, AgentWordsRecord)]


def test_fork_offline_is_driven_by_the_next_serve_and_through_the_daemon_at_once(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", "hello", "--json")
    assert run.returncode == 0, run.stderr
    root_id = json.loads(run.stdout.splitlines()[-1])["rootId"]
    original = DialogStore(Rtws(ws)).files("run", root_id)
    before = original.course(1).read_bytes()
    [gen] = [r.genseq for r in original.read_course(1) if isinstance(r, GenStartRecord)]

    offline = dominds(ws, "fork", root_id[:6], "--at", str(gen), "--message", "paint")
    assert offline.returncode == 0, offline.stderr
    assert f"forked from generation {gen} of course 1 of {root_id}" in offline.stdout
    assert "the next `dominds serve` runs it" in offline.stdout
    fork_id = offline.stdout.split()[1]
    refused = dominds(ws, "fork", root_id, "--at", "9")
    assert refused.returncode != 0 and "no generation 9" in refused.stderr and "Traceback" not in refused.stderr
    bad = dominds(ws, "fork", root_id, "--at", "zero")
    assert bad.returncode == 2 and "expected a whole number" in bad.stderr

    with Daemon(ws):
        # The offline fork rests idle with its message queued until the daemon drives it: wait for its reply.
        wait_until(lambda: run_state(ws, fork_id) in ("idle", "blocked") and _sayings(ws, fork_id))
        assert "Let me ask." in "".join(_sayings(ws, fork_id)), "the fork answered its edited message"
        online = dominds(ws, "fork", root_id, "--at", str(gen), "--json")
        assert online.returncode == 0, online.stderr
        forked = json.loads(online.stdout)
        assert forked["forkedFrom"] == {"rootId": root_id, "course": 1, "genseq": gen, "edited": False}
        assert forked["queued"] is False
        wait_until(lambda: run_state(ws, forked["rootId"]) == "idle")
        assert _sayings(ws, forked["rootId"]) == ["Hello there!"]
    assert original.course(1).read_bytes() == before, "the original's course is untouched"
