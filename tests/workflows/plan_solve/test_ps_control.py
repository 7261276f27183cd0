"""Control while a run is live (seed §6, §8): cancel, cancel_task, restart_task, cancel_plan, replan."""

from __future__ import annotations

from typing import Any

from deadlines import WAIT_SECONDS
from pptx import Presentation
from ps_kit import deck_of, names, per_task, plan_json, planner, world

from dominds.workflows.plan_solve.members import SOLVER_ID

NEVER = 600.0
"""A step slow enough never to end by itself within a wait: a run that ends was ended by the control
sent to it. (5 s steps against 3 s waits proved the same on an idle machine and flaked on a loaded one.)"""
SLOW_PLAN = planner(plan_json([1]), contains="slow question", seconds=NEVER)


async def test_cancel_during_planning_interrupts_and_the_session_is_reusable(serve: Any) -> None:
    served = await serve(world([1], extra=[SLOW_PLAN]))
    sock = await served.session()
    await sock.ask("a slow question")
    started = await sock.until("plan.start")
    await sock.send_in_session("user.cancel")
    events = await sock.finish(timeout=WAIT_SECONDS)
    assert names(events) == ["agent.interrupted"] and events[0]["content"] == "Execution cancelled"
    root_id = started["metadata"]["dialog_id"]
    [planner_step] = served.engine.store.subdialog_ids("run", root_id)
    assert served.engine.get_dialog(root_id, planner_step).is_dead, "the planner step was stopped"
    await sock.ask("a quick question")
    again = await sock.finish()
    assert names(again)[0] == "plan.start" and again[-1]["event"] == "agent.final_answer"
    assert "agent.session_end" not in names(sock.events)


async def test_cancel_task_on_two_of_three_tasks_leaves_them_out_of_aggregation(serve: Any) -> None:
    served = await serve(world([1, 2, 3], slow_tasks={2: NEVER, 3: NEVER}))
    sock = await served.session()
    await sock.ask()
    await sock.until("solver.start", task_id=2)
    await sock.until("solver.start", task_id=3)
    for task_id in (2, 3):
        await sock.send_in_session("user.cancel_task", content={"task_id": task_id})
    events = await sock.finish(timeout=WAIT_SECONDS)
    notices = [e for e in events if e["event"] == "system.notice"]
    assert [n["content"] for n in notices] == [
        "Cancel task request for 2 accepted",
        "Cancel task request for 3 accepted",
    ]
    assert notices[0]["metadata"] == {"task_id": 2, "action": "cancel_task", "ok": True}
    all_events = sock.events
    assert per_task(all_events, 2) == ["solver.start", "solver.cancelled"] == per_task(all_events, 3)
    assert per_task(all_events, 1) == ["solver.start", "solver.completed"]
    aggregate = next(e for e in events if e["event"] == "aggregate.start")["content"]
    assert [r["output"]["id"] for r in aggregate["solver_results"]] == [1]
    assert "cancelled: 2, 3" in events[-1]["content"]
    assert len(Presentation(str(deck_of(events))).slides) == 2, "the cover and slide 1"


async def test_cancel_while_solving_stops_every_solver_without_per_task_events(serve: Any) -> None:
    served = await serve(world([1, 2], slow_tasks={1: NEVER, 2: NEVER}))
    sock = await served.session()
    await sock.ask()
    started = await sock.until("plan.start")
    await sock.until("solver.start", task_id=2)
    await sock.send_in_session("user.cancel")
    events = await sock.finish(timeout=WAIT_SECONDS)
    assert names(events)[-1] == "agent.interrupted" and "solver.cancelled" not in names(sock.events)
    root_id = started["metadata"]["dialog_id"]
    steps = [served.engine.get_dialog(root_id, s) for s in served.engine.store.subdialog_ids("run", root_id)]
    assert sorted(s.is_dead for s in steps if s.agent_id == SOLVER_ID) == [True, True]


