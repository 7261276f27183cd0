"""Whole runs over a real websocket: event order, dialogs, statistics, concurrency, failures, heartbeat."""

from __future__ import annotations

from typing import Any

from deadlines import until
from pptx import Presentation
from ps_kit import (
    PLAN_USAGE,
    SLIDE_USAGE,
    deck_of,
    names,
    per_task,
    plan_json,
    planner,
    solver,
    task_id_of,
    world,
)

from dominds.store.course_records import GenFinishRecord
from dominds.workflows.plan_solve.members import CONDUCTOR_ID, PLANNER_ID, SOLVER_ID
from dominds.workflows.plan_solve.web import PLAN_SOLVE

SOLVE_ORDER = ["solver.start", "solver.completed"]


async def test_a_plain_run_plans_solves_aggregates_and_answers(serve: Any) -> None:
    served = await serve(world([1, 2, 3]))
    sock = await served.session()
    await sock.ask("Make three slides")
    events = await sock.finish()
    solver_events = [n for n in names(events) if n.startswith("solver.")]
    other = [n for n in names(events) if not n.startswith("solver.")]
    assert other == [
        "plan.start",
        "plan.completed",
        "aggregate.start",
        "aggregate.completed",
        "pipeline.completed",
        "agent.final_answer",
    ]
    assert len(solver_events) == 6 and all(per_task(events, i) == SOLVE_ORDER for i in (1, 2, 3))
    assert (
        names(events).index("plan.completed")
        < names(events).index("solver.start")
        < names(events).index("aggregate.start")
    )
    assert all(e["session_id"] == sock.session_id and e["timestamp"] for e in events)

    plan = events[1]["content"]
    assert [t["id"] for t in plan["tasks"]] == [1, 2, 3] and plan["plan_summary"] == "A plan"
    completed = [e for e in events if e["event"] == "solver.completed"]
    result = completed[0]["content"]["result"]
    assert (
        result["output"]["id"] == task_id_of(completed[0]) and result["output"]["charts"][0]["type"] == "bar"
    )
    assert result["agent_name"] == SOLVER_ID and result["summary"].endswith("draft ready.")
    aggregate = events[names(events).index("aggregate.completed")]["content"]
    assert [s["id"] for s in aggregate["output"]["slides"]] == [1, 2, 3]
    assert aggregate["output"]["ppt_result"]["system"] == "PPT generation completed with 3 slides"
    assert "3 slides" in events[-1]["content"]

    # the run is a root dialog of the conductor whose planner and solvers are subdialogs
    root_id = events[0]["metadata"]["dialog_id"]
    root = served.engine.get_dialog(root_id)
    assert root.agent_id == CONDUCTOR_ID and root.meta.conductor == "plan_solve"
    sub_agents = sorted(
        served.engine.get_dialog(root_id, s).agent_id
        for s in served.engine.store.subdialog_ids("run", root_id)
    )
    assert sub_agents == [PLANNER_ID, SOLVER_ID, SOLVER_ID, SOLVER_ID]
    assert not any(isinstance(r, GenFinishRecord) for r in root.records), (
        "the conductor root never calls an LLM"
    )
    assert len(Presentation(str(deck_of(events))).slides) == 4, "the cover and the three slides"


async def test_statistics_totals_are_the_sums_of_the_scripted_usage(serve: Any) -> None:
    served = await serve(world([1, 2]))
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    plan_stats = events[1]["content"]["statistics"]
    assert (plan_stats["agent"], plan_stats["total_calls"], plan_stats["total_input_tokens"]) == (
        PLANNER_ID,
        1,
        PLAN_USAGE["input_tokens"],
    )
    assert plan_stats["total_tokens"] == PLAN_USAGE["input_tokens"] + PLAN_USAGE["output_tokens"]
    statistics = next(e for e in events if e["event"] == "pipeline.completed")["content"]["statistics"]
    expected_in = PLAN_USAGE["input_tokens"] + 2 * SLIDE_USAGE["input_tokens"]
    expected_out = PLAN_USAGE["output_tokens"] + 2 * SLIDE_USAGE["output_tokens"]
    assert statistics["totals"] == {
        "total_calls": 3,
        "total_input_tokens": expected_in,
        "total_output_tokens": expected_out,
        "total_tokens": expected_in + expected_out,
    }
    assert statistics["plan"] == plan_stats
    assert [s["task"]["id"] for s in statistics["solvers"]] == [1, 2]
    assert all(
        s["statistics"]["total_input_tokens"] == SLIDE_USAGE["input_tokens"] for s in statistics["solvers"]
    )
    assert sorted((c["origin"], c["agent"]) for c in statistics["calls"]) == [
        ("plan", PLANNER_ID),
        ("solver", SOLVER_ID),
        ("solver", SOLVER_ID),
    ]
    assert [c["id"] for c in statistics["calls"]] == [1, 2, 3]
    # the same figures the main panel shows for the run's dialog tree
    usage = served.engine.usage_totals(events[0]["metadata"]["dialog_id"])["total"]
    assert (usage["inputTokens"], usage["outputTokens"]) == (expected_in, expected_out)


