"""Cost statistics of seed §3.2–§4, built from the runtime's usage records (``gen_finish_record``s).

A step's statistics are its subdialog's generations. The pipeline's ``totals`` and ``calls`` cover every
generation in the run's dialog tree (replanned planners, cancelled and restarted solver attempts too), so
they equal what the main panel shows as the run's cost. Like the origin, totals are summed over the
merged ``calls`` list, and a step without any usage has no statistics (``None``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dominds.store.course_records import GenFinishRecord
from dominds.workflows.plan_solve.members import PLANNER_ID, SOLVER_ID

if TYPE_CHECKING:
    from dominds.driver.services import EngineServices

_ORIGIN_OF_AGENT = {PLANNER_ID: "plan", SOLVER_ID: "solver"}


def generation_calls(engine: EngineServices, root_id: str, dialog_id: str) -> list[dict[str, Any]]:
    """One entry per generation of the dialog that reported usage, in course order."""
    dialog = engine.get_dialog(root_id, dialog_id)
    calls: list[dict[str, Any]] = []
    for course in dialog.files.course_numbers():
        for record in dialog.files.read_course(course):
            if not isinstance(record, GenFinishRecord) or record.usage is None:
                continue
            usage = record.usage
            calls.append(
                {
                    "id": len(calls) + 1,
                    "call_type": "generation",
                    "timestamp": record.ts,
                    "model": record.model,
                    "status": record.status,
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "total_tokens": usage.input_tokens + usage.output_tokens,
                    "stream": record.streaming,
                    "response_length": record.response_chars,
                    "messages_count": record.messages_count,
                    "duration_ms": record.duration_ms,
                }
            )
    return calls


def step_statistics(engine: EngineServices, root_id: str, dialog_id: str) -> dict[str, Any] | None:
    """Seed §3.3: one agent's calls and running totals, or ``None`` when it reported no usage."""
    calls = generation_calls(engine, root_id, dialog_id)
    if not calls:
        return None
    agent = engine.get_dialog(root_id, dialog_id).agent_id
    input_tokens = sum(c["input_tokens"] for c in calls)
    output_tokens = sum(c["output_tokens"] for c in calls)
    return {
        "agent": agent,
        "dialog_id": dialog_id,
        "model": calls[-1]["model"],
        "total_calls": len(calls),
        "total_input_tokens": input_tokens,
        "total_output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "running_totals": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "max_input_tokens": None,
        },
        "calls": calls,
    }


def pipeline_statistics(
    engine: EngineServices,
    root_id: str,
    plan: dict[str, Any] | None,
    solved: list[tuple[dict[str, Any], dict[str, Any]]],
) -> dict[str, Any] | None:
    """Seed §4: ``plan``, ``solvers`` (``solved`` = (task, result) pairs), ``totals`` and the merged ``calls``."""
    calls: list[dict[str, Any]] = []
    status = engine.store.locate_root(root_id)
    for dialog_id in engine.store.subdialog_ids(status, root_id):
        agent = engine.get_dialog(root_id, dialog_id).agent_id
        origin = _ORIGIN_OF_AGENT.get(agent, "subdialog")
        for call in generation_calls(engine, root_id, dialog_id):
            calls.append({**call, "origin": origin, "agent": agent, "dialog_id": dialog_id})
    if not calls:
        return None
    calls.sort(key=lambda c: (c["timestamp"], c["dialog_id"]))
    for number, call in enumerate(calls, 1):
        call["id"] = number
    input_tokens = sum(c["input_tokens"] for c in calls)
    output_tokens = sum(c["output_tokens"] for c in calls)
    statistics: dict[str, Any] = {
        "solvers": [
            {"task": task, "agent_name": result.get("agent_name"), "statistics": result.get("statistics")}
            for task, result in solved
        ],
        "totals": {
            "total_calls": len(calls),
            "total_input_tokens": input_tokens,
            "total_output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
        "calls": calls,
    }
    if plan is not None:
        statistics = {"plan": plan, **statistics}
    return statistics
