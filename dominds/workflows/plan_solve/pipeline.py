"""One Plan & Solve run: plan → (confirm) → solve → aggregate, on a workflow root dialog.

The run's control requests (cancel_plan, replan, cancel_task, restart_task, user.response) arrive while
``run`` is awaiting; they only set flags, cancel asyncio tasks or resolve futures, so they never block the
socket. Every run ends with what ``run`` returns (the final answer text) or raises: ``StepTimeout``
(``agent.timeout``), another exception (``agent.error``) or ``CancelledError`` (``agent.interrupted``).

A replan during plan confirmation starts planning again. The origin ended the run there with "Plan was
declined by user." because it checked the declined answer before the replan flag; that is fixed here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dominds.workflows.plan_solve import members
from dominds.workflows.plan_solve.confirm import Confirmations, plan_step_id, tool_step_id
from dominds.workflows.plan_solve.events import Emit
from dominds.workflows.plan_solve.settings import PlanSolveSettings
from dominds.workflows.plan_solve.solving import SolvingPhase, TaskSlot
from dominds.workflows.plan_solve.statistics import pipeline_statistics, step_statistics
from dominds.workflows.plan_solve.tasks import Plan, TaskError, coerce_tasks, parse_plan

if TYPE_CHECKING:
    from dominds.driver.conductor import ConductorRun, TeammateAnswer
    from dominds.driver.engine import Engine

Phase = Literal["starting", "planning", "confirming", "solving", "aggregating", "done"]
ToolConfirm = Callable[[str, str, dict[str, Any]], Awaitable[bool]]
"""``confirm(tool_name, description, args)``: True when the tool may run."""


@dataclass(frozen=True)
class AggregateResult:
    output: dict[str, Any]
    """``aggregate.completed.output`` (for slides: ``{slides, ppt_result, ...}``)."""
    final_text: str


Aggregator = Callable[[dict[str, Any], list[dict[str, Any]], ToolConfirm], Awaitable[AggregateResult]]
"""``aggregate(context, slides, confirm)``."""


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
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.emit = emit
        self.aggregate = aggregate
        self.csv_path = csv_path
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
        await asyncio.to_thread(members.ensure_taskdoc, self.engine.rtws.root, self.settings.taskdoc_path)
        brief = await asyncio.to_thread(members.data_brief, self.csv_path)
        self.conductor = self.engine.start_workflow_run(
            "plan_solve", members.CONDUCTOR_ID, self.settings.taskdoc_path, f"Plan & Solve: {question[:80]}"
        )
        try:
            planned = await self._plan_until_accepted(question, brief)
            if isinstance(planned, str):
                return planned
            plan, question, plan_statistics = planned
            return await self._solve_and_aggregate(plan, question, brief, plan_statistics)
        finally:
            self.phase = "done"
            self.confirmations.withdraw_all()

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
            statistics = step_statistics(self.engine, self.conductor.root_id, answer.subdialog_id)
            tasks = [asdict(t) for t in plan.tasks]
            completed: dict[str, Any] = {"tasks": tasks, "plan_summary": plan.summary, "statistics": statistics}
            if not self.settings.broadcast_tasks:
                del completed["tasks"]
            self.emit("plan.completed", completed)
            self.conductor.note(f"Plan: {plan.summary} ({len(tasks)} tasks)")
            if not self.settings.require_plan_confirmation:
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
                    plan = Plan(coerce_tasks(reply.content["tasks"]), plan.summary)
                except TaskError as exc:
                    message = "The edited tasks cannot be used, so the run ends."
                    self.emit("plan.coercion_error", {"message": message, "error": str(exc)})
                    return f"The edited plan was rejected: {exc}"
                self.conductor.note(f"Plan edited by the user ({len(plan.tasks)} tasks)")
            return plan, question, statistics

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

    def _plan_cancelled(self) -> str:
        assert self.conductor is not None
        self.emit("plan.cancelled", {"reason": "cancelled"})
        self.conductor.note("Plan cancelled by the user.")
        return "Plan was cancelled."

    def _declined(self, timed_out: bool) -> str:
        assert self.conductor is not None
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
        }
        solver_results = [slot.result for slot in completed if slot.result is not None]
        failed = [slot for slot in self.solving.slots.values() if slot.state == "failed"]
        if not solver_results and failed:  # nothing to show: the run failed, it did not "answer"
            reasons = "; ".join(f"slide {slot.task.id}: {slot.error}" for slot in failed)
            raise PlanSolveError(f"every slide failed — {reasons}")
        aggregate_output: dict[str, Any] | None = None
        final_text = "No slides were produced: every task was cancelled."
        if solver_results:
            self.emit("aggregate.start", {"context": context, "solver_results": solver_results})
            slides = [result["output"] for result in solver_results]
            aggregated = await self.aggregate(context, slides, self._confirm_tool)
            aggregate_output, final_text = aggregated.output, aggregated.final_text
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
