"""Long dialogs at constant cost (issue 31): a turn at turn 3,000 does the work of a turn at turn 10.

The course is built on disk from the real records of a driven turn, copied (fresh message ids, new
genseqs), then the engine is started on it as after a restart. Work is counted, not timed: the Python
function calls (``sys.setprofile``: Python and built-in calls) a turn makes, so the figures do not
depend on the machine's load.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from dominds.dialog.model import Dialog
from dominds.driver.engine import Engine
from dominds.driver.messages import CourseMessages, context_messages
from dominds.store.course_records import (
    COURSE_RECORD_ADAPTER,
    FuncCallRecord,
    FuncResultRecord,
    HumanTextRecord,
)

REPLY = "pong " * 20
RESPONSES: list[dict[str, Any]] = [{"agent": "lead", "response": REPLY}]


def inflate_course(path: Path, turns: int) -> None:
    """Repeat the turn recorded after the course start ``turns`` times (real records, fresh ids)."""
    head, *turn = path.read_text().splitlines()
    lines = [head]
    for number in range(1, turns + 1):
        for line in turn:
            record = json.loads(line)
            if "msgId" in record:
                record["msgId"] = f"{record['msgId']}-{number}"
            if "genseq" in record:
                record["genseq"] = number
            lines.append(json.dumps(record, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n")


async def drive_turn(engine: Engine, dialog: Dialog, text: str = "ping") -> None:
    engine.submit_user_message(dialog, text)
    await engine.wait_idle(timeout=60)


class CountedCalls:
    """The function calls (Python and built-in) the event loop's thread makes inside the ``with`` block,
    and how many of them join text (``str.join``)."""

    def __init__(self) -> None:
        self.calls = 0
        self.joins = 0

    def _count(self, frame: FrameType, event: str, arg: object) -> None:
        if event in ("call", "c_call"):
            self.calls += 1
            self.joins += event == "c_call" and getattr(arg, "__qualname__", "") == "str.join"

    def __enter__(self) -> CountedCalls:
        sys.setprofile(self._count)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)


async def calls_per_turn(engine: Engine, dialog: Dialog, turns: int = 3) -> int:
    """Function calls (Python and built-in) the event loop's thread makes while ``turns`` turns run."""
    await drive_turn(engine, dialog)  # warm: config, scripted database, caches of this course
    with CountedCalls() as counted:
        for _ in range(turns):
            await drive_turn(engine, dialog)
    return counted.calls // turns


async def dialog_of(
    make_engine: Callable[..., Any], tmp_path: Path, name: str, turns: int
) -> tuple[Engine, Dialog]:
    root = tmp_path / name
    engine: Engine = await make_engine(RESPONSES, root=root)
    dialog = engine.create_dialog("lead", "tasks/a.tsk")
    await drive_turn(engine, dialog)
    await engine.close()
    inflate_course(dialog.files.course(1), turns)
    engine = await make_engine(RESPONSES, root=root)
    return engine, engine.find_dialog(dialog.self_id)


@pytest.mark.slow
async def test_a_turn_at_3000_turns_does_the_work_of_a_turn_at_10(
    make_engine: Callable[..., Any], tmp_path: Path
) -> None:
    """The bug: every turn walked the whole course (the transcript's size for the cache, the context
    messages, the next genseq, the scripted provider's token estimate): 1.2 s a turn at 5,000 turns
    against 20 ms at the start."""
    short_engine, short = await dialog_of(make_engine, tmp_path, "short", 10)
    short_calls = await calls_per_turn(short_engine, short)
    await short_engine.close()
    long_engine, long = await dialog_of(make_engine, tmp_path, "long", 3000)
    assert len(long.records) > 12_000, "the course holds the 3,000 turns"
    long_calls = await calls_per_turn(long_engine, long)
    assert long_calls < short_calls * 1.2, (short_calls, long_calls)
    assert long.last_saying() == REPLY.strip() or long.last_saying() == REPLY
    assert long.next_genseq() == 3000 + 4 + 1
    assert long.transcript_chars() == sum(
        len(getattr(r, "content", "") or "")
        for r in long.records
        if isinstance(getattr(r, "content", None), str)
    )


