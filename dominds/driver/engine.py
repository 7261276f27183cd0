"""The engine: the global registry of roots, the one scheduler that owns all driving, and the API
that the server, the CLI and the workflows call.

``Engine.start()`` takes the workspace lock, reconciles ``.dialogs/run/`` after a crash (recovery.py)
and starts the scheduler. The scheduler drives every dialog whose ``needsDrive`` is set and that can
drive, one drive per dialog at a time (per-dialog FIFO mutex). State changes reach subscribers through
``pubchan`` only after they were persisted.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
from collections import OrderedDict
from typing import Any

import filelock

from dominds.dialog.loader import error_dialog, load_root, load_sub
from dominds.dialog.model import Dialog, RootDialog, SubDialog
from dominds.driver.conductor import ConductorRun, ConductorWaiters
from dominds.driver.config import ConfigCache
from dominds.driver.drive import drive_dialog
from dominds.driver.health import ContextHealth
from dominds.driver.secrets import SecretRedactor
from dominds.driver.storage_watch import resume_when_writable
from dominds.ids import new_dialog_id, now_iso
from dominds.llm.base import Generator, LlmError
from dominds.llm.catalog import ProviderConfig
from dominds.llm.scripted import ScriptedGenerator
from dominds.problems import make_problem
from dominds.pubchan import PubChan
from dominds.rtws import Rtws
from dominds.store import provider_problems
from dominds.store.course_records import CourseStartRecord, GenFinishRecord
from dominds.store.dialog_store import DialogStore, create_dialog_dir
from dominds.store.errors import DialogNotFoundError, StoreError
from dominds.store.records import DialogMeta, HumanQuestion, LatestState, QueuedPrompt, RunState
from dominds.taskdoc import TaskdocError, normalize_taskdoc_path
from dominds.textcheck import lone_surrogate_at, lone_surrogate_problem

log = logging.getLogger("dominds.engine")


class EngineError(Exception):
    """A request the engine refuses; the message says why and what to do."""


class EngineBadRequest(EngineError):
    """The request itself is wrong (unknown agent, bad Taskdoc path, empty text): fix it and retry."""


class WorkspaceLocked(EngineError):
    """Another daemon (or a writing CLI command) holds the workspace lock."""


class Engine:
    def __init__(self, rtws: Rtws, *, resume: bool = True, take_lock: bool = True) -> None:
        self.rtws = rtws
        self.store = DialogStore(rtws)
        self.config = ConfigCache(rtws)
        self.pubchan = PubChan()
        self.config.mcp.on_change = self._publish_problems
        self.resume_on_start = resume
        self.roots: dict[str, RootDialog] = {}
        """Global registry: rootId → loaded root of ``run/``."""
        self.sub_roots: dict[str, str] = {}
        """selfId of a known subdialog → its rootId."""
        self.q4h_index: dict[str, tuple[str, str]] = {}
        """questionId → (rootId, selfId) of every pending question in ``run/``."""
        self.active_streams: dict[str, asyncio.Future[Any]] = {}
        self._provider_problems_cache: tuple[int, set[str]] | None = None
        self.health = ContextHealth(self)
        self.conductors = ConductorWaiters()
        """Workflow code waiting for teammate answers (see conductor.py)."""
        self._wanted: set[tuple[str, str]] = set()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._scheduler: asyncio.Task[None] | None = None
        self._drives: set[asyncio.Task[None]] = set()
        self._generators: dict[str, Generator] = {"scripted": ScriptedGenerator()}
        self._transcripts: OrderedDict[str, Dialog] = OrderedDict()
        self.transcript_cache_size = 64
        self.secrets = SecretRedactor()
        """Secrets redacted from tool output (provider keys from the catalog, plus registered ones)."""
        self.transcript_cache_chars = 32 * 1024 * 1024
        """Text kept in cached transcripts at most (huge messages must not pin hundreds of MiB)."""
        self._transcript_sizes: dict[str, int] = {}
        self.storage_retry_interval = 5.0
        """Seconds between retries of a dialog paused by a refused write (a full disk)."""
        self._background: set[asyncio.Task[None]] = set()
        self.max_concurrent_drives = 64
        """Drives in flight at once; bounds memory and keeps latency fair under bursts."""
        """How many dialogs keep their current course in memory after a drive (LRU)."""
        self._lock = filelock.FileLock(str(rtws.lock_path)) if take_lock else None
        self.closed = False

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        if self._scheduler is not None:
            return  # already started: recovery must run once per daemon
        self.rtws.ensure_layout()
        if self._lock is not None:
            try:
                self._lock.acquire(timeout=0)
            except filelock.Timeout as exc:
                raise WorkspaceLocked(
                    f"the workspace {self.rtws.root} is locked by another Dominds process ({self.rtws.lock_path})"
                ) from exc
        from dominds.driver.recovery import recover

        recover(self)
        self._scheduler = asyncio.create_task(self._schedule_forever(), name="dominds-scheduler")
        self._wake.set()

    async def close(self, timeout: float = 5.0) -> None:
        """Stop driving: streams are cancelled, each dialog is left interrupted and can be resumed."""
        if self.closed:
            return
        self.closed = True
        if self._scheduler is not None:
            self._scheduler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scheduler
        for dialog in self._all_loaded():
            if dialog.is_driving:
                self._request_stop(dialog, "server_shutdown")
        if self._drives:
            await asyncio.wait(self._drives, timeout=timeout)
        for task in self._background:
            task.cancel()
        await self.config.mcp.close()
        if self._lock is not None and self._lock.is_locked:
            self._lock.release()

    # ---------------------------------------------------------------- loading

    def _all_loaded(self) -> list[Dialog]:
        return [d for root in self.roots.values() for d in root.local.values()]

    def load_root(self, root_id: str) -> RootDialog:
        root = self.roots.get(root_id)
        if root is not None:
            return root
        status = self.store.locate_root(root_id)
        files = self.store.files(status, root_id)
        try:
            root = load_root(files, self.pubchan.publish, status)
        except StoreError as exc:
            return error_dialog(files, self.pubchan.publish, str(exc), None)  # type: ignore[return-value]
        if status == "run":
            self.roots[root_id] = root
        return root

    def try_load_sub(self, root: RootDialog, self_id: str) -> SubDialog | None:
        loaded = root.local.get(self_id)
        if loaded is not None:
            return loaded  # type: ignore[return-value]
        files = self.store.files(root.status, root.root_id, self_id)
        try:
            sub = load_sub(files, self.pubchan.publish, root)
        except StoreError:
            return None
        self.sub_roots[self_id] = root.root_id
        return sub

    def get_dialog(self, root_id: str, self_id: str | None = None) -> Dialog:
        root = self.load_root(root_id)
        if self_id is None or self_id == root_id:
            return root
        sub = self.try_load_sub(root, self_id)
        if sub is None:
            files = self.store.files(root.status, root_id, self_id)
            if not files.dir.exists():
                raise DialogNotFoundError(f"no dialog {self_id!r} under root {root_id!r}")
            try:
                files.read_meta()
                files.read_latest()
            except StoreError as exc:
                return error_dialog(files, self.pubchan.publish, str(exc), None)
            raise DialogNotFoundError(f"dialog {self_id!r} could not be loaded")
        return sub

    def try_get_dialog(self, root_id: str, self_id: str) -> Dialog | None:
        try:
            return self.get_dialog(root_id, self_id)
        except StoreError:
            return None

    def find_loaded(self, self_id: str) -> Dialog | None:
        root_id = self_id if self_id in self.roots else self.sub_roots.get(self_id)
        if root_id is None or root_id not in self.roots:
            return None
        return self.roots[root_id].local.get(self_id)

    def find_dialog(self, self_id: str) -> Dialog:
        """A dialog by self id alone (roots and subdialogs, any status)."""
        loaded = self.find_loaded(self_id)
        if loaded is not None:
            return loaded
        _, root_id = self.store.locate_dialog(self_id)
        return self.get_dialog(root_id, self_id)

    def create_subdialog(self, root: RootDialog, meta: DialogMeta, latest: LatestState) -> SubDialog:
        files = self.store.files(root.status, root.root_id, meta.id)
        first = CourseStartRecord(ts=now_iso(), course=1)
        create_dialog_dir(files, meta, latest, first)
        sub = SubDialog(files, meta, latest, self.pubchan.publish, root)
        sub.adopt_first_course(first)
        root.local[meta.id] = sub
        self.sub_roots[meta.id] = root.root_id
        return sub

    # ---------------------------------------------------------------- scheduling

    def request_drive(self, dialog: Dialog) -> None:
        """Persist ``needsDrive`` and wake the scheduler."""
        if not dialog.latest.needs_drive:
            dialog.latest.needs_drive = True
        dialog.save_latest()
        self._want(dialog)

    def _want(self, dialog: Dialog) -> None:
        self._wanted.add((dialog.root_id, dialog.self_id))
        self._idle.clear()
        self._wake.set()

    def after_unblock(self, dialog: Dialog) -> None:
        """A question or subdialog was resolved: revive the dialog once if it can now drive."""
        if dialog.meta.conductor:
            # A workflow root is woken through its waiting Python code, never by an LLM generation.
            if not dialog.is_driving:
                dialog.set_run_state(dialog.idle_run_state())
            return
        if dialog.can_drive():
            self.request_drive(dialog)
        elif not dialog.is_driving and dialog.latest.run_state.kind in ("blocked", "idle"):
            dialog.set_run_state(dialog.idle_run_state())

    async def _schedule_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            for root_id, self_id in sorted(self._wanted):
                dialog = self.try_get_dialog(root_id, self_id)
                if dialog is None or not dialog.latest.needs_drive or dialog.root.status != "run":
                    self._wanted.discard((root_id, self_id))
                    continue
                if dialog.is_driving or not dialog.can_drive():
                    continue
                if len(self._drives) >= self.max_concurrent_drives:
                    break  # the rest wait for a slot; a finishing drive wakes the scheduler
                self._wanted.discard((root_id, self_id))
                task = asyncio.create_task(self._drive(dialog), name=f"drive-{self_id}")
                dialog.drive_task = task
                self._drives.add(task)
            if not self._drives and not self._drivable_wanted():
                self._idle.set()

    def _drivable_wanted(self) -> bool:
        for root_id, self_id in self._wanted:
            dialog = self.try_get_dialog(root_id, self_id)
            if dialog is not None and dialog.can_drive() and dialog.latest.needs_drive:
                return True
        return False

    async def _drive(self, dialog: Dialog) -> None:
        try:
            async with dialog.drive_mutex:
                _mark_registry_locked(dialog, True)
                try:
                    await drive_dialog(self, dialog)
                finally:
                    _mark_registry_locked(dialog, False)
        except StoreError as exc:  # the disk refused: the dialog pauses with the reason, nothing else is lost
            log.error("dialog %s paused: %s", dialog.self_id, exc)
            dialog.load_error = f"storage failure (paused until the disk takes writes again): {exc}"
            watcher = asyncio.create_task(resume_when_writable(self, dialog, str(exc)), name=f"storage-{dialog.self_id}")
            self._background.add(watcher)
            watcher.add_done_callback(self._background.discard)
            self.pubchan.publish(
                dialog.key,
                {
                    "type": "stream_error_evt",
                    "course": dialog.latest.current_course,
                    "genseq": dialog.genseq or None,
                    "error": f"storage failure: {exc}",
                },
            )
        except Exception as exc:  # a bug in one drive must not stop the daemon
            log.exception("drive of %s failed", dialog.self_id)
            # No automatic retry: the same input would fail the same way, in a hot loop. A person resumes it.
            dialog.latest.needs_drive = False
            with contextlib.suppress(Exception):
                dialog.set_run_state(RunState(kind="interrupted", reason="system_stop", detail=f"internal error: {exc}"))
                dialog.save_latest()
        finally:
            self._drives.discard(asyncio.current_task())  # type: ignore[arg-type,unused-ignore]
            self._remember_transcript(dialog)
            if dialog.latest.needs_drive:
                self._want(dialog)
            self._wake.set()

    def _remember_transcript(self, dialog: Dialog) -> None:
        """Keep recent transcripts in memory, bounded by count and by text size (the files are the truth)."""
        self._transcripts[dialog.self_id] = dialog
        self._transcripts.move_to_end(dialog.self_id)
        self._transcript_sizes[dialog.self_id] = dialog.transcript_chars()
        while len(self._transcripts) > 1 and (
            len(self._transcripts) > self.transcript_cache_size
            or sum(self._transcript_sizes.values()) > self.transcript_cache_chars
        ):
            oldest_id, oldest = self._transcripts.popitem(last=False)
            self._transcript_sizes.pop(oldest_id, None)
            oldest.release_transcript()
        if self._transcript_sizes.get(dialog.self_id, 0) > self.transcript_cache_chars:
            self._transcripts.pop(dialog.self_id, None)  # alone too big to keep: read again when needed
            self._transcript_sizes.pop(dialog.self_id, None)
            dialog.release_transcript(drive_over=True)

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until nothing is driving and nothing drivable is waiting (tests, CLI `run`, benches)."""
        async def _settled() -> None:
            while True:
                self._wake.set()
                await self._idle.wait()
                await asyncio.sleep(0)
                if self._idle.is_set() and not self._drives:
                    return

        await asyncio.wait_for(_settled(), timeout)

    # ---------------------------------------------------------------- providers and health

    def generator_for(self, api_type: str) -> Generator:
        generator = self._generators.get(api_type)
        if generator is None:
            generator = _load_generator(api_type)
            self._generators[api_type] = generator
        return generator

    @staticmethod
    def provider_config_dict(provider: ProviderConfig) -> dict[str, Any]:
        return {
            "key": provider.key,
            "name": provider.name,
            "apiType": provider.api_type,
            "baseUrl": provider.base_url,
            "apiKeyEnvVar": provider.api_key_env_var,
        }

    def report_provider_problem(self, dialog: Dialog, provider: str, model: str | None, message: str) -> None:
        """A provider rejected a request: persisted (for `dominds check`) and published (for panels)."""
        with contextlib.suppress(StoreError):  # reporting must not fail the dialog a second time
            provider_problems.record(
                self.rtws, provider_problems.ProviderProblem(provider=provider, model=model, message=message, at=now_iso())
            )
        self.pubchan.publish(None, {"type": "problems_snapshot", "problems": self.problems_payload()})

    def provider_worked(self, provider: str) -> None:
        """A generation with ``provider`` succeeded: its recorded rejection, if any, is resolved."""
        if provider in self._rejected_providers():
            with contextlib.suppress(StoreError):
                provider_problems.clear(self.rtws, provider)
            self.pubchan.publish(None, {"type": "problems_snapshot", "problems": self.problems_payload()})

    def _rejected_providers(self) -> set[str]:
        if self._provider_problems_cache is None or self._provider_problems_cache[0] != _mtime(provider_problems.path(self.rtws)):
            self._provider_problems_cache = (
                _mtime(provider_problems.path(self.rtws)),
                {p.provider for p in provider_problems.load(self.rtws)},
            )
        return self._provider_problems_cache[1]

    def _publish_problems(self) -> None:
        self.pubchan.publish(None, {"type": "problems_snapshot", "problems": self.problems_payload()})

    def problems_payload(self) -> list[dict[str, Any]]:
        runtime = [
            make_problem("llm_provider_rejected_request", f"provider {p.provider}", None, p.message)
            for p in provider_problems.load(self.rtws)
        ]
        problems = [*self.config.get().problems, *runtime, *self.config.mcp.runtime_problems()]
        return [
            {"kind": p.kind, "source": p.source, "line": p.line, "severity": p.severity, "message": p.message, "id": p.id}
            for p in problems
        ]

    def context_health(self, dialog: Dialog, finish: GenFinishRecord) -> dict[str, Any] | None:
        return self.health.snapshot(dialog, finish)

    def diligence_push(self, dialog: Dialog) -> bool:
        from dominds.driver.diligence import diligence_push

        return diligence_push(self, dialog)

    # ---------------------------------------------------------------- Q4H index

    def index_question(self, dialog: Dialog, question: HumanQuestion) -> None:
        self.q4h_index[question.id] = (dialog.root_id, dialog.self_id)

    def unindex_question(self, question_id: str) -> None:
        self.q4h_index.pop(question_id, None)

    def question_payload(self, dialog: Dialog, question: HumanQuestion) -> dict[str, Any]:
        return {
            "id": question.id,
            "selfId": dialog.self_id,
            "rootId": dialog.root_id,
            "agentId": dialog.agent_id,
            "taskDocPath": dialog.meta.task_doc_path,
            "tellaskHead": question.tellask_head,
            "bodyContent": question.body_content,
            "askedAt": question.asked_at,
            "callId": question.call_id,
            "callSiteRef": question.call_site_ref.to_disk(),
        }

    # ---------------------------------------------------------------- public API

    def create_dialog(self, agent_id: str | None, taskdoc_path: str) -> RootDialog:
        try:
            taskdoc = normalize_taskdoc_path(taskdoc_path)
        except TaskdocError as exc:
            raise EngineBadRequest(str(exc)) from exc
        team = self.config.get().team
        agent = agent_id or team.default_responder
        member = team.member(agent)
        if member is None:
            raise EngineBadRequest(f"unknown agent {agent!r}; members: {', '.join(team.members)}")
        root_id = new_dialog_id()
        meta = DialogMeta(id=root_id, root_id=root_id, agent_id=agent, task_doc_path=taskdoc, created_at=now_iso())
        push_max = member.diligence_push_max
        latest = LatestState(
            last_modified=now_iso(), disable_diligence_push=push_max < 1, diligence_push_remaining_budget=max(push_max, 0)
        )
        return self.add_root(meta, latest)

    def add_root(self, meta: DialogMeta, latest: LatestState) -> RootDialog:
        """Create a root's directory atomically, register it, and announce it."""
        files = self.store.files("run", meta.id)
        first = CourseStartRecord(ts=now_iso(), course=1)
        create_dialog_dir(files, meta, latest, first)
        root = RootDialog(files, meta, latest, self.pubchan.publish)
        root.adopt_first_course(first)
        self.roots[meta.id] = root
        self.pubchan.publish(
            None,
            {"type": "dialogs_created", "scope": {"kind": "root", "rootId": meta.id}, "status": "run", "createdRootIds": [meta.id]},
        )
        return root

    def start_workflow_run(self, workflow: str, agent_id: str, taskdoc_path: str, title: str) -> ConductorRun:
        """A new workflow root whose steps are teammate subdialogs (see conductor.py)."""
        from dominds.driver.conductor import start_run

        try:
            taskdoc = normalize_taskdoc_path(taskdoc_path)
        except TaskdocError as exc:
            raise EngineBadRequest(str(exc)) from exc
        return start_run(self, workflow, agent_id, taskdoc, title)

    def submit_user_message(
        self, dialog: Dialog, content: str, msg_id: str | None = None, *, grammar: str = "tellask"
    ) -> QueuedPrompt:
        """Accept a message: persisted in the dialog's queue before this returns (acknowledged = durable)."""
        self._check_drivable_target(dialog)
        if dialog.meta.conductor:
            raise EngineError(f"dialog {dialog.self_id} is a {dialog.meta.conductor} workflow run; its workflow drives it")
        if not content.strip():
            raise EngineBadRequest("the message is empty")
        _require_storable({"content": content, "msgId": msg_id})
        msg_id = msg_id or f"msg-{new_dialog_id()}"
        _refuse_duplicate(dialog, msg_id)
        prompt = QueuedPrompt(msg_id=msg_id, content=content, grammar=grammar, origin="user", queued_at=now_iso())  # type: ignore[arg-type]
        self._queue_durably(dialog, prompt)
        return prompt

    def _queue_durably(self, dialog: Dialog, prompt: QueuedPrompt) -> None:
        """Queue a prompt and persist it; if the disk refuses, the in-memory queue is rolled back too."""
        dialog.latest.queued_prompts.append(prompt)
        was_needed = dialog.latest.needs_drive
        try:
            self.request_drive(dialog)
        except StoreError:
            dialog.latest.queued_prompts.remove(prompt)
            dialog.latest.needs_drive = was_needed
            raise

    def answer_question(self, question_id: str, content: str, msg_id: str | None = None) -> Dialog:
        where = self.q4h_index.get(question_id)
        if where is None:
            raise EngineError(f"question {question_id!r} is not pending (already answered, cleared, or unknown)")
        dialog = self.get_dialog(*where)
        question = next((q for q in dialog.q4h if q.id == question_id), None)
        if question is None:
            self.unindex_question(question_id)
            raise EngineError(f"question {question_id!r} is not pending (already answered)")
        if not content.strip():
            raise EngineBadRequest("the answer is empty")
        _require_storable({"content": content, "msgId": msg_id})
        self._check_drivable_target(dialog)
        if msg_id is not None:
            _refuse_duplicate(dialog, msg_id)
        # Queue the answer first, then drop the question: a crash in between leaves a queued answer whose
        # question recovery removes, never a removed question without its answer.
        prompt = QueuedPrompt(
            msg_id=msg_id or f"ans-{new_dialog_id()}",
            content=content,
            origin="q4h_answer",
            question_id=question_id,
            queued_at=now_iso(),
        )
        self._queue_durably(dialog, prompt)
        self.remove_question(dialog, question_id)
        return dialog

    def remove_question(self, dialog: Dialog, question_id: str) -> None:
        previous = len(dialog.q4h)
        dialog.q4h = [q for q in dialog.q4h if q.id != question_id]
        dialog.save_q4h()
        self.unindex_question(question_id)
        dialog.publish({"type": "q4h_answered", "questionId": question_id, "selfId": dialog.self_id})
        dialog.publish(
            {"type": "questions_count_update", "previousCount": previous, "questionCount": len(dialog.q4h), "course": dialog.latest.current_course}
        )

    def q4h_state(self) -> list[dict[str, Any]]:
        out = []
        for question_id, (root_id, self_id) in sorted(self.q4h_index.items()):
            dialog = self.try_get_dialog(root_id, self_id)
            question = next((q for q in dialog.q4h if q.id == question_id), None) if dialog else None
            if dialog is not None and question is not None:
                out.append(self.question_payload(dialog, question))
        return out

    def _check_drivable_target(self, dialog: Dialog) -> None:
        if dialog.load_error:
            raise EngineError(f"dialog {dialog.self_id} cannot be used: {dialog.load_error}")
        if dialog.is_dead:
            raise EngineError(f"dialog {dialog.self_id} was declared dead")
        if dialog.root.status != "run":
            raise EngineError(f"dialog {dialog.root_id} is in {dialog.root.status}/; revive it first")

    def _request_stop(self, dialog: Dialog, reason: str) -> None:
        dialog.stop_reason = reason
        stream = self.active_streams.get(dialog.self_id)
        if stream is not None and not stream.done():
            stream.cancel()

    # run control lives in run_control.py; these delegate so callers need one object
    def stop(self, dialog: Dialog, reason: str = "user_stop") -> bool:
        from dominds.driver.run_control import stop

        return stop(self, dialog, reason)

    def emergency_stop(self) -> int:
        from dominds.driver.run_control import emergency_stop

        return emergency_stop(self)

    def resume(self, dialog: Dialog) -> None:
        from dominds.driver.run_control import resume

        resume(self, dialog)

    def resume_all(self) -> int:
        from dominds.driver.run_control import resume_all

        return resume_all(self)

    async def declare_dead(self, dialog: Dialog, note: str = "") -> None:
        from dominds.driver.run_control import declare_dead

        await declare_dead(self, dialog, note)

    async def supersede(self, sub: Dialog, previous: Any) -> None:
        from dominds.driver.run_control import supersede

        await supersede(self, sub, previous)

    def move_root(self, root_id: str, to_status: str) -> str:
        from dominds.driver.run_control import move_root

        return move_root(self, root_id, to_status)

    def usage_totals(self, root_id: str) -> dict[str, Any]:
        from dominds.driver.usage import usage_totals

        return usage_totals(self, root_id)


