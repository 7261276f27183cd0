"""``store/queue_log.py`` read from and written to the file itself: the format's bytes, where a bad line is
reported, and a prompt the log queues twice counted once.

Survivors of the module-wide mutation sample (issue 38, round 3) each test holds: the format version
written changed (``QUEUE_LOG_VERSION`` + 1), the line number of a bad line off by one, and the
``or`` of "already queued, at the back or at the front" made ``and`` (a prompt then replayed twice).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dominds.store.errors import CorruptFileError
from dominds.store.queue_log import QueuedLine, QueueLog, TakenLine, replay
from dominds.store.records import QueuedPrompt

TS = "2026-11-29T00:00:00Z"


def _prompt(msg_id: str) -> QueuedPrompt:
    return QueuedPrompt(msg_id=msg_id, content=f"text of {msg_id}", queued_at=TS)


def test_the_lines_written_are_the_documented_version_1_format(tmp_path: Path) -> None:
    """A file written by this build must stay readable by the next one: the bytes are pinned (a version
    bump needs a reader of the old lines, and this test changed on purpose)."""
    log = QueueLog(tmp_path / "queue.jsonl")
    log.append([QueuedLine(prompt=_prompt("m1"))])
    log.append([TakenLine(msg_id="m1", why="cancelled")])
    assert log.path.read_text().splitlines() == [
        '{"v":1,"op":"queued","prompt":{"msgId":"m1","content":"text of m1","grammar":"tellask","origin":"user",'
        f'"queuedAt":"{TS}"}},"front":false}}',
        '{"v":1,"op":"taken","msgId":"m1","why":"cancelled"}',
    ]
    assert replay([], log.read()) == []


def test_a_bad_line_before_the_last_is_reported_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "queue.jsonl"
    log = QueueLog(path)
    log.append([QueuedLine(prompt=_prompt("m1"))])
    with path.open("a") as stream:
        stream.write('{"v":1,"op":"nonsense"}\n')
    log.append([QueuedLine(prompt=_prompt("m2"))])
    with pytest.raises(CorruptFileError, match=r"line 2 is not a queue entry") as raised:
        log.read()
    assert raised.value.path == path


def test_a_prompt_queued_twice_at_the_back_and_the_front_is_replayed_once_where_it_was_first() -> None:
    """A prompt moved into the log from ``latest.yaml`` (a ``front`` line) may meet a line that queued it
    already (a crash between the two writes): the first line queuing it wins, in either order."""
    back_then_front = [QueuedLine(prompt=_prompt("m1")), QueuedLine(prompt=_prompt("m2")), QueuedLine(prompt=_prompt("m1"), front=True)]
    assert [p.msg_id for p in replay([], back_then_front)] == ["m1", "m2"]
    front_then_back = [QueuedLine(prompt=_prompt("m2")), QueuedLine(prompt=_prompt("m1"), front=True), QueuedLine(prompt=_prompt("m1"))]
    assert [p.msg_id for p in replay([], front_then_back)] == ["m1", "m2"]
