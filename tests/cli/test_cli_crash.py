"""`kill -9` of a daemon in the middle of a scripted reply: what `status` says, and what the resumed dialog answers."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import yaml
from test_cli_kit import RESPONSES, Daemon, dominds, run_state, wait_until, write_workspace

THINK_SLOWLY = {
    "agent": "lead",
    "message": "think slowly",
    "stream": [{"thinking": "Let me think it over first."}, {"saying": "z" * 240}],
    "delay_ms": 25,
    "chunk_chars": 3,
}


def _workspace(tmp_path: Path) -> Path:
    ws = write_workspace(tmp_path / "ws")
    script = ws / ".minds" / "scripted" / "test.yaml"
    script.write_text(yaml.safe_dump({"responses": [THINK_SLOWLY, *RESPONSES]}, sort_keys=False))
    return ws


def test_a_reply_cut_by_kill_9_is_reported_interrupted_and_answered_again_after_restart(tmp_path: Path) -> None:
    """Bugs: after `kill -9` in the middle of a scripted reply (its thinking already saved), the resumed
    dialog answered "Scripted response not found" (the scripted provider matched the saved thinking, not
    the user's message); and `dominds status` said `proceeding` next to "no daemon running"."""
    ws = _workspace(tmp_path)
    daemon = Daemon(ws)
    new = dominds(ws, "new", "--taskdoc", "tasks/t.tsk", "think slowly", "--json")
    assert new.returncode == 0, new.stderr
    root = json.loads(new.stdout)["rootId"]
    course = ws / ".dialogs" / "run" / root / "course-001.jsonl"
    wait_until(lambda: course.exists() and "agent_thought_record" in course.read_text())
    daemon.stop(signal.SIGKILL)
    assert run_state(ws, root) == "proceeding", "the files say what the killed daemon last saved"

    status = dominds(ws, "status")
    assert status.returncode == 0, status.stderr
    line = next(line for line in status.stdout.splitlines() if line.startswith(root))
    assert "no daemon running" in status.stdout and "proceeding" not in status.stdout, status.stdout
    assert "interrupted" in line and "dominds serve" in line, line
    report = json.loads(dominds(ws, "status", "--json").stdout)
    assert report["roots"][0]["runState"]["kind"] == "interrupted"
    shown = dominds(ws, "show", root)
    assert "proceeding" not in shown.stdout.splitlines()[0] and "interrupted" in shown.stdout.splitlines()[0]

    with Daemon(ws):  # resumes what the crash interrupted
        wait_until(lambda: run_state(ws, root) == "idle")
    words = [
        record["content"]
        for record in map(json.loads, course.read_text().splitlines())
        if record["type"] == "agent_words_record"
    ]
    assert words == ["z" * 240], words
    assert "Scripted response not found" not in course.read_text()