async def test_the_concurrency_limit_is_respected_and_solvers_interleave(serve: Any) -> None:
    served = await serve(world([1, 2, 3, 4], slow_tasks={1: 0.3, 2: 0.15, 3: 0.15, 4: 0.15}), concurrency=2)
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    running, most = set(), 0
    for event in events:
        if event["event"] == "solver.start":
            running.add(task_id_of(event))
        elif event["event"] == "solver.completed":
            running.discard(task_id_of(event))
        most = max(most, len(running))
    assert most == 2, "two solvers ran at once, never more"
    order = [(e["event"], task_id_of(e)) for e in events if e["event"].startswith("solver.")]
    assert order[:2] == [("solver.start", 1), ("solver.start", 2)]
    assert order.index(("solver.completed", 2)) < order.index(("solver.start", 3))
    assert order.index(("solver.completed", 1)) > order.index(("solver.start", 3)), (
        "task 1 is still solving while 3 starts"
    )


async def test_an_unusable_slide_fails_that_task_only(serve: Any) -> None:
    served = await serve(world([1, 2], extra=[solver(2, response="I cannot do charts, sorry.")]))
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    assert per_task(events, 2) == ["solver.start", "solver.failed"] and per_task(events, 1) == SOLVE_ORDER
    failed = next(e for e in events if e["event"] == "solver.failed")
    assert "not a JSON slide" in failed["content"]["error"]
    pipeline = next(e for e in events if e["event"] == "pipeline.completed")["content"]
    assert [r["output"]["id"] for r in pipeline["solver_results"]] == [1]
    assert events[-1]["event"] == "agent.final_answer" and "failed: 2" in events[-1]["content"]


async def test_an_unparseable_plan_is_an_agent_error(serve: Any) -> None:
    served = await serve([planner("Sure! I will make slides.")])
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    assert names(events) == ["plan.start", "agent.error"]
    assert events[-1]["content"].startswith("Execution error: the planner's answer is not a JSON plan")


async def test_tool_confirmation_uses_user_confirm_and_a_denial_skips_the_files(serve: Any) -> None:
    served = await serve(world([1]), confirm_tools=frozenset({"generate_ppt"}))
    sock = await served.session()
    await sock.ask()
    confirm = await sock.until("agent.user_confirm")
    assert confirm["step_id"].startswith("confirm_") and confirm["step_id"].endswith("_generate_ppt")
    assert confirm["metadata"]["scope"] == "tool" and confirm["metadata"]["tool_name"] == "generate_ppt"
    assert (
        confirm["metadata"]["requires_confirmation"] is True
        and confirm["metadata"]["tool_args"]["slide_count"] == 1
    )
    await sock.send_in_session("user.response", step_id=confirm["step_id"], content={"confirmed": False})
    events = await sock.finish()
    output = next(e for e in events if e["event"] == "aggregate.completed")["content"]["output"]
    assert output["ppt_result"]["system"] == "PPT generation skipped" and len(output["slides"]) == 1
    assert not list((served.root.parent / "out").rglob("*.pptx"))


async def test_heartbeat_counts_active_sessions_and_closing_ends_the_session(serve: Any) -> None:
    served = await serve(world([1]), heartbeat_seconds=0.05)
    sock = await served.session()
    heartbeat = None
    while heartbeat is None:
        event = await sock.ws.receive_json(timeout=5)
        heartbeat = event if event["event"] == "system.heartbeat" else None
    assert heartbeat["metadata"]["active_sessions"] == 1 and heartbeat["metadata"]["uptime"] >= 0
    await sock.send_in_session("user.close_session")
    assert (await sock.until("agent.session_end"))["content"] == "Session closed"
    await sock.ask()
    assert (await sock.until("agent.error"))["content"] == "Session is closed"


async def test_a_disconnect_closes_the_sessions_and_stops_their_runs(serve: Any) -> None:
    served = await serve([planner(plan_json([1]), seconds=600.0)])  # ends only if the disconnect ends it
    sock = await served.session()
    await sock.ask()
    started = await sock.until("plan.start")
    await sock.ws.close()
    service = served.client.app[PLAN_SOLVE]
    await until(lambda: not service.sessions, "the disconnect closed the session")
    assert not service.sessions and service.active_sessions() == 0
    root_id = started["metadata"]["dialog_id"]
    [planner_id] = served.engine.store.subdialog_ids("run", root_id)
    assert served.engine.get_dialog(root_id, planner_id).is_dead, (
        "the planner step was stopped with its session"
    )
