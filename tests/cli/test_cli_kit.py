"""Helpers for the CLI tests (no tests here): a scripted workspace, `dominds …` as a subprocess, and a
real daemon started with `dominds serve --port 0` whose URL is read from its output."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from deadlines import COMMAND_SECONDS, WAIT_SECONDS
from workspace_kit import LLM_YAML, team_yaml

TEAM_YAML = team_yaml({"lead": "plans and delegates", "coder": "writes code"}, fbr_effort=1)


RESPONSES: list[dict[str, Any]] = [
    {"agent": "lead", "message": "hello", "response": "Hello there!"},
    {"agent": "lead", "message": "delegate", "response": "Asking coder.\n!?@coder please implement X\n"},
    {"agent": "coder", "contains": "please implement X", "response": "Implemented X."},
    {"agent": "lead", "message": "session", "response": "Asking in a session.\n!?@coder !tellaskSession s1 please do Y\n"},
    {"agent": "coder", "contains": "please do Y", "response": "Did Y."},
    {"agent": "lead", "contains": "@coder provided response", "response": "Thanks, X is done."},
    {"agent": "lead", "message": "paint", "response": "Let me ask.\n!?@human Which colour?\n!?Red or blue.\n"},
    {"agent": "lead", "message": "blue", "response": "Painting it blue."},
    {
        "agent": "lead",
        "message": "think and tool",
        "stream": [
            {"thinking": "Let me think about reminders."},
            {"saying": "I will add a reminder."},
            {"func_call": {"name": "add_reminder", "arguments": {"content": "remember X"}}},
        ],
    },
    {"agent": "lead", "role": "tool", "contains": "Reminder", "response": "Reminder added."},
    {"agent": "lead", "message": "slow", "response": "x" * 600, "delay_ms": 15, "chunk_chars": 3},
    {"agent": "lead", "message": "stream", "response": "y" * 200, "delay_ms": 5, "chunk_chars": 10},
]

ANSWER_HINT = re.compile(r"asks \((q4h-[^)\s]+)\)")


def write_workspace(root: Path) -> Path:
    (root / ".minds" / "scripted").mkdir(parents=True)
    (root / ".minds" / "team.yaml").write_text(TEAM_YAML)
    (root / ".minds" / "llm.yaml").write_text(LLM_YAML)
    (root / ".minds" / "scripted" / "test.yaml").write_text(yaml.safe_dump({"responses": RESPONSES}, sort_keys=False))
    (root / "tasks" / "t.tsk").mkdir(parents=True)
    (root / "tasks" / "t.tsk" / "goals.md").write_text("Ship the feature.\n")
    for status in ("run", "done", "archive"):
        (root / ".dialogs" / status).mkdir(parents=True)
    return root


def write_provider_workspace(root: Path, team: str, llm: str, goals: str = "Answer.\n") -> Path:
    """A workspace whose members talk to a (fake) provider: ``team`` and ``llm`` are the two YAML files,
    with a Taskdoc at ``tasks/t.tsk``."""
    (root / ".minds").mkdir(parents=True)
    (root / ".minds" / "team.yaml").write_text(team)
    (root / ".minds" / "llm.yaml").write_text(llm)
    (root / "tasks" / "t.tsk").mkdir(parents=True)
    (root / "tasks" / "t.tsk" / "goals.md").write_text(goals)
    return root


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    return {**env, **extra}


def dominds(ws: Path, *args: str, timeout: float = COMMAND_SECONDS, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`dominds ARGS` typed in ``ws`` (the commands it prints then have no ``-C``; see test_cli_hints.py)."""
    return subprocess.run(
        [sys.executable, "-m", "dominds", *args],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env or cli_env(),
    )


def dominds_json(ws: Path, *args: str) -> Any:
    done = dominds(ws, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


class Daemon:
    """`dominds serve --port 0` in a subprocess; ``url``/``port``/``token`` come from its printed URL."""

    def __init__(self, ws: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.ws = ws
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dominds", "-C", str(ws), "serve", "--port", "0", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env or cli_env(),
        )
        self.lines: list[str] = []
        deadline = time.monotonic() + COMMAND_SECONDS
        while True:
            line = self.proc.stdout.readline() if self.proc.stdout else ""
            if not line:
                raise AssertionError(f"serve exited early: {self.proc.wait()} {self.proc.stderr.read() if self.proc.stderr else ''}")
            self.lines.append(line)
            match = re.search(r"panel: (http://127\.0\.0\.1:(\d+)/(?:\?auth=(\S+))?)", line)
            if match:
                self.url, self.port, self.token = match.group(1), int(match.group(2)), match.group(3)
                break
            assert time.monotonic() < deadline, self.lines
        self.pid = self.proc.pid

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        """One authorised JSON request to the daemon's API: (status, decoded body)."""
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers(), "Content-Type": "application/json"}
        request = urllib.request.Request(self.http + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())

    def stop(self, sig: int = signal.SIGINT, timeout: float = 15) -> tuple[int, str, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, "".join(self.lines) + out, err

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.stop()


def wait_until(predicate: Any, timeout: float = WAIT_SECONDS, interval: float = 0.05) -> Any:
    """Poll until ``predicate`` is truthy. The default allows for a daemon's first generation, which imports
    a provider SDK (seconds on a loaded two-core machine); a passing wait returns as soon as it holds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(interval)


def run_state(ws: Path, root_id: str) -> str:
    """The root's run state kind, read from its latest.yaml (cheaper than a `dominds status` process)."""
    for status in ("run", "done", "archive"):
        latest = ws / ".dialogs" / status / root_id / "latest.yaml"
        if latest.exists():
            return str(yaml.safe_load(latest.read_text())["runState"]["kind"])
    raise AssertionError(f"no dialog {root_id}")


def every_state_file_parses(dialogs_dir: Path) -> int:
    """Parse every YAML/JSON state file, every course line and every recorded request (a torn last line
    is allowed); count files."""
    from dominds.store.fileio import read_course
    from dominds.store.request_log import read_request, recorded_genseqs

    checked = 0
    for path in dialogs_dir.rglob("*"):
        if not path.is_file() or path.name.endswith(".tmp"):
            continue
        if path.suffix == ".yaml":
            yaml.safe_load(path.read_text())
        elif path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".jsonl" and path.name.startswith("requests-"):
            for genseq in recorded_genseqs(path):  # each body rebuilt and checked against its digest
                assert read_request(path, genseq) is not None, (path, genseq)
        elif path.suffix == ".jsonl":
            read_course(path)
        else:
            continue
        checked += 1
    return checked
