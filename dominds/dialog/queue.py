"""A dialog's queued prompts in memory, each change written through to its log (``store/queue_log.py``).

Every mutator persists first and changes memory after: a refused write leaves both as they were. Reads
cost what they need, never a walk of the queue: membership and lookup by message id, the first
prompt, and whether a prompt of some origin is queued at all (the drive asks on every turn).
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from collections.abc import Iterator

from dominds.store import commit as group_commit
from dominds.store.errors import StoreError
from dominds.store.queue_log import QueuedLine, QueueLog, TakenLine, TakenWhy, replay
from dominds.store.records import LatestState, QueuedPrompt

log = logging.getLogger("dominds.queue")

COMPACT_AT_LINES = 256
"""A log with at least this many lines, four times as many as queued prompts, is rewritten whole."""


class PromptQueue:
    """Queued prompts of one dialog, oldest first (a ``front`` prompt goes ahead of them)."""

    def __init__(self, log_file: QueueLog, latest: LatestState, lines: list[QueuedLine | TakenLine]) -> None:
        self._log = log_file
        self._latest = latest
        self._prompts: OrderedDict[str, QueuedPrompt] = OrderedDict(
            (p.msg_id, p) for p in replay(latest.queued_prompts, lines)
        )
        self._listed_by_latest = bool(latest.queued_prompts)
        """``latest.yaml`` on disk may still list prompts (until its next write): the log is not removed
        before, or a drained queue would come back from it."""
        # Those the log names are in the log already (queued there, maybe taken since): moving them again
        # would bring a taken prompt back.
        named = {line.prompt.msg_id if isinstance(line, QueuedLine) else line.msg_id for line in lines}
        latest.queued_prompts = [p for p in latest.queued_prompts if p.msg_id not in named]
        self._origins: Counter[str] = Counter(p.origin for p in self._prompts.values())
        self._lines = len(lines)
        """Lines in the log file (compaction)."""
        self._front: set[str] = {p.msg_id for p in latest.queued_prompts}
        """Message ids queued ahead of the others and not yet in the log (those only ``latest.yaml`` lists
        are read first)."""
        self._writes = 0
        """Changes written so far: a compaction planned before a later change is not made."""

    @classmethod
    def load(cls, log_file: QueueLog, latest: LatestState) -> PromptQueue:
        return cls(log_file, latest, log_file.read())

    # -- reading ------------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[QueuedPrompt]:
        return iter(list(self._prompts.values()))

    def __len__(self) -> int:
        return len(self._prompts)

    def __bool__(self) -> bool:
        return bool(self._prompts)

    def __contains__(self, msg_id: object) -> bool:
        return msg_id in self._prompts

    def get(self, msg_id: str) -> QueuedPrompt | None:
        return self._prompts.get(msg_id)

    def first(self) -> QueuedPrompt | None:
        return next(iter(self._prompts.values()), None) if self._prompts else None

    def first_of(self, origin: str) -> QueuedPrompt | None:
        """The oldest queued prompt of ``origin`` (a walk only when one is queued)."""
        if not self._origins[origin]:
            return None
        return next((p for p in self._prompts.values() if p.origin == origin), None)

    def count(self, origin: str) -> int:
        return self._origins[origin]

    # -- changing (persist, then change memory) -------------------------------------------------------

    def put(self, prompt: QueuedPrompt, *, front: bool = False, with_latest: bool = False) -> None:
        """Queue ``prompt`` (last, or ahead of every other with ``front``); a queued message id is kept once.

        ``with_latest``: not written now but by the caller's next ``latest.yaml`` write, in one write with
        the state that goes with it (an ask-back's obligation, a new course's number); the log takes it
        over with its next line. After a crash before that, it is read back ahead of the log's prompts."""
        if prompt.msg_id in self._prompts:
            return
        if with_latest:
            self._latest.queued_prompts.append(prompt)
            self._listed_by_latest = True
        else:
            self._write([QueuedLine(prompt=prompt, front=front)])
        self._prompts[prompt.msg_id] = prompt
        if front:
            self._prompts.move_to_end(prompt.msg_id, last=False)
            self._front.add(prompt.msg_id)
        self._origins[prompt.origin] += 1

    def take(self, msg_id: str, why: TakenWhy = "consumed") -> QueuedPrompt | None:
        """Remove a queued prompt; None when it is not queued."""
        prompt = self._prompts.get(msg_id)
        if prompt is None:
            return None
        self._write([TakenLine(msg_id=msg_id, why=why)])
        del self._prompts[msg_id]
        self._origins[prompt.origin] -= 1
        if not self._prompts or self._lines >= max(COMPACT_AT_LINES, 4 * len(self._prompts)):
            self._plan_compaction()
        return prompt

    def clear(self) -> None:
        """Drop every queued prompt (a dialog declared dead)."""
        if self._prompts:
            self._write([TakenLine(msg_id=msg_id, why="dropped") for msg_id in self._prompts])
            self._prompts.clear()
            self._origins.clear()
            self._plan_compaction()

    def _write(self, lines: list[QueuedLine | TakenLine]) -> None:
        if self._latest.queued_prompts:
            # Prompts listed by latest.yaml (an older file, a new subdialog's first prompt, one queued
            # ``with_latest``) move into the log first; latest.yaml drops them with its next write (until
            # then both list them: one prompt each, the log's taken lines apply to both).
            listed = self._latest.queued_prompts
            ahead = [p for p in listed if p.msg_id in self._front]  # each goes first: written last to first
            moved: list[QueuedLine | TakenLine] = [QueuedLine(prompt=p, front=True) for p in reversed(ahead)]
            moved += [QueuedLine(prompt=p) for p in listed if p.msg_id not in self._front]
            lines = moved + lines
        if not lines:
            return
        self._log.append(lines)
        self._lines += len(lines)
        self._writes += 1
        self._latest.queued_prompts = []
        self._front.clear()

    def _plan_compaction(self) -> None:
        """Rewrite the log once what was written before is durable: a drained queue's log is removed,
        never ahead of the course records that consumed its prompts (one group may reach the disk in any
        order; a removal that won would lose an acknowledged message the course had not recorded)."""
        planned = self._writes

        def compact() -> None:
            if planned != self._writes or self._listed_by_latest:
                return  # changed since, or latest.yaml not written since: the next take plans it again
            try:
                self._log.rewrite(list(self._prompts.values()))
            except StoreError as exc:
                log.warning("queue log %s not compacted: %s", self._log.path, exc)
                return
            self._lines = len(self._prompts)

        group_commit.after_durable(compact)

    def latest_written(self, *, move: bool = True) -> None:
        """``latest.yaml`` was written: prompts it carried (``with_latest``) move into the log now, at their
        place in the queue (``move``; not from a group commit's deferred write, where nothing is appended:
        the next line written moves them). Its next write leaves them out."""
        if not self._latest.queued_prompts:
            was_listed, self._listed_by_latest = self._listed_by_latest, False
            if was_listed and not self._prompts and self._lines:
                self._plan_compaction()  # drained while latest.yaml still listed some: the log can go now
        elif move:
            self._write([])

    def as_list(self) -> list[QueuedPrompt]:
        return list(self._prompts.values())
