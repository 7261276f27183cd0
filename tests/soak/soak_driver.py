"""Crash soak: load a real `dominds serve` with mixed work, SIGKILL it at random moments, restart, audit.

Used by tests/soak/test_soak.py (CI, N=20) and bin/soak N (longer runs). Each round starts the daemon,
fires a random mix of API calls (new roots, messages that trigger TYPE A/B/C tellasks, Q4H, reminders
via a tool, clear_mind, slow streams) and answers pending questions, then kills the daemon with SIGKILL
after a random number of its calls were answered (work, not seconds: a loaded machine gets as much done
before a kill as an idle one), at a random moment or (every other round, on average) once the files say a
dialog is being driven, so that kills inside a drive happen however fast the machine is. After every kill
the files are audited; after the last round the daemon runs to rest and the end state is audited: nothing
acknowledged is lost or duplicated, no tool call ran twice,
no TYPE B key has two subdialogs, and every dialog is idle or waits on a real question.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workspace_kit import write_workspace

from dominds.rtws import Rtws
from dominds.store.course_records import (
    FuncCallRecord,
    FuncResultRecord,
    HumanTextRecord,
    TeammateResponseRecord,
)
from dominds.store.dialog_store import DialogStore
from dominds.store.errors import StoreError

SLOW = {"chunk_chars": 6, "delay_ms": 8}
"""Slow enough (a reply streams for ~0.1-0.3 s) that a kill can land inside a drive on a fast machine."""
RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "regex": "^chat", "response": "ok " * 30, **SLOW},
    {"agent": "lead", "regex": "^delegate-c", "response": "!?@coder task C\n"},
    {"agent": "coder", "contains": "task C", "response": "C done " * 20, **SLOW},
    {"agent": "lead", "regex": "^delegate-b", "response": "!?@researcher !tellaskSession shared look up\n"},
    {"agent": "researcher", "contains": "look up", "response": "found " * 20, **SLOW},
    {"agent": "lead", "regex": "^ask-back", "response": "!?@coder ask back task\n"},
    {"agent": "coder", "contains": "ask back task", "response": "!?@tellasker which one?\n"},
    {"agent": "lead", "contains": "TellaskBack", "response": "this one"},
    {"agent": "coder", "contains": "this one", "response": "done asking"},
    {"agent": "lead", "regex": "^question", "response": "!?@human should I continue?\n"},
    {"agent": "lead", "regex": "^answer-", "response": "thanks"},
    {"agent": "lead", "regex": "^remember", "stream": [{"func_call": {"name": "add_reminder", "arguments": {"content": "soak note"}}}]},
    {"agent": "lead", "role": "tool", "contains": "Reminder #", "response": "noted"},
    {"agent": "lead", "regex": "^clear", "stream": [{"func_call": {"name": "clear_mind", "arguments": {}}}]},
    {"agent": "lead", "role": "tool", "contains": "new course", "response": "clearing"},
    # a kill inside a tool call: recovery records "INTERRUPTED: the daemon stopped while this tool call was
    # run" and resumes the dialog, which must answer it (without this entry it ended in system_stop)
    {"agent": "lead", "role": "tool", "contains": "INTERRUPTED", "response": "the tool was cut; going on"},
    {"agent": "lead", "contains": "This is course #", "response": "fresh start"},
    {"agent": "lead", "contains": "provided response", "response": "noted " * 10, **SLOW},
    {"agent": "lead", "response": "fallback"},
    {"agent": "coder", "response": "coder fallback"},
    {"agent": "researcher", "response": "researcher fallback"},
]
FINAL_REST_DEADLINE = 240.0
"""How long the last round may take to drive everything to rest (only a failing run waits that long)."""
REST_SECONDS = 2.0
"""How long the files must show nothing to drive before the last round stops the daemon."""
MESSAGES = ["chat", "delegate-c", "delegate-b", "ask-back", "question", "remember", "clear"]


@dataclass
class SoakReport:
    rounds: int = 0
    acked_messages: list[str] = field(default_factory=list)
    acked_answers: list[str] = field(default_factory=list)
    kills_mid_drive: int = 0
    problems: list[str] = field(default_factory=list)


class Daemon:
    def __init__(self, rtws: Rtws) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dominds", "-C", str(rtws.root), "serve", "--port", "0", "--no-auth"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.base = self._wait_for_url()
        self.answered = 0
        """Calls the daemon answered in this round: the killer counts work, not seconds (a timer counted
        from the start let a loaded machine answer almost nothing before the kill, and the soak's "did real
        work" failed at load 9 with 11 messages in 20 rounds)."""
        self.progress = threading.Condition()
        self.calls_done = False

    def wait_answered(self, count: int, timeout: float = 60.0) -> None:
        """Until ``count`` calls were answered, the round made its last call, or the daemon died."""
        deadline = time.monotonic() + timeout
        with self.progress:
            while self.answered < count and not self.calls_done and self.proc.poll() is None and time.monotonic() < deadline:
                self.progress.wait(timeout=0.2)  # wakes on each answer; the timeout notices a dead daemon

    def finished_calls(self) -> None:
        with self.progress:
            self.calls_done = True
            self.progress.notify_all()

    def _wait_for_url(self) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 30
        for line in self.proc.stdout:
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            if found:
                threading.Thread(target=self._drain, daemon=True).start()
                return f"http://127.0.0.1:{found.group(1)}"
            if time.monotonic() > deadline:
                break
        raise RuntimeError(f"daemon did not start (exit {self.proc.poll()})")

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for _ in self.proc.stdout:
            pass

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                answer = response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            answer = exc.code, json.loads(exc.read() or b"null")
        with self.progress:
            self.answered += 1
            self.progress.notify_all()
        return answer

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def terminate(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def _busy(rtws: Rtws) -> bool:
    """Something is still being driven or waits to be driven (read from the files)."""
    store = DialogStore(rtws)
    for root_id in store.root_ids("run"):
        for files in store.iter_tree("run", root_id):
            try:
                latest = files.read_latest()
                queued = files.read_queue()
            except StoreError:
                continue
            if latest is None:
                continue
            if latest.generating or latest.needs_drive or queued or latest.run_state.kind in ("proceeding", "stop_requested"):
                return True
    return False


def _kill_after(daemon: Daemon, rtws: Rtws, calls: int, delay: float, jitter: float) -> None:
    """SIGKILL at a random moment after the round's first ``calls`` answers, whatever the daemon is doing."""
    daemon.wait_answered(calls)
    time.sleep(delay + jitter)
    daemon.kill()


def _kill_while_busy(daemon: Daemon, rtws: Rtws, calls: int, delay: float, jitter: float) -> None:
    """SIGKILL inside a drive: once the files say a dialog is being driven (or after ``delay`` if none is soon).

    A timer alone missed every drive on a fast machine (replies stream in a few tens of milliseconds), so
    the soak passed without ever killing the daemon in the middle of one.
    """
    daemon.wait_answered(calls)
    deadline = time.monotonic() + max(delay, 2.0)
    time.sleep(min(delay, 0.1))
    while time.monotonic() < deadline and daemon.proc.poll() is None and not _busy(rtws):
        time.sleep(0.005)
    time.sleep(jitter)
    daemon.kill()


def _round(rtws: Rtws, rng: random.Random, report: SoakReport, roots: list[str], *, kill: bool) -> None:
    daemon = Daemon(rtws)
    killer: threading.Thread | None = None
    if kill:
        calls, delay = rng.randint(1, 6), rng.uniform(0.0, 0.6)
        target = _kill_while_busy if rng.random() < 0.5 else _kill_after
        killer = threading.Thread(target=target, args=(daemon, rtws, calls, delay, rng.uniform(0.0, 0.03)), daemon=True)
        killer.start()
    try:
        for _ in range(rng.randint(3, 10)):
            if daemon.proc.poll() is not None:
                break
            try:
                if not roots or rng.random() < 0.25:
                    status, body = daemon.call("POST", "/api/dialogs", {"taskDocPath": "tasks/t.tsk", "agentId": "lead"})
                    if status == 201:
                        roots.append(body["rootId"])
                    continue
                if rng.random() < 0.3:
                    status, body = daemon.call("GET", "/api/q4h")
                    for question in (body or {}).get("questions", [])[:2] if status == 200 else []:
                        msg_id = f"ans-{report.rounds}-{len(report.acked_answers)}-{rng.randrange(10**9)}"
                        code, _ = daemon.call("POST", f"/api/q4h/{question['id']}/answer", {"content": f"answer-{msg_id}", "msgId": msg_id})
                        if code == 202:
                            report.acked_answers.append(msg_id)
                    continue
                root = rng.choice(roots)
                msg_id = f"m-{report.rounds}-{len(report.acked_messages)}-{rng.randrange(10**9)}"
                text = f"{rng.choice(MESSAGES)} {msg_id}"
                code, _ = daemon.call("POST", f"/api/dialogs/{root}/messages", {"content": text, "msgId": msg_id})
                if code == 202:
                    report.acked_messages.append(msg_id)
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                break  # the daemon was killed under us; an unanswered call was never acknowledged
            time.sleep(rng.uniform(0.0, 0.08))
        if kill:
            assert killer is not None
            daemon.finished_calls()
            killer.join()
            if _busy(rtws):
                report.kills_mid_drive += 1
        else:
            # At rest means at rest for REST_SECONDS on end: between a subdialog's reply being recorded and
            # its caller's next generation the files say nothing is busy, and a single look there (under
            # load, with two CPU burners) sent SIGTERM into that generation ("ended interrupted
            # server_shutdown" in the audit).
            deadline = time.monotonic() + FINAL_REST_DEADLINE
            rest_since: float | None = None
            while time.monotonic() < deadline:
                status, body = daemon.call("GET", "/api/q4h")
                for question in (body or {}).get("questions", []) if status == 200 else []:
                    msg_id = f"final-{rng.randrange(10**9)}"
                    if daemon.call("POST", f"/api/q4h/{question['id']}/answer", {"content": f"answer-{msg_id}", "msgId": msg_id})[0] == 202:
                        report.acked_answers.append(msg_id)
                if _busy(rtws) or body.get("questions"):
                    rest_since = None
                elif rest_since is None:
                    rest_since = time.monotonic()
                elif time.monotonic() - rest_since >= REST_SECONDS:
                    break
                time.sleep(0.2)
            else:
                report.problems.append(f"the daemon did not come to rest within {FINAL_REST_DEADLINE:.0f} s")
            daemon.terminate()
    finally:
        if daemon.proc.poll() is None:
            daemon.kill()
    report.rounds += 1


def audit(rtws: Rtws, report: SoakReport, *, final: bool) -> None:
    store = DialogStore(rtws)
    recorded: list[str] = []
    queued_everywhere: set[str] = set()
    responses: list[tuple[str, str, str]] = []
    for root_id in store.root_ids("run"):
        registry = store.files("run", root_id).read_registry()
        subs = [entry.subdialog_id for entry in registry.values()]
        if len(subs) != len(set(subs)):
            report.problems.append(f"{root_id}: a subdialog is registered twice")
        for files in store.iter_tree("run", root_id):
            try:
                latest = files.read_latest()
                files.read_meta(), files.read_q4h(), files.read_subdlg(), files.read_reminders()
                courses = [files.read_course(n) for n in files.course_numbers()]
                queued = {p.msg_id for p in files.read_queue()}
            except StoreError as exc:
                report.problems.append(f"unparseable after a crash: {exc}")
                continue
            queued_everywhere.update(queued)
            if final and queued and latest is not None and latest.run_state.kind != "blocked":
                report.problems.append(f"{files.dir.name}: prompts still queued at rest: {sorted(queued)[:3]}")
            calls: dict[str, int] = {}
            results: dict[str, int] = {}
            for course in courses:
                for record in course:
                    if isinstance(record, HumanTextRecord):
                        recorded.append(record.msg_id)
                    elif isinstance(record, TeammateResponseRecord):
                        responses.append((files.dir.name, record.callee_dialog_id, record.call_id))
                    elif isinstance(record, FuncCallRecord):
                        calls[record.id] = calls.get(record.id, 0) + 1
                    elif isinstance(record, FuncResultRecord):
                        results[record.id] = results.get(record.id, 0) + 1
            if any(n > 1 for n in calls.values()):
                report.problems.append(f"{files.dir.name}: a function call was recorded (so run) twice")
            if any(n > 1 for n in results.values()):
                report.problems.append(f"{files.dir.name}: a function result was recorded twice")
            if final and latest is not None:
                state = latest.run_state
                if state.kind not in ("idle", "blocked", "dead"):
                    report.problems.append(f"{files.dir.name}: ended {state.kind} {state.reason or ''}")
                if state.kind == "blocked" and not (files.q4h_yaml.exists() or files.subdlg_yaml.exists()):
                    report.problems.append(f"{files.dir.name}: blocked on nothing")
                if set(calls) - set(results):
                    report.problems.append(f"{files.dir.name}: a function call has no result")
    duplicates = {m for m in recorded if recorded.count(m) > 1}
    if duplicates:
        report.problems.append(f"prompts recorded twice: {sorted(duplicates)[:5]}")
    if len(responses) != len(set(responses)):
        report.problems.append("a teammate response was supplied twice")
    acked = set(report.acked_messages) | set(report.acked_answers)
    # Mid-crash, an acknowledged prompt may still sit in its dialog's queue (durable, not yet recorded).
    lost = acked - set(recorded) - queued_everywhere
    if lost:
        report.problems.append(f"acknowledged but lost: {sorted(lost)[:5]} ({len(lost)} in all)")


def run_soak(workdir: Path, rounds: int, seed: int = 1) -> SoakReport:
    rng = random.Random(seed)
    rtws = write_workspace(workdir / "ws", RESPONSES)
    report = SoakReport()
    roots: list[str] = []
    for index in range(rounds):
        _round(rtws, rng, report, roots, kill=True)
        audit(rtws, report, final=False)
        print(f"round {index + 1}/{rounds}: {len(report.acked_messages)} messages, "
              f"{len(report.acked_answers)} answers acknowledged, {report.kills_mid_drive} kills mid-drive, "
              f"problems: {len(report.problems)}", flush=True)
    _round(rtws, rng, report, roots, kill=False)
    audit(rtws, report, final=True)
    return report


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    import tempfile

    result = run_soak(Path(tempfile.mkdtemp(prefix="dominds-soak-")), n, seed=int(os.environ.get("SOAK_SEED", "1")))
    print(f"{result.rounds} rounds, {result.kills_mid_drive} kills mid-drive, "
          f"{len(result.acked_messages)} messages and {len(result.acked_answers)} answers acknowledged")
    for problem in result.problems:
        print("PROBLEM:", problem)
    sys.exit(1 if result.problems else 0)
