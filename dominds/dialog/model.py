"""Dialog objects: a cache of one dialog's files with persist-then-publish mutators."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any

from dominds.dialog.queue import PromptQueue
from dominds.ids import now_iso
from dominds.store import commit as group_commit
from dominds.store.course_records import (
    AgentThoughtRecord,
    AgentWordsRecord,
    CourseRecord,
    CourseStartRecord,
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    TeammateResponseRecord,
)
from dominds.store.dialog_store import DialogFiles
from dominds.store.records import (
    DialogMeta,
    HumanQuestion,
    InboundTellaskBack,
    LatestState,
    PendingSubdialog,
    Q4hFile,
    RegistryEntry,
    Reminder,
    RemindersFile,
    RunState,
    SubdlgFile,
)

Publish = Callable[[tuple[str, str] | None, dict[str, Any]], dict[str, Any]]


class Dialog:
    """One dialog (root or subdialog). Not constructed directly: see ``load_dialog``."""

    def __init__(
        self,
        files: DialogFiles,
        meta: DialogMeta,
        latest: LatestState,
        publish: Publish,
        root: RootDialog | None,
    ) -> None:
        self.files = files
        self.meta = meta
        self.latest = latest
        self.queue = PromptQueue(files.queue_log, latest, [])
        """Accepted prompts waiting for a generation, oldest first (the loader reads them from disk)."""
        self._publish = publish
        self.root: RootDialog = root if root is not None else self  # type: ignore[assignment]
        self.reminders: list[Reminder] = []
        self.q4h: list[HumanQuestion] = []
        self.pending: list[PendingSubdialog] = []
        self._records: list[CourseRecord] | None = []
        self._record_keys: _RecordKeys | None = None
        self.drive_mutex = asyncio.Lock()  # FIFO: asyncio wakes waiters in order
        self.suspension_lock = asyncio.Lock()
        self.drive_task: asyncio.Task[None] | None = None
        self.stop_reason: str | None = None
        self.new_course_reason = "clear_mind"
        """Why the pending new course starts: ``clear_mind`` or ``context_health`` (not persisted: a new
        course still pending after a crash is started as clear_mind's)."""
        self.load_error: str | None = None
        self.genseq = 0
        self._run_state_unpublished = False
        self._latest_dirty = False
        """``latest`` changed and a deferred save (``save_latest(soon=True)``) has not written it yet."""
        self._pending_commit: asyncio.Future[None] | None = None
        self.notices: list[str] = []
        """Problems found and repaired on load (for example a rebuilt registry), shown with the dialog."""
        self.streaming_text: dict[str, list[str]] = {}
        """The segment being streamed (kind → its chunks so far), for late subscribers: chunks are
        appended, joined only when read (``streamed_so_far``), so a long reply streams in linear time."""
        self.course_cache: dict[str, Any] = {}
        """What upper layers derive from the in-memory course and keep up to date as it grows (the
        driver's context messages): dropped whenever the course is replaced or released."""

    # -- identity ------------------------------------------------------------------------------

    @property
    def self_id(self) -> str:
        return self.meta.id

    @property
    def root_id(self) -> str:
        return self.meta.root_id

    @property
    def key(self) -> tuple[str, str]:
        return (self.meta.id, self.meta.root_id)

    @property
    def is_root(self) -> bool:
        return self.meta.is_root

    @property
    def agent_id(self) -> str:
        return self.meta.agent_id

    @property
    def ident(self) -> dict[str, str]:
        return {"selfId": self.self_id, "rootId": self.root_id}

    # -- derived state -------------------------------------------------------------------------

    @property
    def pending_new_course(self) -> bool:
        """Set by clear_mind: start a new course when the current generation ends (persisted, so a crash
        between the tool's result and the new course still starts it)."""
        return self.latest.new_course_pending

    @pending_new_course.setter
    def pending_new_course(self, value: bool) -> None:
        self.latest.new_course_pending = value

    @property
    def is_dead(self) -> bool:
        return self.latest.run_state.kind == "dead"

    @property
    def is_driving(self) -> bool:
        return self.drive_task is not None and not self.drive_task.done()

    def can_drive(self) -> bool:
        """DESIGN §4.3: no pending Q4H and no pending subdialogs, except that an ask-back obligation is
        blocked only by its own work (the asker and earlier calls are still waiting, by definition), and
        that a user message drives a main dialog that waits on subdialogs (``user_may_drive``)."""
        if self.load_error or self.is_dead or self.latest.run_state.kind == "terminal":
            return False
        if self.q4h:
            return False
        return not self.blocking_pending() or (
            self.waits_only_on_subdialogs() and self.queue.first_of("user") is not None
        )

    def waits_only_on_subdialogs(self) -> bool:
        """A main dialog whose only wait is on its subdialogs (no question of its own, no ask-back being
        served): a user message may drive it, and its answer may use tools and tellask more, while the
        subdialogs work; their replies revive it as before (DESIGN §4.3, §5 reply obligations)."""
        return (
            self.is_root
            and not self.q4h
            and self.serving_obligation() is None
            and not self.load_error
            and not self.is_dead
            and self.latest.run_state.kind != "terminal"
        )

    # -- reply obligations (ask-backs) ---------------------------------------------------------

    def serving_obligation(self) -> InboundTellaskBack | None:
        """The ask-back being answered now: serving started, or its prompt already consumed."""
        for inbound in self.latest.inbound_tellask_backs:
            if inbound.serving_since is not None or inbound.msg_id not in self.queue:
                return inbound
        return None

    def obligation_work(self, inbound: InboundTellaskBack) -> list[PendingSubdialog]:
        """Calls made while serving ``inbound`` that have not returned yet."""
        if inbound.serving_since is None:  # older files: all but the asker's own wait is its work
            return [p for p in self.pending if p.subdialog_id != inbound.from_dialog_id]
        before = set(inbound.pending_before)
        return [p for p in self.pending if p.call_id not in before]

    def blocking_pending(self) -> list[PendingSubdialog]:
        """The pending calls that keep this dialog from driving."""
        serving = self.serving_obligation()
        if serving is not None:
            return self.obligation_work(serving)
        if self.latest.inbound_tellask_backs:
            return []  # a queued ask-back can start: answering it is what unblocks the asker
        return list(self.pending)

    def start_serving(self, prompt_msg_id: str) -> None:
        """Mark the ask-back carried by ``prompt_msg_id`` as being served (persisted by the caller's save)."""
        for index, inbound in enumerate(self.latest.inbound_tellask_backs):
            if inbound.msg_id == prompt_msg_id and inbound.serving_since is None:
                earlier = [p.msg_id for p in self.queue if p.msg_id != prompt_msg_id]
                self.latest.inbound_tellask_backs[index] = inbound.model_copy(
                    update={
                        "serving_since": now_iso(),
                        "pending_before": [p.call_id for p in self.pending],
                        "queued_before": earlier,
                    }
                )

    def blocked_reason(self) -> str | None:
        waiting = bool(self.blocking_pending())
        if self.q4h and waiting:
            return "needs_human_input_and_subdialogs"
        if self.q4h:
            return "needs_human_input"
        if waiting:
            return "waiting_for_subdialogs"
        return None

    def idle_run_state(self) -> RunState:
        reason = self.blocked_reason()
        return RunState(kind="blocked", reason=reason) if reason else RunState(kind="idle")

    # -- persistence + publishing --------------------------------------------------------------

    def publish(self, event: dict[str, Any]) -> dict[str, Any]:
        return self._publish(self.key, event)

    def save_latest(self, *, soon: bool = False) -> None:
        """Persist ``latest.yaml``; a run-state change made since the last save is published after it.

        ``soon``: with the current group commit rather than now (``store/commit.defer``), for a state
        that the drive saves again before long: a turn of a fast provider then writes the file once.
        Only where recovery reads the same from the course: the generation's start (its prompt is
        recorded there, an open generation is closed as interrupted)."""
        if soon:
            self._latest_dirty = True
            group_commit.defer(self, self._flush_latest)
        else:
            self._latest_dirty = False
            self.files.write_latest(self.latest)
            self.queue.latest_written()
        if self._run_state_unpublished:
            self._run_state_unpublished = False
            self.publish({"type": "dlg_run_state_evt", "runState": self.latest.run_state.to_disk()})

    def _flush_latest(self) -> None:
        if self._latest_dirty:
            self._latest_dirty = False
            try:
                self.files.write_latest(self.latest)
            except BaseException:
                self._latest_dirty = True
                raise
            self.queue.latest_written(move=False)

    def set_run_state(self, state: RunState, *, save: bool = True) -> None:
        """Change the run state; with ``save=False`` it is persisted (then published) by the next save."""
        if state == self.latest.run_state:
            return
        self.latest.run_state = state
        self._run_state_unpublished = True
        if save:
            self.save_latest()

    def append(self, record: CourseRecord, *, sync: bool = True) -> int:
        """Persist a course record, keep it in memory; returns its message index."""
        self.files.append(self.latest.current_course, record, sync=sync)
        self.records.append(record)
        return len(self.records) - 1

    def save_q4h(self) -> None:
        self.files.write_q4h(Q4hFile(questions=list(self.q4h), updated_at=now_iso()))

    def save_pending(self) -> None:
        self.files.write_subdlg(SubdlgFile(pending=list(self.pending), updated_at=now_iso()))

    async def commit_pending(self) -> None:
        """Persist the pending index once for every change made to it in the same event-loop turn.

        Many tellasks of one message run concurrently; each appends its entry (under the suspension
        lock) and awaits this. The first waiter yields once so its siblings can append, then writes
        the file for all of them: one write instead of one per call, and every caller returns only
        after its entry is on disk (the commit point of its dispatch). Answers arriving together
        (``supply_response``) remove their entries the same way.
        """
        if self._pending_commit is not None:
            await asyncio.shield(self._pending_commit)
            return
        commit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending_commit = commit
        try:
            await asyncio.sleep(0)
        finally:
            # Also when this first waiter is cancelled: its siblings wait on ``commit`` (they waited
            # forever when a cancelled first caller left it unresolved).
            self._pending_commit = None
            try:
                self.save_pending()
            except BaseException as exc:
                commit.set_exception(exc)
                commit.exception()  # retrieved: the waiters (if any) raise it, the loop need not report it
                raise
            commit.set_result(None)

    def save_reminders(self) -> None:
        self.files.write_reminders(RemindersFile(reminders=list(self.reminders), updated_at=now_iso()))
        self.publish(
            {
                "type": "full_reminders_update",
                "reminders": [{"id": r.id, "content": r.content, "owner": r.owner} for r in self.reminders],
            }
        )

    def streamed_so_far(self, kind: str) -> str | None:
        """The text of the ``kind`` segment being streamed now (None when none is)."""
        chunks = self.streaming_text.get(kind)
        return None if chunks is None else "".join(chunks)

    # -- transcript queries --------------------------------------------------------------------

    @property
    def records(self) -> list[CourseRecord]:
        """Records of the current course; reloaded from the file after ``release_transcript``."""
        if self._records is None:
            self._records = self.files.read_course(self.latest.current_course)
        return self._records

    @records.setter
    def records(self, value: list[CourseRecord]) -> None:
        self._records = value
        self._record_keys = None
        self.course_cache.clear()

    def release_transcript(self, *, drive_over: bool = False) -> None:
        """Drop the in-memory copy of the course (the file is the truth); only while not driving
        (``drive_over``: called by the drive itself as it ends)."""
        if drive_over or not self.is_driving:
            self._records = None
            self._record_keys = None
            self.course_cache.clear()

    def transcript_chars(self) -> int:
        """Characters of text held by the in-memory transcript (0 when it is not loaded); kept as
        records are appended (it was a walk of the whole course after every drive: 154 ms a turn at
        1,500 turns)."""
        if self._records is None:
            return 0
        return self._keys().chars

    def recorded_msg_ids(self) -> AbstractSet[str]:
        return self._keys().msg_ids

    def supplied_response_keys(self) -> AbstractSet[tuple[str, str]]:
        """(calleeDialogId, callId) of every teammate response recorded in the current course."""
        return self._keys().responses

    def _keys(self) -> _RecordKeys:
        """The keys and figures of the current course's records, kept up to date as records are appended
        (a 100-way fan-out asked for its caller's responses once per answer, and every turn asked for
        the transcript's size and the next genseq: each a scan of every record)."""
        records = self.records
        keys = self._record_keys
        if keys is None or keys.records is not records or keys.seen > len(records):
            keys = self._record_keys = _RecordKeys(records)
        if keys.seen < len(records):
            keys.catch_up()
        return keys

    def last_saying(self) -> str | None:
        """The answer: the last saying since the last prompt or teammate response of the current course.

        A saying followed by a teammate response was an intermediate step (it made the call that was
        answered), never the answer."""
        for kind in (AgentWordsRecord, AgentThoughtRecord):
            for record in reversed(self.records):
                if isinstance(record, kind) and record.content.strip():
                    return record.content
                if isinstance(record, HumanTextRecord | TeammateResponseRecord):
                    break
        return None

    def next_genseq(self) -> int:
        return self._keys().last_genseq + 1

    def adopt_first_course(self, record: CourseRecord) -> None:
        """The course file was created with the dialog's directory (``create_dialog_dir``)."""
        self.records = [record]

    def start_course(self, number: int, reason: str | None, idle_clears: int = 0) -> None:
        self.latest.current_course = number
        self.records = []
        self.append(CourseStartRecord(ts=now_iso(), course=number, reason=reason, idle_clears=idle_clears))


class SubDialog(Dialog):
    """A dialog created by a tellask; answers its current caller."""


class RootDialog(Dialog):
    """A root dialog: owns the local registry of its tree and the TYPE B registry."""

    def __init__(self, files: DialogFiles, meta: DialogMeta, latest: LatestState, publish: Publish) -> None:
        super().__init__(files, meta, latest, publish, None)
        self.status = "run"
        self.local: dict[str, Dialog] = {meta.id: self}
        """selfId → loaded dialog of this tree."""
        self.type_b: dict[str, RegistryEntry] = {}
        """``agentId!tellaskSession`` → registry entry (persisted in registry.yaml)."""
        self.registry_lock = asyncio.Lock()
        """Serializes TYPE B lookup-or-create so concurrent identical calls make one subdialog."""

    def save_registry(self) -> None:
        self.files.write_registry(self.type_b)


class _RecordKeys:
    """Keys and figures of one in-memory course (its list only grows by appends or is replaced as a
    whole): each record is looked at once, when it is appended."""

    __slots__ = ("records", "seen", "msg_ids", "responses", "chars", "last_genseq")

    def __init__(self, records: list[CourseRecord]) -> None:
        self.records = records
        self.seen = 0
        self.msg_ids: set[str] = set()
        self.responses: set[tuple[str, str]] = set()
        self.chars = 0
        """Characters of text the records hold (their ``content``, ``response`` and ``result``)."""
        self.last_genseq = 0
        """The highest genseq of a generation start or finish."""

    def catch_up(self) -> None:
        for record in self.records[self.seen :]:
            if isinstance(record, HumanTextRecord):
                self.msg_ids.add(record.msg_id)
            elif isinstance(record, TeammateResponseRecord):
                self.responses.add((record.callee_dialog_id, record.call_id))
            elif isinstance(record, GenStartRecord | GenFinishRecord) and record.genseq > self.last_genseq:
                self.last_genseq = record.genseq
            for name in _text_fields(type(record)):
                value = getattr(record, name)
                if isinstance(value, str):
                    self.chars += len(value)
        self.seen = len(self.records)


_TEXT_FIELDS = ("content", "response", "result")
_TEXT_FIELDS_OF: dict[type, tuple[str, ...]] = {}


def _text_fields(kind: type) -> tuple[str, ...]:
    """The ``_TEXT_FIELDS`` a record type has. Asking every record for all three cost twice its other
    work: a missing one goes through pydantic's ``__getattr__`` and an exception (0.13 s of the first
    look at a 10,000-record course, on the event loop)."""
    found = _TEXT_FIELDS_OF.get(kind)
    if found is None:
        fields = getattr(kind, "model_fields", {})
        found = _TEXT_FIELDS_OF[kind] = tuple(name for name in _TEXT_FIELDS if name in fields)
    return found