async def test_restart_task_cancels_restarts_and_completes_that_task(serve: Any) -> None:
    served = await serve(world([1, 2], slow_tasks={2: 0.6}))
    sock = await served.session()
    await sock.ask()
    await sock.until("solver.start", task_id=2)
    await sock.send_in_session("user.restart_task", content={"task_id": 2})
    events = await sock.finish()
    assert per_task(sock.events, 2) == [
        "solver.start",
        "solver.cancelled",
        "solver.restarted",
        "solver.start",
        "solver.completed",
    ]
    order = names(sock.events)
    assert order.index("system.notice") < order.index("solver.cancelled")
    pipeline = next(e for e in events if e["event"] == "pipeline.completed")["content"]
    assert [r["output"]["id"] for r in pipeline["solver_results"]] == [1, 2]
    assert pipeline["statistics"]["totals"]["total_calls"] == 3, (
        "the cancelled attempt never finished a generation"
    )


async def test_restart_of_a_finished_task_while_others_run_solves_it_again(serve: Any) -> None:
    served = await serve(world([1, 2], slow_tasks={2: 0.8}))
    sock = await served.session()
    await sock.ask()
    await sock.until("solver.completed", task_id=1)
    await sock.send_in_session("user.restart_task", content={"task_id": 1})
    await sock.finish()
    assert per_task(sock.events, 1) == [
        "solver.start",
        "solver.completed",
        "solver.restarted",
        "solver.start",
        "solver.completed",
    ]
    await sock.send_in_session("user.restart_task", content={"task_id": 1})
    notice = await sock.until("system.notice")
    assert (
        notice["metadata"]["ok"] is False
        and notice["content"] == "No run in progress: task 1 cannot be restarted"
    )


async def test_replan_before_solving_plans_again_with_the_new_question(serve: Any) -> None:
    served = await serve(
        world([1], extra=[SLOW_PLAN, planner(plan_json([1, 2], "Plan B"), contains="question B")])
    )
    sock = await served.session()
    await sock.ask("a slow question")
    await sock.until("plan.start")
    await sock.send_in_session("user.replan", content={"question": "question B"})
    events = await sock.finish()
    assert names(events)[:3] == ["system.notice", "plan.start", "plan.completed"]
    assert (
        events[1]["content"] == {"question": "question B"}
        and events[2]["content"]["plan_summary"] == "Plan B"
    )
    assert events[-1]["event"] == "agent.final_answer"
    assert names(sock.events).count("plan.start") == 2 and "plan.cancelled" not in names(sock.events)


async def test_replan_after_solving_has_started_is_rejected_and_the_run_goes_on(serve: Any) -> None:
    served = await serve(world([1, 2], slow_tasks={2: 0.5}))
    sock = await served.session()
    await sock.ask()
    await sock.until("solver.start", task_id=2)
    await sock.send_in_session("user.replan")
    events = await sock.finish()
    error = next(e for e in events if e["event"] == "agent.error")
    assert error["content"] == "Cannot replan after solving has started"
    notice = next(e for e in events if e["event"] == "system.notice")
    assert notice["content"] == "Replan request rejected: Cannot replan after solving has started"
    assert notice["metadata"] == {"action": "replan", "ok": False}
    assert events[-1]["event"] == "agent.final_answer"


async def test_cancel_plan_during_planning_and_requests_that_do_not_apply(serve: Any) -> None:
    served = await serve(world([1], extra=[SLOW_PLAN]))
    sock = await served.session()
    await sock.send_in_session("user.cancel_plan")
    assert (await sock.until("system.notice"))["content"] == "No planning in progress"
    await sock.send_in_session("user.cancel")
    assert (await sock.until("system.notice"))["content"] == "No execution in progress to cancel"
    await sock.send_in_session("user.cancel_task", content={"task_id": 1})
    assert (await sock.until("system.notice"))["content"] == "No run in progress: task 1 cannot be cancelled"
    await sock.ask("a slow question")
    await sock.until("plan.start")
    await sock.send_in_session("user.cancel_task", content={"task_id": 1})
    assert (await sock.until("system.notice"))["content"] == "No running task 1 to cancel"
    await sock.send_in_session("user.restart_task", content={"task_id": 1})
    assert (await sock.until("system.notice"))[
        "content"
    ] == "Task 1 cannot be restarted: solving has not started"
    await sock.send_in_session("user.cancel_plan")
    events = await sock.finish(timeout=WAIT_SECONDS)
    assert names(events) == ["system.notice", "plan.cancelled", "agent.final_answer"]
    assert (
        events[0]["content"] == "Cancel plan request accepted"
        and events[2]["content"] == "Plan was cancelled."
    )
