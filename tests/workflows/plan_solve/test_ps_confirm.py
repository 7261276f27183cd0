"""Plan confirmation (seed §2.1): confirm with edited tasks, decline, timeout, coercion errors, replan and cancel_plan."""

from __future__ import annotations

import re
from typing import Any

import pytest
from ps_kit import names, plan_json, planner, task, world

PLAN_CONFIRM = {"require_plan_confirmation": True}


async def _confirm_request(served: Any) -> tuple[Any, dict[str, Any]]:
    sock = await served.session()
    await sock.ask()
    return sock, await sock.until("agent.user_confirm")


async def test_confirming_with_edited_tasks_solves_the_edited_plan(serve: Any) -> None:
    served = await serve(world([1, 2, 3]), **PLAN_CONFIRM)
    sock, confirm = await _confirm_request(served)
    assert re.fullmatch(r"confirm_plan_[0-9a-f]{8}", confirm["step_id"])
    assert confirm["content"] == "Confirm plan before solving"
    metadata = confirm["metadata"]
    assert metadata["scope"] == "plan" and metadata["requires_confirmation"] is True
    assert metadata["plan_summary"] == "A plan" and [t["id"] for t in metadata["tasks"]] == [1, 2, 3]
    assert names(sock.events)[-3:] == ["plan.start", "plan.completed", "agent.user_confirm"]

    edited = [task(2, "Edited two"), {**task(1), "insights": ["x", " ", "y"]}]
    await sock.send_in_session(
        "user.response", step_id=confirm["step_id"], content={"confirmed": True, "tasks": edited}
    )
    events = await sock.finish()
    started = [e["content"]["task"] for e in events if e["event"] == "solver.start"]
    assert sorted(t["id"] for t in started) == [1, 2]
    assert next(t for t in started if t["id"] == 2)["title"] == "Edited two"
    assert next(t for t in started if t["id"] == 1)["insights"] == ["x", "y"], (
        "coerced: blank insights dropped"
    )
    pipeline = next(e for e in events if e["event"] == "pipeline.completed")["content"]
    assert [t["id"] for t in pipeline["context"]["tasks"]] == [1, 2]
    assert events[-1]["event"] == "agent.final_answer"


async def test_declining_ends_the_run_with_a_final_answer_and_the_session_stays_usable(serve: Any) -> None:
    served = await serve(world([1]), **PLAN_CONFIRM)
    sock, confirm = await _confirm_request(served)
    await sock.send_in_session("user.response", step_id=confirm["step_id"], content={"confirmed": False})
    events = await sock.finish()
    assert names(events) == ["agent.final_answer"] and events[0]["content"] == "Plan was declined by user."
    await sock.ask()
    again = await sock.until("agent.user_confirm")
    assert again["step_id"] != confirm["step_id"]


async def test_a_confirmation_timeout_counts_as_declined(serve: Any) -> None:
    served = await serve(world([1]), require_plan_confirmation=True, confirm_timeout=0.2)
    sock, _ = await _confirm_request(served)
    events = await sock.finish()
    assert names(events) == ["agent.final_answer"]
    assert events[0]["content"] == "Plan was declined: no confirmation within 0.2 s."


@pytest.mark.parametrize(
    ("tasks", "error"),
    [
        ([{**task(1), "id": "one"}], "task 1: id must be an integer > 0 (got 'one')"),
        ([{**task(1), "id": 0}], "task 1: id must be an integer > 0 (got 0)"),
        ([task(1), {**task(2), "title": "  "}], "task 2: title and objective must not be empty"),
        ([{**task(1), "insights": "just one"}], "task 1: insights must be a list of strings (got str)"),
        ([task(1), task(1)], "task ids must be unique; repeated: 1"),
        ("not a list", "tasks must be a list of task objects, not str"),
    ],
)
async def test_invalid_edited_tasks_give_a_coercion_error(serve: Any, tasks: Any, error: str) -> None:
    served = await serve(world([1]), **PLAN_CONFIRM)
    sock, confirm = await _confirm_request(served)
    await sock.send_in_session(
        "user.response", step_id=confirm["step_id"], content={"confirmed": True, "tasks": tasks}
    )
    events = await sock.finish()
    assert names(events) == ["plan.coercion_error", "agent.final_answer"]
    assert events[0]["content"] == {
        "message": "The edited tasks cannot be used, so the run ends.",
        "error": error,
    }


async def test_replan_during_confirmation_plans_again_instead_of_declining(serve: Any) -> None:
    responses = world([1], extra=[planner(plan_json([1, 2], "Second plan"), contains="Better question")])
    served = await serve(responses, **PLAN_CONFIRM)
    sock, first = await _confirm_request(served)
    await sock.send_in_session("user.replan", content={"question": "Better question"})
    notice = await sock.until("system.notice")
    assert notice["content"] == "Replan request accepted" and notice["metadata"] == {
        "action": "replan",
        "ok": True,
    }
    restarted = await sock.until("plan.start")
    assert restarted["content"] == {"question": "Better question"}
    assert (await sock.until("plan.completed"))["content"]["plan_summary"] == "Second plan"
    second = await sock.until("agent.user_confirm")
    await sock.send_in_session("user.response", step_id=first["step_id"], content={"confirmed": True})
    stale = await sock.until("agent.error")
    assert stale["content"] == f"No pending confirmation with step_id {first['step_id']!r}"
    await sock.send_in_session("user.response", step_id=second["step_id"], content={"confirmed": True})
    events = await sock.finish()
    assert "Plan was declined" not in str(events[-1]["content"])
    assert sorted(e["content"]["task"]["id"] for e in events if e["event"] == "solver.completed") == [1, 2]


async def test_cancel_plan_during_confirmation_cancels_the_plan(serve: Any) -> None:
    served = await serve(world([1]), **PLAN_CONFIRM)
    sock, _ = await _confirm_request(served)
    await sock.send_in_session("user.cancel_plan")
    events = await sock.finish()
    assert names(events) == ["system.notice", "plan.cancelled", "agent.final_answer"]
    assert events[0]["metadata"] == {"action": "cancel_plan", "ok": True}
    assert events[1]["content"] == {"reason": "cancelled"} and events[2]["content"] == "Plan was cancelled."
