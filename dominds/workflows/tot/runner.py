"""ToT runs on an engine: the run's root dialog, its Taskdoc, the backend, live state for the panel.

``start_tot_run`` returns at once with the run's ids; the run itself is an asyncio task. Its live
state (``TotLiveRun``) holds the tree the explorer is growing, so ``GET /api/tot/runs/{id}`` can
return a snapshot at any moment, and every tree event is also published on the global channel as
``tot_tree_evt`` for clients of the main ``/ws``. The same snapshot is kept on disk in the root
dialog's ``tot-run.json`` (``run_file.py``) as the run goes, so the run outlives the daemon.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dominds.background import BackgroundTasks
from dominds.driver.engine import Engine
from dominds.ids import now_iso
from dominds.store.errors import StoreError
from dominds.workflows.tot import run_file
from dominds.workflows.tot.explorer import TreeObserver
from dominds.workflows.tot.logs import new_task_id, utc_now
from dominds.workflows.tot.model import ThoughtTree
from dominds.workflows.tot.orchestrator import ResumePoint, TotOutcome, TotRequest, check_request, run_tot
from dominds.workflows.tot.roles import ORCHESTRATOR_AGENT_ID, ensure_role_members
from dominds.workflows.tot.settings import SearchOverrides, resolve_settings
from dominds.workflows.tot.symbolic import SymbolicGame24Backend, symbolic_request
from dominds.workflows.tot.teammate import DEFAULT_STEP_TIMEOUT, TeammateBackend

log = logging.getLogger("dominds.tot")
TASKDOC_DIR = "tasks/tot"
"""Where each run's Taskdoc (the problem, as goals.md) is created, relative to the workspace."""


