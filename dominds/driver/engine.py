"""The engine: the global registry of roots, the one scheduler that owns all driving, and the API
that the server, the CLI and the workflows call.

``Engine.start()`` takes the workspace lock, reconciles ``.dialogs/run/`` after a crash (recovery.py)
and starts the scheduler. The scheduler drives every dialog whose ``needsDrive`` is set and that can
drive, one drive per dialog at a time (per-dialog FIFO mutex). State changes reach subscribers through
``pubchan`` only after they were persisted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import filelock

from dominds.dialog.loader import load_root
from dominds.dialog.model import Dialog, RootDialog
from dominds.driver import conductor, diligence, questions, recovery, run_control, titles, tracing, usage
from dominds.driver.conductor import ConductorRun
from dominds.driver.config import ConfigCache
from dominds.driver.errors import EngineBadRequest, EngineError, WorkspaceLocked
from dominds.driver.extensions import Extensions, with_builtins
from dominds.driver.health import ContextHealth
from dominds.driver.intake import (
    announce_queued,
    cancel_queued,
    queue_durably,
    refuse_duplicate,
    refuse_when_full,
    require_storable,
)
from dominds.driver.loaded_trees import LoadedTrees
from dominds.driver.providers import Providers
from dominds.driver.scheduler import Scheduler
from dominds.driver.secrets import SecretRedactor
from dominds.driver.start_progress import StartProgress, StartReport
from dominds.driver.storage_watch import recover_when_writable
from dominds.driver.waiters import ConductorWaiters
from dominds.ids import new_dialog_id, now_iso
from dominds.llm.base import Generator
from dominds.llm.catalog import ProviderConfig
from dominds.pubchan import PubChan
from dominds.rtws import STATE_FILE_MODE, Rtws
from dominds.store import commit as group_commit
from dominds.store.course_records import CourseRecord, CourseStartRecord, GenFinishRecord
from dominds.store.dialog_store import DialogStore, create_dialog_dir
from dominds.store.errors import StoreError
from dominds.store.index import DialogIndex
from dominds.store.records import DialogMeta, HumanQuestion, LatestState, QueuedPrompt, RemindersFile
from dominds.taskdoc import TaskdocError, normalize_taskdoc_path

__all__ = ["Engine", "EngineBadRequest", "EngineError", "Extensions", "WorkspaceLocked"]


class Engine(LoadedTrees):
    def __init__(
        self,
        rtws: Rtws,
        *,
        resume: bool = True,
        take_lock: bool = True,
        extensions: Extensions | None = None,
        on_start_progress: StartReport | None = None,
    ) -> None:
        """``extensions``: toolsets and members added to the built-in toolsets (``dominds serve``
        passes every workflow's; see driver/extensions.py). ``on_start_progress``: told now and then how
        far a long start has gone (driver/start_progress.py)."""
        self.rtws = rtws
        self._on_start_progress = on_start_progress
        self.store = DialogStore(rtws)
        self.index = DialogIndex(rtws)
        """What listings need about every dialog, a cache of the files (store/index.py)."""
        self.config = ConfigCache(rtws, with_builtins(extensions))
        self.pubchan = PubChan()
        self.providers = Providers(self)
        self.config.mcp.on_change = self.providers.publish_problems
        self.resume_on_start = resume
        self.roots: dict[str, RootDialog] = {}
        """Global registry: rootId → loaded root of ``run/``."""
        self.sub_roots: dict[str, str] = {}
        """selfId of a known subdialog → its rootId."""
        self.fetched_at: dict[str, float] = {}
        """rootId → when the loaded tree was last handed out (driver/loaded_trees.py)."""
        self.reading: dict[str, asyncio.Future[RootDialog]] = {}
        self.read_again: set[str] = set()
        """Reads of trees under way in worker threads (driver/loaded_trees.py)."""
        self.q4h_index: dict[str, tuple[str, str]] = {}
        self.waiting_answers: dict[str, asyncio.Future[str | None]] = {}
        """questionId → (rootId, selfId) of every pending question in ``run/``."""
        self.health = ContextHealth(self)
        self.conductors = ConductorWaiters()
        """Workflow code waiting for teammate answers (see conductor.py)."""
        self.scheduler = Scheduler(self)
        self.transcript_cache_size = 64
        """How many dialogs keep their current course in memory after a drive (LRU)."""
        self.usage_book = usage.UsageBook()
        """Token counts per course file (see usage.py: the one owner of cost)."""
        self.secrets = SecretRedactor()
        """Secrets redacted from tool output (provider keys from the catalog, plus registered ones)."""
        self.transcript_cache_chars = 32 * 1024 * 1024
        """Text kept in cached transcripts at most (huge messages must not pin hundreds of MiB)."""
        self.storage_retry_interval = 5.0
        """Seconds between retries of a dialog paused by a refused write (a full disk)."""
        self.max_queued_per_dialog = 10_000
        """User messages waiting unread in one dialog at most (more are refused: ``QueueFull``)."""
        self.max_concurrent_drives = 64
        """Drives in flight at once; bounds memory and keeps latency fair under bursts."""
        self._lock = filelock.FileLock(str(rtws.lock_path), mode=STATE_FILE_MODE) if take_lock else None
        self._group_commit: group_commit.GroupCommit | None = None
        self.closed = False
        self.tracing: tracing.Tracing | None = None
        self.trees_at_start = 0
        """Trees of ``run/`` recovery went through when the engine started."""

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        if self.scheduler.task is not None:
            return  # already started: recovery must run once per daemon
        self.rtws.ensure_layout()
        if self._lock is not None:
            try:
                self._lock.acquire(timeout=0)
            except filelock.Timeout as exc:
                raise WorkspaceLocked(
                    f"the workspace {self.rtws.root} is locked by another Dominds process ({self.rtws.lock_path})"
                ) from exc
        self._group_commit = group_commit.enable()  # fsyncs shared by the writes of a group (store/commit.py)
        self.tracing = tracing.install(self)  # OpenTelemetry spans, when the environment asks (tracing.py)
        refused: list[tuple[str, str]] = []  # trees whose recovery a full disk refused
        progress = StartProgress(self.rtws.run_dir, self._on_start_progress)
        self.trees_at_start = recovery.recover(self, progress, lambda root_id, problem: refused.append((root_id, problem)))
        self.scheduler.start()
        for root_id, problem in refused:
            self.scheduler.background.spawn(recover_when_writable(self, root_id, problem), name=f"storage-recovery-{root_id}")

    async def close(self, timeout: float = 5.0) -> None:
        """Stop driving: streams are cancelled, each dialog is left interrupted and can be resumed."""
        if self.closed:
            return
        self.closed = True
        await self.scheduler.stop(timeout)
        if self.tracing is not None:
            await asyncio.to_thread(self.tracing.close)  # off the loop: a local collector may be served by it
            self.tracing = None
        await self.providers.close()
        await self.config.mcp.close()
        if self._group_commit is not None:
            self._group_commit = None
            await group_commit.disable()  # everything durable before the lock is released
        self.index.close()
        if self._lock is not None and self._lock.is_locked:
            self._lock.release()

    # ---------------------------------------------------------------- scheduling (scheduler.py)

    def request_drive(self, dialog: Dialog) -> None:
        """Persist ``needsDrive`` and wake the scheduler."""
        if not dialog.latest.needs_drive:
            dialog.latest.needs_drive = True
        dialog.save_latest()
        self.scheduler.want(dialog)

    def want(self, dialog: Dialog) -> None:
        """Wake the scheduler for a dialog whose ``needsDrive`` is already persisted."""
        self.scheduler.want(dialog)

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

    async def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until nothing is driving, nothing drivable is waiting, and every write is durable and
        its events delivered (tests, CLI `run`, benches)."""
        await self.scheduler.wait_idle(timeout)
        await asyncio.wait_for(self.durable(), timeout)

    async def durable(self) -> None:
        """Return once every write made so far is durable: what an acknowledgement waits for."""
        await group_commit.durable()

    # ---------------------------------------------------------------- providers and health (providers.py)

    async def generator_for(self, api_type: str) -> Generator:
        return await self.providers.generator_for(api_type)

    @staticmethod
    def provider_config_dict(provider: ProviderConfig) -> dict[str, Any]:
        return Providers.config_dict(provider)

    def report_provider_problem(self, dialog: Dialog, provider: str, model: str | None, message: str) -> None:
        self.providers.report_problem(dialog, provider, model, message)

    def provider_worked(self, provider: str) -> None:
        self.providers.worked(provider)

    def problems_payload(self) -> list[dict[str, Any]]:
        return self.providers.problems_payload()

    def context_health(self, dialog: Dialog, finish: GenFinishRecord) -> dict[str, Any] | None:
        return self.health.snapshot(dialog, finish)

    def diligence_push(self, dialog: Dialog) -> bool:
        return diligence.diligence_push(self, dialog)

    # ---------------------------------------------------------------- questions (questions.py)

    def index_question(self, dialog: Dialog, question: HumanQuestion) -> None:
        self.q4h_index[question.id] = (dialog.root_id, dialog.self_id)

    def question_payload(self, dialog: Dialog, question: HumanQuestion) -> dict[str, Any]:
        return questions.payload(dialog, question)

    def answer_question(self, question_id: str, content: str, msg_id: str | None = None) -> Dialog:
        return questions.answer(self, question_id, content, msg_id)

    async def ask_human_and_wait(self, dialog: Dialog, head: str, body: str, call_id: str, timeout_s: float) -> str | None:
        """A question for the human whose answer returns here (MCP elicitation); ``None``: declined or timed out."""
        return await questions.ask_and_wait(self, dialog, head, body, call_id, timeout_s)

    async def sample_for_mcp(
        self, dialog: Dialog, server_id: str, call_id: str, system_prompt: str, messages: list[dict[str, str]], max_tokens: int
    ) -> Any:
        """An MCP server's sampling request, answered by ``dialog``'s member's model (mcp_sampling.py)."""
        from dominds.driver import mcp_sampling

        return await mcp_sampling.sample(self, dialog, server_id, call_id, system_prompt, messages, max_tokens)

    def q4h_state(self) -> list[dict[str, Any]]:
        return questions.pending(self)

    # ---------------------------------------------------------------- public API

    def create_dialog(self, agent_id: str | None, taskdoc_path: str) -> RootDialog:
        try:
            taskdoc = normalize_taskdoc_path(taskdoc_path)
        except TaskdocError as exc:
            raise EngineBadRequest(str(exc)) from exc
        config = self.config.get()
        team = config.team
        if agent_id is None and config.team_unusable:
            # never route silently to whoever a broken team.yaml left over (a hidden member, typically)
            raise EngineBadRequest(
                "team.yaml has errors and no earlier good version, so there is no default agent; fix it "
                "(see the problems) or name the agent"
            )
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

    def add_root(
        self,
        meta: DialogMeta,
        latest: LatestState,
        *,
        first: CourseRecord | None = None,
        history: dict[int, list[CourseRecord]] | None = None,
        reminders: RemindersFile | None = None,
    ) -> RootDialog:
        """Create a root's directory atomically, register it, and announce it. ``first``, ``history`` and
        ``reminders``: a root that starts with recorded courses (a fork, driver/fork.py), read back once made."""
        return self._keep_new_root(self._made_root(meta, latest, first, history, reminders))

    async def add_root_off_loop(
        self,
        meta: DialogMeta,
        latest: LatestState,
        *,
        first: CourseRecord,
        history: dict[int, list[CourseRecord]],
        reminders: RemindersFile | None = None,
        then: Callable[[RootDialog], None] | None = None,
    ) -> RootDialog:
        """``add_root`` of a root with history, its files written and read back in a worker thread (a fork
        of a long dialog writes and reads its whole history); ``then(root)`` runs there too, once the
        directory is made and before the root is registered."""

        def made() -> RootDialog:
            root = self._made_root(meta, latest, first, history, reminders)
            if then is not None:
                then(root)
            return root

        return self._keep_new_root(await asyncio.to_thread(made))

    def _made_root(
        self,
        meta: DialogMeta,
        latest: LatestState,
        first: CourseRecord | None,
        history: dict[int, list[CourseRecord]] | None,
        reminders: RemindersFile | None,
    ) -> RootDialog:
        """A new root's directory made (in one rename) and its root object; touches nothing of the engine's."""
        files = self.store.files("run", meta.id)
        if history is None:
            first = CourseStartRecord(ts=now_iso(), course=1)
            create_dialog_dir(files, meta, latest, first)
            root = RootDialog(files, meta, latest, self.pubchan.publish)
            root.adopt_first_course(first)
            return root
        assert first is not None, "a root with history names its current course's first record"
        create_dialog_dir(files, meta, latest, first, history=history, reminders=reminders)
        return load_root(files, self.pubchan.publish, "run")

    def _keep_new_root(self, root: RootDialog) -> RootDialog:
        meta = root.meta
        self._keep_root(root)
        self.pubchan.publish(
            None,
            {"type": "dialogs_created", "scope": {"kind": "root", "rootId": meta.id}, "status": "run", "createdRootIds": [meta.id]},
        )
        return root

    def start_workflow_run(self, workflow: str, agent_id: str, taskdoc_path: str, title: str) -> ConductorRun:
        """A new workflow root whose steps are teammate subdialogs (see conductor.py)."""
        try:
            taskdoc = normalize_taskdoc_path(taskdoc_path)
        except TaskdocError as exc:
            raise EngineBadRequest(str(exc)) from exc
        return conductor.start_run(self, workflow, agent_id, taskdoc, title)

    def submit_user_message(
        self, dialog: Dialog, content: str, msg_id: str | None = None, *, grammar: str = "tellask"
    ) -> QueuedPrompt:
        """Accept a message: persisted in the dialog's queue before this returns (acknowledged = durable)."""
        self.check_drivable_target(dialog)
        if dialog.meta.conductor:
            raise EngineError(f"dialog {dialog.self_id} is a {dialog.meta.conductor} workflow run; its workflow drives it")
        if not content.strip():
            raise EngineBadRequest("the message is empty")
        require_storable({"content": content, "msgId": msg_id})
        msg_id = msg_id or f"msg-{new_dialog_id()}"
        refuse_duplicate(dialog, msg_id)
        refuse_when_full(dialog, self.max_queued_per_dialog)
        prompt = QueuedPrompt(msg_id=msg_id, content=content, grammar=grammar, origin="user", queued_at=now_iso())  # type: ignore[arg-type]
        titled = titles.title_first_message(dialog, content)  # saved with needsDrive, before the queue's append
        try:
            queue_durably(self, dialog, prompt, latest_changed=titled)
        except StoreError:
            if titled:
                dialog.latest.title = None
            raise
        announce_queued(dialog, prompt)
        if titled:
            titles.announce(self.pubchan, dialog)
        return prompt

    def rename_dialog(self, dialog: Dialog, title: str) -> str | None:
        """Set a dialog's title (an empty one clears it); persisted, then announced."""
        if dialog.load_error:
            raise EngineError(f"dialog {dialog.self_id} cannot be used: {dialog.load_error}")
        return titles.rename(self.pubchan, dialog, title)

    def cancel_queued_message(self, dialog: Dialog, msg_id: str) -> QueuedPrompt:
        """Take back a queued user message that no generation has consumed yet."""
        return cancel_queued(dialog, msg_id)

    def check_drivable_target(self, dialog: Dialog) -> None:
        if dialog.load_error:
            raise EngineError(f"dialog {dialog.self_id} cannot be used: {dialog.load_error}")
        if dialog.is_dead:
            raise EngineError(f"dialog {dialog.self_id} was declared dead")
        if dialog.root.status != "run":
            raise EngineError(f"dialog {dialog.root_id} is in {dialog.root.status}/; revive it first")

    def request_stop(self, dialog: Dialog, reason: str) -> None:
        """Cancel the dialog's drive scope: its stream, tools and dispatches (driver/drive_scope.py)."""
        dialog.stop_reason = dialog.stop_reason or reason
        self.scheduler.scopes.cancel(dialog.self_id, reason)

    # run control lives in run_control.py; these delegate so callers need one object
    def stop(self, dialog: Dialog, reason: str = "user_stop") -> bool:
        return run_control.stop(self, dialog, reason)

    def emergency_stop(self) -> int:
        return run_control.emergency_stop(self)

    def resume(self, dialog: Dialog) -> bool:
        """True when a drive was requested; False when the dialog is already proceeding."""
        return run_control.resume(self, dialog)

    def resume_all(self) -> int:
        return run_control.resume_all(self)

    async def declare_dead(self, dialog: Dialog, note: str = "") -> None:
        await run_control.declare_dead(self, dialog, note)

    async def supersede(self, sub: Dialog, previous: Any) -> None:
        await run_control.supersede(self, sub, previous)

    def move_root(self, root_id: str, to_status: str) -> str:
        return run_control.move_root(self, root_id, to_status)

    async def move_root_off_loop(self, root_id: str, to_status: str) -> str:
        """``move_root``, with the tree read in worker threads: before it leaves ``run/`` (moving settles
        every dialog of it) and once it is back (a revived 10,000-turn tree held the event loop 0.3 s).
        The move is announced once the revived tree is in memory, its questions listed again."""
        if self.store.locate_root(root_id) == "run" and to_status != "run":
            await self.read_tree_off_loop(root_id)
        from_status = run_control.move_root_files(self, root_id, to_status)
        if from_status != to_status:
            if to_status == "run":
                await self.read_tree_off_loop(root_id)
                if self.store.locate_root(root_id) == "run":  # not moved away again meanwhile
                    run_control.revive(self, self.load_root(root_id))  # in memory now: no reading on the loop
            run_control.announce_move(self, root_id, from_status, to_status)
        return from_status

    def usage_totals(self, root_id: str) -> dict[str, Any]:
        return usage.usage_totals(self.store, self.config.get().catalog, self.usage_book, root_id)

    async def usage_totals_off_loop(self, root_id: str) -> dict[str, Any]:
        """``usage_totals`` with the course files read in a worker thread: the first count of a long tree
        reads every course (100-280 ms of a 10,000-turn dialog's, which held the event loop)."""
        catalog = self.config.get().catalog  # on the loop: the configuration is reloaded there
        return await asyncio.to_thread(usage.usage_totals, self.store, catalog, self.usage_book, root_id)