def _refuse_duplicate(dialog: Dialog, msg_id: str) -> None:
    """A message id is accepted once: checked against the queue and the course on disk, not a cache."""
    if any(p.msg_id == msg_id for p in dialog.latest.queued_prompts) or msg_id in dialog.recorded_msg_ids():
        raise EngineError(f"message {msg_id!r} was already accepted")


def _require_storable(fields: dict[str, str | None]) -> None:
    where = lone_surrogate_at(fields)
    if where is not None:
        raise EngineBadRequest(lone_surrogate_problem(where))


def _mark_registry_locked(dialog: Dialog, locked: bool) -> None:
    """Seed: a registered (TYPE B) subdialog's registry entry says ``locked: true`` while it is driven."""
    session = dialog.meta.tellask_session
    if dialog.is_root or not session:
        return
    key = f"{dialog.agent_id}!{session}"
    entry = dialog.root.type_b.get(key)
    if entry is None or entry.subdialog_id != dialog.self_id or entry.locked == locked:
        return
    dialog.root.type_b[key] = entry.model_copy(update={"locked": locked})
    dialog.root.save_registry()


def _mtime(path: Any) -> int:
    try:
        return int(os.stat(path).st_mtime_ns)
    except OSError:
        return -1


_GENERATOR_CLASSES = {
    "anthropic": ("dominds.llm.anthropic_provider", "AnthropicGenerator"),
    "openai-compatible": ("dominds.llm.openai_provider", "OpenAiCompatibleGenerator"),
    "openai": ("dominds.llm.openai_provider", "OpenAiCompatibleGenerator"),
}


def _load_generator(api_type: str) -> Generator:
    # Imported on first use: the SDKs are heavy and a scripted-only workspace never needs them.
    spec = _GENERATOR_CLASSES.get(api_type)
    if spec is None:
        raise LlmError(f"unknown provider apiType {api_type!r} (known: scripted, {', '.join(_GENERATOR_CLASSES)})")
    try:
        module = importlib.import_module(spec[0])
    except ImportError as exc:
        raise LlmError(f"provider type {api_type!r} is not available: {exc}") from exc
    generator: Generator = getattr(module, spec[1])()
    return generator