@dataclass
class TotLiveRun:
    """One run as the panel sees it while it runs and after."""

    task_id: str
    root_id: str
    problem: str
    symbolic: bool
    status: str = "running"
    settings: dict[str, Any] | None = None
    tree: ThoughtTree | None = None
    """The explorer's live tree (read only)."""
    layers: list[dict[str, Any]] = field(default_factory=list)
    backtracks: int = 0
    outcome: TotOutcome | None = None
    failure: str | None = None
    """Why the run stopped, when it failed with an exception."""
    usage: dict[str, Any] | None = None
    log_dir: Path | None = None
    task: asyncio.Task[None] | None = None
    started_at: str = field(default_factory=now_iso)
    decomposition: dict[str, Any] | None = None
    resumed_from: str | None = None

    def snapshot(self) -> dict[str, Any]:
        outcome = self.outcome
        return {
            "runId": self.task_id,
            "rootId": self.root_id,
            "problem": self.problem,
            "symbolic": self.symbolic,
            "status": self.status,
            "settings": self.settings,
            "layers": self.layers,
            "backtracks": self.backtracks,
            "tree": self.tree.to_dict() if self.tree is not None else None,
            "solution": outcome.solution if outcome else None,
            "solved": outcome.solved if outcome else False,
            "unsolvedCode": outcome.unsolved_code if outcome else None,
            "unsolvedReason": outcome.unsolved_reason if outcome else None,
            "errors": outcome.errors if outcome else [],
            "stats": outcome.search.stats() if outcome and outcome.search else None,
            "logDir": str(self.log_dir) if self.log_dir else None,
            "failure": self.failure,
            "usage": self.usage,
            "decomposition": self.decomposition,
            "resumedFrom": self.resumed_from,
            "resumedAs": None,
        }

    def summary(self) -> dict[str, Any]:
        return {"runId": self.task_id, "rootId": self.root_id, "problem": self.problem, "status": self.status}

    def record(self) -> run_file.TotRunFile:
        return run_file.TotRunFile.model_validate({**self.snapshot(), "startedAt": self.started_at})

    def observe(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "search_started":
            self.tree, self.settings, self.decomposition = data["tree"], data["settings"], data.get("decomposition")
        elif kind == "layer_done":
            self.layers.append(data)
        elif kind == "backtrack":
            self.backtracks = int(data["total_backtracks"])


class RunFileWriter:
    """Keeps ``tot-run.json`` in step with a live run. The snapshot is taken on the event loop (the tree
    changes there) and written in a worker thread (a 5,000-node tree is a 2 MB file: tens of ms with its
    fsync), one write at a time and in order. ``request`` asks for a write: at once when ``urgent`` (the
    search starts, a layer ends), else at most every ``run_file.MIN_INTERVAL`` seconds, one write for a
    burst of changes. ``finish`` writes the end and says whether it is on disk. A write that fails (disk
    full) is logged and the next one tries again; it never stops the run."""

    def __init__(self, live: TotLiveRun, root_dir: Callable[[], Path]) -> None:
        self.live = live
        self.root_dir = root_dir
        self.last = 0.0
        self.dirty = False
        self.urgent = False
        self.flushing: asyncio.Task[bool] | None = None

    def write_first(self) -> None:
        """The first record, before the run's task starts (small: no tree yet), so a run killed at once is found."""
        self.last = time.monotonic()
        self._save(self.live.record())

    def request(self, *, urgent: bool = False) -> None:
        self.dirty = True
        self.urgent = self.urgent or urgent
        if self.flushing is None or self.flushing.done():
            self.flushing = asyncio.get_running_loop().create_task(self._flush(), name=f"tot-run-file-{self.live.task_id}")

    async def finish(self) -> bool:
        self.request(urgent=True)
        assert self.flushing is not None
        return await asyncio.shield(self.flushing)  # a second cancel must not leave a write half done

    async def _flush(self) -> bool:
        written = True
        while self.dirty:
            wait = self.last + run_file.MIN_INTERVAL - time.monotonic()
            if wait > 0 and not self.urgent:
                await asyncio.sleep(wait)
            self.dirty = self.urgent = False
            self.last = time.monotonic()
            try:
                written = await asyncio.to_thread(self._save, self.live.record())
            except Exception:  # a bug in the snapshot: logged here, as a failed write; the run goes on
                log.exception("ToT run %s: cannot record the run", self.live.task_id)
                written = False
        return written

    def _save(self, record: run_file.TotRunFile) -> bool:
        try:
            run_file.save(self.root_dir(), record)
        except (OSError, StoreError) as exc:
            log.warning("ToT run %s: cannot write %s: %s", self.live.task_id, run_file.RUN_FILE, exc)
            return False
        return True


class TotRunRegistry:
    """The runs this process drives, by run id (= the log folder's task id). A run leaves it once its
    end is written to ``tot-run.json`` (then the file answers for it); one whose end could not be
    written stays, so it is still shown."""

    def __init__(self) -> None:
        self.runs: dict[str, TotLiveRun] = {}
        self.stopping = False
        """The daemon is shutting down: the runs it cancels end ``interrupted``, not ``cancelled``."""
        self.tasks = BackgroundTasks("tot")
        """The runs' tasks: a failure is logged when it happens; ``cancel_all`` cancels and awaits them."""

    def get(self, run_id: str) -> TotLiveRun | None:
        return self.runs.get(run_id)

    async def cancel_all(self) -> None:
        """Shutdown: cancel every run and wait until each has written its end (``interrupted``)."""
        self.stopping = True
        await self.tasks.aclose()


def start_tot_run(
    engine: Engine,
    request: TotRequest,
    *,
    symbolic: bool = False,
    registry: TotRunRegistry | None = None,
    observer: TreeObserver | None = None,
    step_timeout: float | None = DEFAULT_STEP_TIMEOUT,
    resume: ResumePoint | None = None,
) -> TotLiveRun:
    """Start a run in the background; raises ``SettingsError`` for bad input before anything is created.
    With ``resume``, the run goes on from an interrupted run's tree (``resume_tot_run``)."""
    if symbolic:
        request = symbolic_request(request)
    check_request(request)
    ensure_role_members(engine)
    task_id = new_task_id(utc_now())
    taskdoc = f"{TASKDOC_DIR}/{task_id}.tsk"
    goals = engine.rtws.root / taskdoc / "goals.md"
    goals.parent.mkdir(parents=True, exist_ok=True)
    goals.write_text(f"# Tree-of-Thoughts run {task_id}\n\n{request.problem}\n", encoding="utf-8")
    run = engine.start_workflow_run("tot", ORCHESTRATOR_AGENT_ID, taskdoc, f"ToT: {request.problem[:80]}")
    live = TotLiveRun(task_id, run.root_id, request.problem, symbolic, log_dir=logs_root(engine) / task_id)
    live.resumed_from = resume.from_run if resume is not None else None
    writer = RunFileWriter(live, lambda: run.root.files.dir)
    writer.write_first()
    backend = SymbolicGame24Backend() if symbolic else TeammateBackend(run, step_timeout=step_timeout)

    def stopping() -> bool:
        return registry is not None and registry.stopping

    def observe(kind: str, data: dict[str, Any]) -> None:
        live.observe(kind, data)
        if kind != "run_done":  # the end is written once the outcome is known (drive)
            writer.request(urgent=kind in ("search_started", "layer_done"))
        if observer is not None:
            observer(kind, data)
        event = {k: v for k, v in data.items() if k != "tree"}
        engine.pubchan.publish(None, {"type": "tot_tree_evt", "runId": task_id, "rootId": run.root_id, "event": kind, "data": event})

    async def drive() -> None:
        try:
            live.outcome = await run_tot(
                request, backend, logs_root=logs_root(engine), task_id=task_id, run=run, observer=observe, stopping=stopping,
                resume=resume,
            )
            live.status = live.outcome.status
        except asyncio.CancelledError:
            live.status = "interrupted" if stopping() else "cancelled"
            raise
        except Exception as exc:  # a bug in one run must not take the daemon down; the log folder has it too
            log.exception("ToT run %s failed", task_id)
            live.status, live.failure = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            if not symbolic:
                live.usage = engine.usage_totals(run.root_id)["total"]
            if await writer.finish() and registry is not None:  # on disk for good: the registry holds runs in progress
                registry.runs.pop(task_id, None)

    # a registry owns the daemon's runs (cancelled and awaited at shutdown); the CLI awaits its one run
    live.task = registry.tasks.spawn(drive(), f"tot-{task_id}") if registry is not None else asyncio.create_task(drive(), name=f"tot-{task_id}")
    if registry is not None:
        registry.runs[task_id] = live
    return live


class NotResumable(Exception):
    """The run cannot be resumed (it is not interrupted, or was resumed already); the message says why."""


def resume_tot_run(
    engine: Engine,
    record: run_file.TotRunFile,
    shown_status: str,
    *,
    registry: TotRunRegistry | None = None,
    step_timeout: float | None = DEFAULT_STEP_TIMEOUT,
    observer: TreeObserver | None = None,
) -> TotLiveRun:
    """A new run that goes on from an interrupted one: same problem and settings, its tree (what was
    generated and scored before the cut is reused, not asked again) and its decomposition. The new run
    names the old one (``resumedFrom``) and the old record is marked ``resumedAs`` so it is resumed once.
    A run cut before its search started (no tree yet) starts its search afresh with the same problem."""
    if record.resumed_as:
        raise NotResumable(f"ToT run {record.run_id!r} was resumed already, as {record.resumed_as!r}")
    if shown_status != "interrupted":
        raise NotResumable(f"ToT run {record.run_id!r} is {shown_status}: only an interrupted run can be resumed")
    overrides = SearchOverrides()
    resume = None
    if record.settings is not None and record.tree is not None:
        tree = ThoughtTree.from_dict(record.tree)
        known = {k: record.settings[k] for k in _SETTING_KEYS if record.settings.get(k) is not None}
        settings = resolve_settings(tree.task_type, SearchOverrides(**known))
        resume = ResumePoint(record.run_id, tree, settings, record.decomposition)
        request = TotRequest(record.problem, tree.task_type, overrides)
    else:
        request = TotRequest(record.problem, None, overrides)
    live = start_tot_run(
        engine, request, symbolic=record.symbolic, registry=registry, step_timeout=step_timeout, resume=resume, observer=observer
    )
    record.resumed_as = live.task_id
    run_file.save(engine.store.root_dir(engine.store.locate_root(record.root_id), record.root_id), record)
    return live


_SETTING_KEYS = (
    "strategy", "max_depth", "branching_factor", "pruning_threshold", "num_candidates",
    "generation_strategy", "evaluation_strategy", "evaluation_samples",
)  # fmt: skip
"""The keys of ``SearchSettings.describe()`` that are ``SearchOverrides`` too."""


def logs_root(engine: Engine) -> Path:
    return engine.rtws.root / "logs"
