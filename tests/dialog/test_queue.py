"""The queue log (dialog/queue.py over store/queue_log.py): append, consume, crash anywhere.

A property test: random sequences of queuing (last, first, with ``latest.yaml``), taking, cancelling and
writing ``latest.yaml``, each change written through to the files; then a crash at any byte of any
write. Read back from the files, the queue is what it was before the write the crash cut, or after it:
nothing acknowledged is lost, nothing taken comes back, no prompt is there twice, and the order holds;
a daemon restarted on those files carries on from there (the first version moved prompts ``latest.yaml``
still listed into the log again at its first write, bringing back one the log had taken: a crash-point
test found a consumed assignment queued again after recovery).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.dialog.queue import COMPACT_AT_LINES, PromptQueue
from dominds.ids import now_iso
from dominds.store import atomic
from dominds.store.queue_log import QueueLog, replay
from dominds.store.records import LatestState, QueuedPrompt


@pytest.fixture(autouse=True)
def no_fsync() -> Iterator[None]:
    """What a crash leaves is taken from the bytes written; fsyncs would only make the test slow."""
    atomic.set_fsync(False)
    yield
    atomic.set_fsync(True)


@dataclass
class Disk:
    """What a crash leaves: the log's bytes and the prompts ``latest.yaml`` lists."""

    log: bytes
    latest: list[QueuedPrompt]


def _prompt(number: int) -> QueuedPrompt:
    return QueuedPrompt(
        msg_id=f"m{number}", content=f"message {number}\nwith a second line", queued_at=now_iso()
    )


def _read(path: Path, disk: Disk) -> list[str]:
    if disk.log:
        path.write_bytes(disk.log)
    else:
        path.unlink(missing_ok=True)
    return [p.msg_id for p in replay(disk.latest, QueueLog(path).read())]


OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put_front", "put_with_latest", "take_first", "take_any", "write_latest"]),
        st.integers(0, 40),
    ),
    max_size=60,
)


@settings(max_examples=40, deadline=None)
@given(ops=OPS, cut=st.integers(0, 10_000), at=st.integers(0, 60))
def test_a_crash_anywhere_loses_nothing_and_duplicates_nothing(
    ops: list[tuple[str, int]], cut: int, at: int
) -> None:
    directory = Path(tempfile.mkdtemp(prefix="queue-log-"))
    try:
        path = directory / "queue.jsonl"
        latest = LatestState(last_modified=now_iso())
        queue = PromptQueue(QueueLog(path), latest, [])
        model: list[str] = []
        on_disk_latest: list[QueuedPrompt] = []
        states: list[tuple[Disk, list[str], str]] = [(Disk(b"", []), [], "start")]
        number = 0
        for op, pick in ops:
            number += 1
            if op in ("put", "put_front"):
                queue.put(_prompt(number), front=op == "put_front")
                model.insert(0, f"m{number}") if op == "put_front" else model.append(f"m{number}")
            elif op == "put_with_latest":
                queue.put(_prompt(number), with_latest=True)
                model.append(f"m{number}")
                on_disk_latest = list(latest.queued_prompts)  # the caller's save writes it...
                states.append(
                    (Disk(path.read_bytes() if path.exists() else b"", on_disk_latest), list(model), "latest")
                )
                queue.latest_written()  # ...then the prompt moves into the log
            elif op == "take_first" and model:
                assert queue.take(model[0]) is not None
                model.pop(0)
            elif op == "take_any" and model:
                msg_id = model[pick % len(model)]
                assert queue.take(msg_id, "cancelled") is not None
                model.remove(msg_id)
            elif op == "write_latest":
                on_disk_latest = list(latest.queued_prompts)
                queue.latest_written()
            assert [p.msg_id for p in queue] == model
            states.append(
                (Disk(path.read_bytes() if path.exists() else b"", on_disk_latest), list(model), op)
            )

        # A clean reload gives the queue as it was.
        final_disk, final_model, _ = states[-1]
        assert _read(path, final_disk) == final_model
        assert not final_model or path.exists()
        if not final_model and not on_disk_latest:
            assert not path.exists(), "a drained queue's log is removed"

        # A crash during write number `at`: an append leaves any prefix of its bytes, a rewrite (atomic) is
        # before or after; the queue read back is the one before the write or the one after it.
        if len(states) < 2:
            return
        index = 1 + at % (len(states) - 1)
        (before, model_before, _), (after, model_after, op) = states[index - 1], states[index]
        if after.log.startswith(before.log) and after.latest == before.latest:
            torn = Disk(
                after.log[: len(before.log) + cut % (len(after.log) - len(before.log) + 1)], before.latest
            )
        else:
            torn = after if cut % 2 else before
        got = _read(path, torn)
        assert len(got) == len(set(got)), f"a prompt is queued twice: {got}"
        if op in ("latest", "put_with_latest") and got not in (model_before, model_after):
            # Queued with latest.yaml's write, not yet (wholly) moved into the log: read ahead of the others.
            assert sorted(got) == sorted(model_after) and got[0] == model_after[-1], (got, model_after)
        else:
            assert got in (model_before, model_after), (got, model_before, model_after)

        # The daemon restarts on what the crash left, writes latest.yaml (recovery does), queues one more.
        restarted_latest = LatestState(last_modified=now_iso(), queued_prompts=list(torn.latest))
        restarted = PromptQueue.load(QueueLog(path), restarted_latest)
        assert [p.msg_id for p in restarted] == got
        written = list(restarted_latest.queued_prompts)
        restarted.latest_written()
        restarted.put(_prompt(number + 1))
        assert _read(path, Disk(path.read_bytes(), written)) == [*got, f"m{number + 1}"], "nothing taken came back"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_the_log_is_compacted_while_prompts_stay_queued(tmp_path: Path) -> None:
    """A queue that never drains keeps its log short: rewritten once it holds four lines per prompt."""
    path = tmp_path / "queue.jsonl"
    queue = PromptQueue(QueueLog(path), LatestState(last_modified=now_iso()), [])
    queue.put(_prompt(0))
    for number in range(1, 3 * COMPACT_AT_LINES):
        queue.put(_prompt(number))
        queue.take(f"m{number}")
    lines = path.read_text().count("\n")
    assert lines < COMPACT_AT_LINES + 4, lines
    assert [p.msg_id for p in replay([], QueueLog(path).read())] == ["m0"]


def test_prompts_of_an_older_latest_yaml_are_still_queued(tmp_path: Path) -> None:
    """Files written before the log: ``latest.yaml`` held the queue. They load, in order, and move into the
    log with its first line."""
    latest = LatestState(last_modified=now_iso(), queued_prompts=[_prompt(1), _prompt(2)])
    path = tmp_path / "queue.jsonl"
    queue = PromptQueue.load(QueueLog(path), latest)
    assert [p.msg_id for p in queue] == ["m1", "m2"] and not path.exists()
    queue.put(_prompt(3))
    assert latest.queued_prompts == [], "latest.yaml drops them with its next write"
    assert [p.msg_id for p in replay([_prompt(1), _prompt(2)], QueueLog(path).read())] == ["m1", "m2", "m3"]
    assert [p.msg_id for p in replay([], QueueLog(path).read())] == ["m1", "m2", "m3"]
