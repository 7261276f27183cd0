"""``queue.jsonl``: a dialog's queued prompts as an append-only log (one JSON object per line).

Queuing a prompt appends one line, and so does taking one out (consumed by a generation, or cancelled):
a flood of messages costs one small append each, where rewriting ``latest.yaml`` with the whole queue
made every message cost more than the one before (10,000 messages took minutes). The queue is the
log replayed in order (``replay``), after the prompts only ``latest.yaml`` lists (files before this
format; a subdialog's first prompt, written with its directory; a prompt queued in one write with the
state that goes with it, moved into the log right after): a ``queued`` line adds its prompt (ahead of
all with ``front``) unless that message id is queued already, a ``taken`` line removes it. The log is compacted when it holds many
more lines than prompts (rewritten whole, atomically), and removed once the queue is drained.

A crash mid-append leaves a torn last line, which the reader ignores (nothing acknowledged is lost:
an acknowledgement waits for the append's fsync); a bad line anywhere else is a ``CorruptFileError``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from dominds.store.atomic import append_line, remove_file, write_atomic
from dominds.store.errors import CorruptFileError
from dominds.store.fileio import read_text, record_line
from dominds.store.records import QueuedPrompt, Record

QUEUE_LOG = "queue.jsonl"
QUEUE_LOG_VERSION = 1

TakenWhy = Literal["consumed", "cancelled", "dropped"]
"""Why a prompt left the queue: a generation recorded it, its sender took it back, or the runtime
dropped it (an answer to a question that no longer exists)."""


class QueuedLine(Record):
    """A prompt was queued (``front``: ahead of every prompt queued before, the runtime's new-course prompt)."""

    v: int = QUEUE_LOG_VERSION
    """Format version."""
    op: Literal["queued"] = "queued"
    prompt: QueuedPrompt
    front: bool = False


class TakenLine(Record):
    """A prompt left the queue."""

    v: int = QUEUE_LOG_VERSION
    """Format version."""
    op: Literal["taken"] = "taken"
    msg_id: str
    """The message id of the prompt taken."""
    why: TakenWhy = "consumed"


QueueLine = Annotated[QueuedLine | TakenLine, Field(discriminator="op")]
# defer_build: built at the first read, not at import (either way the same validation: a mutant flipping it is equivalent)
_ADAPTER: TypeAdapter[QueuedLine | TakenLine] = TypeAdapter(QueueLine, config=ConfigDict(defer_build=True))


def replay(prompts: list[QueuedPrompt], lines: list[QueuedLine | TakenLine]) -> list[QueuedPrompt]:
    """The queue: ``latest.yaml``'s ``prompts`` that the log never names, then the log's lines in order.

    A prompt both list (moved into the log, ``latest.yaml`` not yet written since) takes its place in the
    log; one only ``latest.yaml`` lists (queued with the state written with it, not moved yet) goes first,
    and is moved into the log as a ``front`` line."""
    named = {line.prompt.msg_id if isinstance(line, QueuedLine) else line.msg_id for line in lines}
    only_latest = [p for p in prompts if p.msg_id not in named]
    front: list[QueuedPrompt] = []
    queue: dict[str, QueuedPrompt] = {}
    for line in lines:
        if isinstance(line, QueuedLine):
            msg_id = line.prompt.msg_id
            if msg_id in queue or any(p.msg_id == msg_id for p in front):
                continue
            if line.front:
                front.insert(0, line.prompt)
            else:
                queue[msg_id] = line.prompt
        else:
            queue.pop(line.msg_id, None)
            front = [p for p in front if p.msg_id != line.msg_id]
    return [*only_latest, *front, *queue.values()]


class QueueLog:
    """The log file of one dialog (``<dialog dir>/queue.jsonl``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> list[QueuedLine | TakenLine]:
        text = read_text(self.path)
        if not text:
            return []
        lines = text.split("\n")
        # the default is never compared (no non-blank line: the loop below checks none), so any value is equivalent
        last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
        out: list[QueuedLine | TakenLine] = []
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                out.append(_ADAPTER.validate_python(json.loads(line)))
            except (ValueError, ValidationError) as exc:
                if index == last:
                    break  # a torn append: its writer never saw it succeed
                raise CorruptFileError(self.path, f"line {index + 1} is not a queue entry ({exc})") from exc
        return out

    def append(self, lines: list[QueuedLine | TakenLine]) -> None:
        """One write for all ``lines`` (a crash keeps a prefix of them: the reader drops a torn tail)."""
        append_line(self.path, "\n".join(record_line(line) for line in lines))

    def rewrite(self, prompts: list[QueuedPrompt]) -> None:
        """Replace the log by one ``queued`` line per prompt (compaction); removed when there are none."""
        if not prompts:
            remove_file(self.path)
            return
        text = "".join(record_line(QueuedLine(prompt=p)) + "\n" for p in prompts)
        write_atomic(self.path, text)
