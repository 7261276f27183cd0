"""One Plan & Solve run: plan → (confirm) → solve → aggregate, on a workflow root dialog.

The run's control requests (cancel_plan, replan, cancel_task, restart_task, user.response) arrive while
``run`` is awaiting; they only set flags, cancel asyncio tasks or resolve futures, so they never block the
socket. Every run ends with what ``run`` returns (the final answer text) or raises: ``StepTimeout``
(``agent.timeout``), another exception (``agent.error``) or ``CancelledError`` (``agent.interrupted``).

A replan during plan confirmation starts planning again. The origin ended the run there with "Plan was
declined by user." because it checked the declined answer before the replan flag; that is fixed here.

Each run has its own output folder, ``<ppt root>/<YYYYmmdd-HHMMSS>-<root dialog id>/``, and its run
record (``run_record.py``), written before the planner is asked and again when the run ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dominds.ids import now_iso
from dominds.store.commit import durable
from dominds.workflows.plan_solve import members, run_record
from dominds.workflows.plan_solve.aggregation import AggregateJob, Aggregator
from dominds.workflows.plan_solve.confirm import Confirmations, plan_step_id, tool_step_id
from dominds.workflows.plan_solve.dataset import DataTable, QueryError, open_table
from dominds.workflows.plan_solve.events import Emit
from dominds.workflows.plan_solve.settings import PlanSolveSettings
from dominds.workflows.plan_solve.solving import SolvingPhase, TaskSlot
from dominds.workflows.plan_solve.statistics import pipeline_statistics, step_statistics
from dominds.workflows.plan_solve.tasks import Plan, TaskError, coerce_tasks, parse_plan
from dominds.workflows.plan_solve.tool_events import ToolEventRelay

if TYPE_CHECKING:
    from dominds.driver.conductor import ConductorRun, TeammateAnswer
    from dominds.driver.engine import Engine

Phase = Literal["starting", "planning", "confirming", "solving", "aggregating", "done"]
class StepTimeout(Exception):
    """A planner step took longer than ``step_timeout`` (reported as ``agent.timeout``)."""


class PlanSolveError(Exception):
    """The run cannot go on (reported as ``agent.error``)."""


class PlanSolveRun:
    def __init__(
        self,
        engine: Engine,
        settings: PlanSolveSettings,
        emit: Emit,
        aggregate: Aggregator,
        *,
        csv_path: Path | None,
        ppt_root: Path,
        confirm_plan: bool | None = None,
        on_start: Callable[[str], None] | None = None,
        stopping: Callable[[], bool] | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.emit = emit
        self.aggregate = aggregate
        self.csv_path = csv_path
        self.ppt_root = ppt_root
        self.confirm_plan = settings.require_plan_confirmation if confirm_plan is None else confirm_plan
        """Ask ``agent.user_confirm`` after planning (the service's setting unless the message chose)."""
        self.on_start = on_start
        """Told the run's root dialog id once its record is written."""
        self.stopping = stopping
        """Says whether the server is stopping: a cancellation then ends the run ``interrupted``."""
        self.output_dir: Path | None = None
        self.record: run_record.RunRecord | None = None
        self.table: DataTable | None = None
        self._relay: ToolEventRelay | None = None
        self._ended: run_record.RunStatus = "completed"
        self.confirmations = Confirmations(emit)
        self.phase: Phase = "starting"
        self.conductor: ConductorRun | None = None
        self.solving: SolvingPhase | None = None
        self._planning: asyncio.Task[TeammateAnswer] | None = None
        self._plan_step: str | None = None
        self._plan_control: Literal["replan", "cancel_plan"] | None = None
        self._replan_question: str | None = None

    # ------------------------------------------------------------------ control (called by the protocol)

    def cancel_plan(self) -> tuple[bool, str]:
        if self.phase in ("starting", "planning"):
            self._plan_control = "cancel_plan"
            if self._planning is not None:
                self._planning.cancel()
            return True, "Cancel plan request accepted"
        if self.phase == "confirming" and self._plan_step is not None:
            self.confirmations.withdraw(self._plan_step, "cancel_plan")
            return True, "Cancel plan request accepted"
        return False, "No planning in progress"

    def replan(self, question: str | None) -> tuple[bool, str]:
        if self.phase not in ("starting", "planning", "confirming"):
            return False, "Cannot replan after solving has started"
        self._plan_control, self._replan_question = "replan", question
        if self.phase == "confirming" and self._plan_step is not None:
            self.confirmations.withdraw(self._plan_step, "replan")
        elif self._planning is not None:
            self._planning.cancel()
        return True, "Replan request accepted"

    def cancel_task(self, task_id: int) -> tuple[bool, str]:
        if self.solving is None:
            return False, f"No running task {task_id} to cancel"
        return self.solving.cancel_task(task_id)

    def restart_task(self, task_id: int) -> tuple[bool, str]:
        if self.solving is None:
            return False, f"Task {task_id} cannot be restarted: solving has not started"
        return self.solving.restart_task(task_id)

    # ------------------------------------------------------------------ the run

    async def run(self, question: str) -> str:
        """Run to the end; returns the final answer text."""
        workspace = self.engine.rtws.root
        await asyncio.to_thread(members.ensure_taskdoc, workspace, self.settings.taskdoc_path)
        if self.csv_path is not None:
            try:
                self.table = await asyncio.to_thread(open_table, self.csv_path)
            except QueryError as exc:
                raise PlanSolveError(f"the data file cannot be used: {exc}") from exc
        brief = await asyncio.to_thread(members.data_brief, self.table)
        self.conductor = self.engine.start_workflow_run(
            "plan_solve", members.CONDUCTOR_ID, self.settings.taskdoc_path, f"Plan & Solve: {question[:80]}"
        )
        root_id = self.conductor.root_id
        self.output_dir = self.ppt_root / f"{time.strftime('%Y%m%d-%H%M%S')}-{root_id}"
        self.record = run_record.RunRecord(
            question=question,
            data=run_record.data_of(self.table, workspace),
            output_dir=run_record.shown_path(self.output_dir, workspace),
            started_at=now_iso(),
            updated_at=now_iso(),
        )
        await asyncio.to_thread(run_record.save, self.conductor.root.files.dir, self.record)
        if self.on_start is not None:
            self.on_start(root_id)
        self._relay = ToolEventRelay(self.engine.pubchan, root_id, self.emit)
        final_text: str | None = None
        try:
            planned = await self._plan_until_accepted(question, brief)
            if isinstance(planned, str):
                final_text = planned
                return planned
            plan, question, plan_statistics = planned
            final_text = await self._solve_and_aggregate(plan, question, brief, plan_statistics)
            return final_text
        except asyncio.CancelledError:
            self._ended = "interrupted" if self.stopping is not None and self.stopping() else "cancelled"
            raise
        except BaseException:
            self._ended = "failed"
            raise
        finally:
            self.phase = "done"
            self.confirmations.withdraw_all()
            try:  # the tool events published so far (a last tool result) reach the client before the run's end
                await asyncio.shield(durable())
            finally:
                self._relay.close()
            self.record.status, self.record.final_text = self._ended, final_text
            # an end state the next start can trust; shielded so a cancelled run still writes it
            await asyncio.shield(asyncio.to_thread(run_record.save, self.conductor.root.files.dir, self.record))

    async def _plan_until_accepted(
        self, question: str, brief: str
    ) -> tuple[Plan, str, dict[str, Any] | None] | str:
        """The accepted plan (with the question it answers), or the final text of a run that ends here."""
        assert self.conductor is not None
        while True:
            self.phase = "planning"
            self.emit("plan.start", {"question": question}, {"dialog_id": self.conductor.root_id})
            self.conductor.note(f"Planning: {question}")
            answer = await self._ask_planner(question, brief)
            if answer is None:
                control, self._plan_control = self._plan_control, None
                if control == "replan":
                    question = self._replan_question or question
                    continue
                return self._plan_cancelled()
            if not answer.ok:
                raise PlanSolveError(f"the planner failed: {answer.failure_reason or answer.text}")
            try:
                plan = parse_plan(answer.text)
            except TaskError as exc:
                raise PlanSolveError(str(exc)) from exc
            await self._keep_plan(plan, accepted=not self.confirm_plan)
            statistics = step_statistics(self.engine, self.conductor.root_id, answer.subdialog_id)
            tasks = [asdict(t) for t in plan.tasks]
            completed: dict[str, Any] = {"tasks": tasks, "plan_summary": plan.summary, "statistics": statistics}
            if not self.settings.broadcast_tasks:
                del completed["tasks"]
            self.emit("plan.completed", completed)
            self.conductor.note(f"Plan: {plan.summary} ({len(tasks)} tasks)")
            if not self.confirm_plan:
                return plan, question, statistics
            self.phase, self._plan_step = "confirming", plan_step_id()
            reply = await self.confirmations.ask(
                self._plan_step,
                "Confirm plan before solving",
                {
                    "scope": "plan",
                    "plan_summary": plan.summary,
                    "tasks": tasks,
                    "timeout_seconds": self.settings.confirm_timeout,
                },
                self.settings.confirm_timeout,
            )
            self._plan_step = None
            if reply.reason == "replan":  # checked before `confirmed` (the origin's bug)
                self._plan_control = None
                question = self._replan_question or question
                continue
            if reply.reason == "cancel_plan":
                return self._plan_cancelled()
            if not reply.confirmed:
                return self._declined(reply.reason == "timeout")
            if reply.content.get("tasks") is not None:
                try:
                    plan = Plan(coerce_tasks(reply.content["tasks"]), plan.summary, plan.title)
                except TaskError as exc:
                    message = "The edited tasks cannot be used, so the run ends."
                    self.emit("plan.coercion_error", {"message": message, "error": str(exc)})
                    self._ended = "declined"
                    return f"The edited plan was rejected: {exc}"
                self.conductor.note(f"Plan edited by the user ({len(plan.tasks)} tasks)")
            await self._keep_plan(plan, accepted=True)
            return plan, question, statistics

    async def _keep_plan(self, plan: Plan, *, accepted: bool) -> None:
        """Write the plan into the run record (a past run's plan is read from there)."""
        assert self.conductor is not None and self.record is not None
        self.record.plan = run_record.plan_of(plan, accepted=accepted)
        await asyncio.to_thread(run_record.save, self.conductor.root.files.dir, self.record)

    async def _ask_planner(self, question: str, brief: str) -> TeammateAnswer | None:
        """The planner's answer, or None when a replan or cancel_plan interrupted it."""
        assert self.conductor is not None
        if self._plan_control is not None:  # arrived before the step could start
            return None
        self._planning = asyncio.create_task(
            self.conductor.ask(
                members.PLANNER_ID,
                members.planner_request(question, brief),
                headline="plan",
                timeout=self.settings.step_timeout,
                on_subdialog=self._bind_planner,
            )
        )
        planning = self._planning
        try:
            await asyncio.wait({planning})
        finally:
            self._planning = None
            if not planning.done():  # the whole run was cancelled: take the planner down with it
                planning.cancel()
                await asyncio.wait({planning})
        if planning.cancelled() or self._plan_control is not None:  # a request won the race with the answer
            return None
        error = planning.exception()
        if isinstance(error, TimeoutError):
            raise StepTimeout(f"Planning timed out after {self.settings.step_timeout:g} s")
        if error is not None:
            raise error
        return planning.result()

    def _bind_planner(self, dialog_id: str) -> None:
        if self._relay is not None:
            self._relay.bind(dialog_id, {"scope": "plan"})

    def _plan_cancelled(self) -> str:
        assert self.conductor is not None
        self._ended = "cancelled"
        self.emit("plan.cancelled", {"reason": "cancelled"})
        self.conductor.note("Plan cancelled by the user.")
        return "Plan was cancelled."

    def _declined(self, timed_out: bool) -> str:
        assert self.conductor is not None
        self._ended = "declined"
        if timed_out:
            text = f"Plan was declined: no confirmation within {self.settings.confirm_timeout:g} s."
        else:
            text = "Plan was declined by user."
        self.conductor.note(text)
        return text

    async def _solve_and_aggregate(
        self, plan: Plan, question: str, brief: str, plan_statistics: dict[str, Any] | None
    ) -> str:
        assert self.conductor is not None
        self.phase = "solving"
        self.solving = SolvingPhase(
            self.conductor,
            plan.tasks,
            concurrency=self.settings.concurrency,
            step_timeout=self.settings.step_timeout,
            request_for=lambda task: members.solver_request(question, plan.summary, task, brief),
            emit=self.emit,
            table=self.table,
            bind=self._relay.bind if self._relay is not None else None,
        )
        completed = await self.solving.run()
        self.phase = "aggregating"
        tasks = [asdict(t) for t in plan.tasks]
        context = {
            "name": self.settings.agent_name,
            "question": question,
            "tasks": tasks,
            "plan_summary": plan.summary,
            "dialog_id": self.conductor.root_id,
            "output_dir": self.record.output_dir if self.record else None,
        }
        solver_results = [slot.result for slot in completed if slot.result is not None]
        failed = [slot for slot in self.solving.slots.values() if slot.state == "failed"]
        if not solver_results and failed:  # nothing to show: the run failed, it did not "answer"
            reasons = "; ".join(f"slide {slot.task.id}: {slot.error}" for slot in failed)
            raise PlanSolveError(f"every slide failed — {reasons}")
        aggregate_output: dict[str, Any] | None = None
        final_text = "No slides were produced: every task was cancelled."
        if not solver_results:
            self._ended = "cancelled"
        else:
            self.emit("aggregate.start", {"context": context, "solver_results": solver_results})
            slides = [result["output"] for result in solver_results]
            assert self.output_dir is not None
            job = AggregateJob(context, slides, self._confirm_tool, self.output_dir, self._cover(plan, question))
            aggregated = await self.aggregate(job)
            aggregate_output, final_text = aggregated.output, aggregated.final_text
            if self.record is not None:
                self.record.deck = aggregated.deck
            self.emit(
                "aggregate.completed",
                {"context": context, "solver_results": solver_results, "output": aggregate_output},
            )
        solved = [(asdict(slot.task), slot.result) for slot in completed if slot.result is not None]
        statistics = pipeline_statistics(self.engine, self.conductor.root_id, plan_statistics, solved)
        self.emit(
            "pipeline.completed",
            {
                "context": context,
                "solver_results": solver_results,
                "aggregate_output": aggregate_output,
                "statistics": statistics,
            },
        )
        final_text += _left_out_note(list(self.solving.slots.values()))
        self.conductor.note(final_text)
        return final_text

    def _cover(self, plan: Plan, question: str) -> dict[str, str]:
        title = plan.title or question
        source = f"Data: {self.table.path.name}, {self.table.row_count:,} rows" if self.table else "No data file"
        return {"title": title, "subtitle": f"{plan.summary}\n{source} · {time.strftime('%Y-%m-%d')}"}

    async def _confirm_tool(self, tool_name: str, description: str, args: dict[str, Any]) -> bool:
        if tool_name not in self.settings.confirm_tools:
            return True
        reply = await self.confirmations.ask(
            tool_step_id(tool_name),
            f"Confirm tool execution: {tool_name}",
            {"scope": "tool", "tool_name": tool_name, "tool_description": description, "tool_args": args},
            self.settings.confirm_timeout,
        )
        return reply.confirmed


def _left_out_note(slots: list[TaskSlot]) -> str:
    cancelled = [str(s.task.id) for s in slots if s.state == "cancelled"]
    failed = [str(s.task.id) for s in slots if s.state == "failed"]
    parts = []
    if cancelled:
        parts.append(f"cancelled: {', '.join(cancelled)}")
    if failed:
        parts.append(f"failed: {', '.join(failed)}")
    return f" (left out — {'; '.join(parts)})" if parts else ""

