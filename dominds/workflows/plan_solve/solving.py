"""The solve phase: one solver subdialog per task, at most ``concurrency`` at once, each cancellable.

Every task has a slot; an *attempt* is one asyncio task asking the solver. ``cancel_task`` cancels the
attempt (``solver.cancelled``, the task is left out of aggregation); ``restart_task`` cancels it if it
runs and starts a new attempt (``solver.cancelled`` → ``solver.restarted`` → ``solver.start`` →
``solver.completed``), also for a task that already ended while other tasks still run. The phase ends
when no attempt is left; after that nothing can be restarted.

``solver.start`` is sent when an attempt gets its concurrency slot, not when it is queued (the origin
sent all starts at once before the semaphore), so started-minus-completed never exceeds the limit.
A solver that fails or answers an unusable slide gives ``solver.failed`` and the other tasks go on.

A chart the solver gives as a SQL ``query`` is run here, over the run's table, and its rows become the
chart's data: the deck shows what the data says, not numbers copied by the model.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from dominds.workflows.plan_solve.dataset import DataTable, QueryError
from dominds.workflows.plan_solve.events import Emit
from dominds.workflows.plan_solve.members import SOLVER_ID
from dominds.workflows.plan_solve.statistics import step_statistics
from dominds.workflows.plan_solve.tasks import SlideTask, TaskError, chart_from_rows, parse_slide

if TYPE_CHECKING:
    from collections.abc import Callable

    from dominds.driver.conductor import ConductorRun

log = logging.getLogger("dominds.plan_solve")

SlotState = Literal["queued", "running", "completed", "cancelled", "failed"]


@dataclass
class TaskSlot:
    task: SlideTask
    state: SlotState = "queued"
    attempt: asyncio.Task[None] | None = None
    restart_requested: bool = False
    result: dict[str, Any] | None = None
    """The ``solver.completed`` result: ``{output, summary, agent_name, statistics?}``."""
    error: str | None = None

    @property
    def active(self) -> bool:
        return self.state in ("queued", "running")


class SolvingPhase:
    def __init__(
        self,
        conductor: ConductorRun,
        tasks: list[SlideTask],
        *,
        concurrency: int,
        step_timeout: float,
        request_for: Callable[[SlideTask], str],
        emit: Emit,
        table: DataTable | None = None,
        bind: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self._conductor = conductor
        self.slots = {task.id: TaskSlot(task) for task in tasks}
        self._semaphore = asyncio.Semaphore(max(1, concurrency))
        self._step_timeout = step_timeout
        self._request_for = request_for
        self._emit = emit
        self._table = table
        self._bind = bind
        """Told each solver subdialog's id and task (the tool-event relay)."""
        self._attempts: set[asyncio.Task[None]] = set()
        self._stopping = False
        """Set when the whole run is cancelled: attempts then end silently."""
        self.finished = False

    async def run(self) -> list[TaskSlot]:
        """Solve every task; returns the completed slots in task order."""
        for slot in self.slots.values():
            self._launch(slot, restarted=False)
        try:
            while self._attempts:
                done, _ = await asyncio.wait(set(self._attempts), return_when=asyncio.FIRST_COMPLETED)
                self._attempts -= done
                _retrieve(done)
        finally:
            self.finished = True  # no await since the loop ended: a restart cannot slip in between
            if self._attempts:
                self._stopping = True
                for attempt in self._attempts:
                    attempt.cancel()
                await asyncio.wait(self._attempts)
                _retrieve(self._attempts)
        return [slot for slot in self.slots.values() if slot.state == "completed"]

    def cancel_task(self, task_id: int) -> tuple[bool, str]:
        slot = self.slots.get(task_id)
        if slot is None:
            return False, f"No task {task_id} in the plan"
        if self.finished or not slot.active or slot.attempt is None:
            return False, f"No running task {task_id} to cancel"
        slot.restart_requested = False
        slot.attempt.cancel()
        return True, f"Cancel task request for {task_id} accepted"

    def restart_task(self, task_id: int) -> tuple[bool, str]:
        slot = self.slots.get(task_id)
        if slot is None:
            return False, f"No task {task_id} in the plan"
        if self.finished:
            return False, f"Task {task_id} cannot be restarted: solving has finished"
        if slot.active and slot.attempt is not None:
            slot.restart_requested = True
            slot.attempt.cancel()
        else:
            self._launch(slot, restarted=True)
        return True, f"Restart task request for {task_id} accepted"

    def _launch(self, slot: TaskSlot, *, restarted: bool) -> None:
        slot.state, slot.result, slot.error = "queued", None, None
        attempt = asyncio.create_task(self._attempt(slot, restarted), name=f"plan-solve-task-{slot.task.id}")
        slot.attempt = attempt
        self._attempts.add(attempt)

    async def _attempt(self, slot: TaskSlot, restarted: bool) -> None:
        task = asdict(slot.task)
        if restarted:  # sent from the new attempt, so it follows the handler's system.notice
            self._emit("solver.restarted", {"task": task})
        try:
            async with self._semaphore:  # held until the slide is ready: started minus ended stays ≤ the limit
                slot.state = "running"
                self._emit("solver.start", {"task": task})
                answer = await self._conductor.ask(
                    SOLVER_ID,
                    self._request_for(slot.task),
                    headline=f"slide {slot.task.id}: {slot.task.title}",
                    timeout=self._step_timeout,
                    on_subdialog=self._binder(slot.task.id),
                )
                if not answer.ok:
                    self._fail(slot, f"the solver failed: {answer.failure_reason or answer.text}")
                    return
                slide = parse_slide(answer.text, slot.task)
                slide = await asyncio.to_thread(self._run_chart_queries, slide)
                result: dict[str, Any] = {
                    "output": slide,
                    "summary": f"Slide {slot.task.id}: {slot.task.title} draft ready.",
                    "agent_name": SOLVER_ID,
                    "dialog_id": answer.subdialog_id,
                }
                statistics = step_statistics(self._conductor.engine, self._conductor.root_id, answer.subdialog_id)
                if statistics is not None:
                    result["statistics"] = statistics
                slot.state, slot.result = "completed", result
                self._emit("solver.completed", {"task": task, "result": result})
        except TimeoutError:
            self._fail(slot, f"the solver timed out after {self._step_timeout:g} s")
        except TaskError as exc:
            self._fail(slot, str(exc))
        except Exception as exc:  # unforeseen (a bug, an answer nested too deep): this slide fails, not the run
            log.exception("plan & solve: the attempt at slide %s failed", slot.task.id)
            self._fail(slot, f"{type(exc).__name__}: {exc}")
        except asyncio.CancelledError:
            if self._stopping:
                raise
            slot.state = "cancelled"
            self._emit("solver.cancelled", {"task": task})
            self._conductor.note(f"Slide {slot.task.id} cancelled.")
            if slot.restart_requested:
                slot.restart_requested = False
                self._launch(slot, restarted=True)
            # a cancelled task is an outcome of the phase, not an error of it

    def _binder(self, task_id: int) -> Callable[[str], None] | None:
        bind = self._bind
        if bind is None:
            return None
        return lambda dialog_id: bind(dialog_id, {"task_id": task_id})

    def _run_chart_queries(self, slide: dict[str, Any]) -> dict[str, Any]:
        """The slide with each query chart's data filled from the table (blocking)."""
        charts = []
        for chart in slide["charts"]:
            if "query" in chart:
                if self._table is None:
                    raise TaskError(f"slide {slide['id']}: a chart has a query but this run has no data file")
                try:
                    result = self._table.query(chart["query"])
                except QueryError as exc:
                    raise TaskError(f"slide {slide['id']}: the query of chart {chart['title']!r} failed: {exc}") from exc
                chart = chart_from_rows(chart, result.columns, result.rows, slide["id"])
            charts.append(chart)
        return {**slide, "charts": charts}

    def _fail(self, slot: TaskSlot, error: str) -> None:
        slot.state, slot.error = "failed", error
        self._emit("solver.failed", {"task": asdict(slot.task), "error": error})
        self._conductor.note(f"Slide {slot.task.id} failed: {error}")


def _retrieve(attempts: set[asyncio.Task[None]]) -> None:
    """Read how each ended attempt ended: a failure ``_attempt`` did not turn into ``solver.failed`` is
    logged here, never left for the event loop to report as "never retrieved"."""
    for attempt in attempts:
        if attempt.done() and not attempt.cancelled() and attempt.exception() is not None:
            log.error("plan & solve: %s failed", attempt.get_name(), exc_info=attempt.exception())
