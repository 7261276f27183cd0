"""Seed §3.2–§4 statistics fields and §3.3 ``broadcast_tasks``, through the websocket."""

from __future__ import annotations

from typing import Any

from ps_kit import TEAM_YAML, names, plan_json, slide_json, world

from dominds.workflows.plan_solve.members import PLANNER_ID, SOLVER_ID


async def test_each_call_says_if_it_streamed_how_long_the_answer_was_and_how_many_messages_it_sent(
    serve: Any,
) -> None:
    """Bug pinned: ``calls[]`` entries had no ``stream``, ``response_length`` or ``messages_count``."""
    served = await serve(world([1]))
    team = served.root / ".minds" / "team.yaml"
    team.write_text(TEAM_YAML + f"members:\n  {SOLVER_ID}: {{streaming: false}}\n")
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    [plan_call] = events[1]["content"]["statistics"]["calls"]
    assert plan_call["stream"] is True
    assert plan_call["response_length"] == len(plan_json([1]))
    assert plan_call["messages_count"] == 3, "the system prompt, the Taskdoc and the planning request"
    [solved] = [e for e in events if e["event"] == "solver.completed"]
    [solver_call] = solved["content"]["result"]["statistics"]["calls"]
    assert (solver_call["stream"], solver_call["response_length"]) == (False, len(slide_json(1)))
    pipeline = next(e for e in events if e["event"] == "pipeline.completed")["content"]["statistics"]
    by_agent = {c["agent"]: c for c in pipeline["calls"]}
    for agent, call in ((PLANNER_ID, plan_call), (SOLVER_ID, solver_call)):
        for field in ("stream", "response_length", "messages_count", "input_tokens", "output_tokens"):
            assert by_agent[agent][field] == call[field]


async def test_with_broadcast_tasks_off_plan_completed_keeps_only_summary_and_statistics(serve: Any) -> None:
    """Seed §3.3: ``broadcast_tasks=False`` leaves ``tasks`` out of ``plan.completed`` (it was not offered)."""
    served = await serve(world([1, 2]), broadcast_tasks=False)
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    completed = events[1]
    assert completed["event"] == "plan.completed"
    assert set(completed["content"]) == {"plan_summary", "statistics"}
    assert completed["content"]["statistics"]["total_calls"] == 1
    assert names(events)[-1] == "agent.final_answer", "the run itself is unchanged"
    # the confirmation still carries the tasks: a client cannot edit what it was never shown
    served = await serve(world([1, 2]), broadcast_tasks=False, require_plan_confirmation=True)
    sock = await served.session()
    await sock.ask()
    confirm = await sock.until("agent.user_confirm")
    assert [t["id"] for t in confirm["metadata"]["tasks"]] == [1, 2]
