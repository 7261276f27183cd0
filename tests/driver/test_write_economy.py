"""How many state writes and fsync rounds a turn and a fan-out cost (issue 21), counted, never timed.

Bugs these pin: a lone turn paid four rounds of fsyncs (message accepted, generation started, reply,
run state settled, each in a loop turn of its own) and wrote ``latest.yaml`` three times; each answer of
a fan-out rewrote its caller's whole pending index (``subdlg.yaml``, 100 entries, 100 times).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dominds.store import atomic, commit


class WriteLog:
    """Every durable step of the store by (kind, file name)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps: Counter[tuple[str, str]] = Counter()
        real = atomic.durable_step

        def step(what: str, path: Path | None) -> None:
            self.steps[(what, path.name if path else "")] += 1
            real(what, path)

        monkeypatch.setattr(atomic, "durable_step", step)

    def count(self, what: str, name: str) -> int:
        return self.steps[(what, name)]


async def test_a_turn_commits_once_and_writes_its_state_file_twice(make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commit, "MAX_COMMIT_DELAY", 60.0)  # a loaded machine must not split the group
    engine = await make_engine([{"agent": "lead", "response": "Hello!"}])
    root = engine.create_dialog("lead", "tasks/t.tsk")
    await engine.durable()
    group = commit.current()
    assert group is not None
    log = WriteLog(monkeypatch)
    commits = group.commits
    engine.submit_user_message(root, "hi")
    await engine.wait_idle()
    assert root.latest.run_state.kind == "idle" and root.last_saying() == "Hello!"
    assert group.commits - commits == 1, "accepted, started, answered and settled: one round of fsyncs"
    assert log.count("replace", "latest.yaml") == 2, "accepted (the queue), settled; the start's save was superseded"
    on_disk = root.files.read_latest()
    assert on_disk is not None and not on_disk.generating and not root.files.read_queue()


async def test_answers_arriving_together_rewrite_the_pending_index_once(make_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commit, "MAX_COMMIT_DELAY", 60.0)
    fan = 12
    engine = await make_engine(
        [
            {"agent": "lead", "message": "go", "response": "".join(f"!?@coder task {i}\n\n" for i in range(fan))},
            {"agent": "coder", "contains": "task", "response": "ok"},
            {"agent": "lead", "contains": "provided response", "response": "all collected"},
        ]
    )
    root = engine.create_dialog("lead", "tasks/t.tsk")
    log = WriteLog(monkeypatch)
    engine.submit_user_message(root, "go")
    await engine.wait_idle()
    assert root.last_saying() == "all collected" and not root.pending
    assert not root.files.subdlg_yaml.exists()
    index_writes = log.count("replace", "subdlg.yaml") + log.count("remove", "subdlg.yaml")
    assert index_writes <= 4, f"{fan} answers in lockstep rewrote the pending index {index_writes} times"
    for sub in root.local.values():
        if sub is not root:
            assert sub.latest.run_state.kind == "idle"
            on_disk = sub.files.read_latest()
            assert on_disk is not None and not on_disk.generating and on_disk.run_state.kind == "idle"
