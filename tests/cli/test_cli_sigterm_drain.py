"""SIGTERM to `dominds serve` with 20 drives running tools and streams (issue 30): shutdown cancels every
drive's scope, waits for the final records, then releases the workspace lock, last.

Before: ``Engine.close()`` gave the drives a timeout and released the lock with drives alive; a drive
cancelled afterwards wrote ``gen_finish_record status: ok`` with no tool result, and a second daemon could
have started on the workspace meanwhile.
"""

from __future__ import annotations

import json
import signal
import time
import urllib.request
from pathlib import Path
from typing import Any

import filelock
import pytest
import yaml
from test_cli_kit import Daemon, cli_env, dominds, wait_until
from workspace_kit import LLM_YAML

from dominds.rtws import Rtws
from dominds.store.dialog_store import DialogStore
from tests.processes import running

TOOL_DRIVES = 10
STREAM_DRIVES = 10
TEAM = """\
member_defaults:
  provider: scripted
  model: test
  diligence_push_max: 0
default_responder: lead
shell_specialists: [lead]
members:
  lead: {name: Lead, gofor: [plans], toolsets: [os]}
"""


def _workspace(root: Path) -> Path:
    pids = root / "pids"
    responses: list[dict[str, Any]] = [
        {
            "agent": "lead",
            "message": f"sleep {i}",
            "stream": [{"func_call": {"name": "shell_cmd", "arguments": {"command": f"sleep 30 & echo $! > {pids}/{i}.pid; wait"}}}],
        }
        for i in range(TOOL_DRIVES)
    ]
    responses += [
        {"agent": "lead", "regex": r"^stream \d+$", "response": "z" * 3000, "chunk_chars": 3, "delay_ms": 10},
        {"agent": "lead", "role": "tool", "regex": ".", "response": "Noted the interruption."},
        {"agent": "lead", "regex": ".", "response": "ok"},
    ]
    (root / ".minds" / "scripted").mkdir(parents=True)
    (root / ".minds" / "team.yaml").write_text(TEAM)
    (root / ".minds" / "llm.yaml").write_text(LLM_YAML)
    (root / ".minds" / "scripted" / "test.yaml").write_text(yaml.safe_dump({"responses": responses}, sort_keys=False))
    (root / "tasks" / "t.tsk").mkdir(parents=True)
    (root / "tasks" / "t.tsk" / "goals.md").write_text("Ship it.\n")
    pids.mkdir()
    return root


def _post(daemon: Daemon, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        daemon.http + path,
        data=json.dumps(body).encode(),
        headers={**daemon.headers(), "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _records(dialog_dir: Path) -> list[dict[str, Any]]:
    out = []
    for course in sorted(dialog_dir.glob("course-*.jsonl")):
        out += [json.loads(line) for line in course.read_text().splitlines() if line.strip()]
    return out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_with_20_drives_closes_everything_then_frees_the_lock(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    lock_path = Rtws(ws).lock_path
    acked: dict[str, list[str]] = {}
    daemon = Daemon(ws)
    try:
        for i in range(TOOL_DRIVES + STREAM_DRIVES):
            root = _post(daemon, "/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})["rootId"]
            text = f"sleep {i}" if i < TOOL_DRIVES else f"stream {i}"
            acked[root] = [_post(daemon, f"/api/dialogs/{root}/messages", {"content": text})["msgId"]]
        pidfiles = [ws / "pids" / f"{i}.pid" for i in range(TOOL_DRIVES)]
        wait_until(lambda: all(p.exists() and p.read_text().strip() for p in pidfiles), timeout=120)
        wait_until(lambda: all("gen_start_record" in (ws / ".dialogs" / "run" / r / "course-001.jsonl").read_text() for r in acked), timeout=120)
        for root in list(acked)[:5]:  # acknowledged while the drive runs: queued, must survive the shutdown
            acked[root].append(_post(daemon, f"/api/dialogs/{root}/messages", {"content": "and then?"})["msgId"])
        children = [int(p.read_text()) for p in pidfiles]
        assert all(running(pid) for pid in children)

        # SIGTERM, and the daemon is held right there: a second `serve` now is refused, whatever the timing
        daemon.proc.send_signal(signal.SIGTERM)
        daemon.proc.send_signal(signal.SIGSTOP)
        second = dominds(ws, "serve", "--port", "0")
        assert second.returncode != 0 and f"already served by pid {daemon.pid}" in second.stderr, second.stderr
        with pytest.raises(filelock.Timeout):
            filelock.FileLock(str(lock_path)).acquire(timeout=0)
        resumed_at = time.monotonic()
        daemon.proc.send_signal(signal.SIGCONT)
        code, out, err = daemon.stop(signal.SIGTERM, timeout=60)
        drain_s = time.monotonic() - resumed_at
    finally:
        if daemon.proc.poll() is None:
            daemon.proc.send_signal(signal.SIGCONT)
            daemon.proc.kill()
            daemon.proc.wait()
    print(f"drain after SIGTERM with {len(acked)} drives: {drain_s:.2f}s")
    assert code == 0 and "Traceback" not in err, err
    assert drain_s < 30, "the shutdown waited for the 30 s tools instead of cancelling them"
    lock = filelock.FileLock(str(lock_path))
    lock.acquire(timeout=0)  # free once the daemon is gone
    lock.release()
    assert not any(running(pid) for pid in children), "a tool's process outlived the daemon"
    for root, msg_ids in acked.items():
        dialog_dir = ws / ".dialogs" / "run" / root
        records = _records(dialog_dir)
        starts = [r["genseq"] for r in records if r["type"] == "gen_start_record"]
        finishes = [r for r in records if r["type"] == "gen_finish_record"]
        assert sorted(starts) == sorted(r["genseq"] for r in finishes), f"{root}: a generation was left open"
        assert all(r["status"] == "interrupted" for r in finishes), f"{root}: {[r['status'] for r in finishes]}"
        calls = {r["id"] for r in records if r["type"] == "func_call_record"}
        results = [r for r in records if r["type"] == "func_result_record"]
        assert calls == {r["id"] for r in results}, f"{root}: a tool call was left open"
        assert all(r["interrupted"] and "server_shutdown" in r["content"] for r in results)
        latest = yaml.safe_load((dialog_dir / "latest.yaml").read_text())
        assert latest["runState"]["kind"] == "interrupted" and latest["generating"] is False
        recorded = {r["msgId"] for r in records if r["type"] == "human_text_record"}
        queued = {p.msg_id for p in DialogStore(Rtws(ws)).files("run", root).read_queue()}
        assert set(msg_ids) <= recorded | queued, f"{root}: an acknowledged message was lost"
    # after the drain, a new daemon starts and resumes the interrupted dialogs
    tool_root = list(acked)[5]  # a shell drive with no message queued behind it
    with Daemon(ws, env=cli_env()) as again:
        course = ws / ".dialogs" / "run" / tool_root / "course-001.jsonl"
        wait_until(lambda: "Noted the interruption." in course.read_text(), timeout=120)
        again.stop(signal.SIGTERM, timeout=60)