def test_course_messages_fed_in_pieces_equal_the_whole_course_at_once() -> None:
    """A call whose result comes in a later piece appears at its own place once answered; a result whose
    call is in an earlier course never appears; the same as converting the whole course at once."""
    raw: list[dict[str, Any]] = [
        {
            "type": "func_result_record",
            "ts": "t",
            "genseq": 1,
            "id": "old",
            "name": "f",
            "content": "from before",
        },
        {"type": "human_text_record", "ts": "t", "genseq": 1, "msgId": "m1", "content": "hi"},
        {"type": "func_call_record", "ts": "t", "genseq": 1, "id": "c1", "name": "f", "arguments": {}},
        {"type": "agent_words_record", "ts": "t", "genseq": 1, "content": "between"},
        {"type": "func_result_record", "ts": "t", "genseq": 1, "id": "c1", "name": "f", "content": "done"},
        {"type": "func_call_record", "ts": "t", "genseq": 2, "id": "c2", "name": "f", "arguments": {}},
    ]
    records = [COURSE_RECORD_ADAPTER.validate_python(r) for r in raw]
    assert isinstance(records[2], FuncCallRecord) and isinstance(records[4], FuncResultRecord)
    assert isinstance(records[1], HumanTextRecord)
    whole = context_messages(records)
    assert [(m.role, m.kind, m.content) for m in whole] == [
        ("user", "text", "hi"),
        ("assistant", "tool_call", ""),
        ("assistant", "text", "between"),
        ("tool", "tool_result", "done"),
    ]
    for cut in range(len(records) + 1):
        built = CourseMessages().feed(records[:cut])
        built.messages()  # read between pieces, as generations do
        assert built.feed(records[cut:]).messages() == whole, cut


async def test_a_long_reply_reaches_followers_while_it_streams(make_engine: Callable[..., Any]) -> None:
    """The bug: with no pace the scripted provider streamed a whole reply without ever yielding to the
    event loop. Nothing else ran until it ended: not the group commit, so every chunk's event waited in
    its queue (50,000 events for 1 MB, which each full collection walked again: the reply's cost grew
    faster than its length, 2.35x for twice the length in ``bench/bench_long.py --only stream``), nor
    any request, and a follower got the whole reply at once when it was over. Held: followers (the
    panel's websocket subscribes this way) get chunks while the generation is still open, and every
    chunk once, in order."""
    text = "words and more words " * 20_000  # 420,000 characters: 21,000 chunks
    engine: Engine = await make_engine([{"agent": "lead", "message": "long", "response": text, "chunk_chars": 20}])
    dialog = engine.create_dialog("lead", "tasks/a.tsk")
    chunks: list[str] = []
    open_when_delivered: list[bool] = []

    def follow(event: dict[str, Any]) -> None:
        if event.get("type") == "markdown_chunk_evt" and event.get("dialog", {}).get("selfId") == dialog.self_id:
            chunks.append(event["chunk"])
            open_when_delivered.append(dialog.latest.generating)

    engine.pubchan.subscribe(follow, wants_all=True)
    await drive_turn(engine, dialog, "long")
    assert "".join(chunks) == text
    assert open_when_delivered[0], "the first chunk reached its follower only once the reply was over"
    assert sum(open_when_delivered) > len(chunks) // 2, (sum(open_when_delivered), len(chunks))


async def test_a_streamed_reply_does_work_linear_in_its_length(make_engine: Callable[..., Any]) -> None:
    """The bug: the live-text buffer kept for late subscribers was re-joined on every chunk, so a reply
    streamed in 20-character chunks cost time quadratic in its length (200k characters: 2.5 s against
    0.08 s for 100k). Work is counted, not timed: an earlier version compared CPU times (1.6M characters
    against 400k, held to 8x) and failed beside two CPU burners at load 12 (9.5x): a bigger reply's
    memory is slower to reach on a machine whose caches others share, so its CPU time grows faster than
    its work. The time itself is a figure of ``bench/bench_long.py --only stream``.

    Held here, for 2,000 and 8,000 chunks: the joins of text (``str.join``, which the re-joining called
    at every chunk) do not grow with the chunks, and the Python calls the event loop's thread makes grow
    in proportion to them (4x the chunks: 4x the calls; a walk of the chunks so far at every chunk would
    be 16x)."""
    sizes = (40_000, 160_000)
    text = "words and more words " * (max(sizes) // 20 + 1)
    engine: Engine = await make_engine(
        [{"agent": "lead", "message": f"size {n}", "response": text[:n], "chunk_chars": 20} for n in (1_000, *sizes)]
    )
    await drive_turn(engine, engine.create_dialog("lead", "tasks/a.tsk"), "size 1000")  # loads the script
    calls: dict[int, int] = {}
    joins: dict[int, int] = {}
    for size in sizes:
        dialog = engine.create_dialog("lead", "tasks/a.tsk")
        with CountedCalls() as counted:
            await drive_turn(engine, dialog, f"size {size}")
        calls[size], joins[size] = counted.calls, counted.joins
        assert dialog.last_saying() == text[:size]
    assert joins[160_000] < joins[40_000] + 100, joins  # 6,000 more chunks: no join per chunk
    assert calls[160_000] < 5 * calls[40_000], calls  # 4x the chunks: linear is 4x
