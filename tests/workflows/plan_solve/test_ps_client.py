"""`dominds plan-solve client` against a live service: auto/interactive/no confirmation and --cancel-after."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ps_kit import plan_json, planner, task, world

from dominds.workflows.plan_solve.client import ClientOptions, load_tasks_file, run_client
from dominds.workflows.plan_solve.web import WS_PATH


def _options(served: Any, **fields: Any) -> ClientOptions:
    url = str(served.client.make_url(WS_PATH)).replace("http://", "ws://", 1)
    return ClientOptions(url=url, question=fields.pop("question", "Make slides"), **fields)


async def _run(options: ClientOptions, ask: Any = None) -> tuple[int, list[dict[str, Any]]]:
    lines: list[str] = []
    code = await run_client(options, lines.append, ask)
    return code, [json.loads(line) for line in lines]


async def test_auto_confirm_with_a_tasks_file_replaces_the_plan(serve: Any, tmp_path: Path) -> None:
    served = await serve(world([1, 2, 3]), require_plan_confirmation=True)
    tasks_file = tmp_path / "tasks.json"
    tasks_file.write_text(json.dumps([task(2, "Only two")]))
    code, events = await _run(
        _options(served, auto_confirm_plan=True, confirm_plan_tasks=load_tasks_file(tasks_file))
    )
    assert code == 0 and events[-1]["event"] == "agent.final_answer"
    assert [e["content"]["task"]["title"] for e in events if e["event"] == "solver.start"] == ["Only two"]
    assert events[0]["event"] == "system.connected" and events[1]["event"] == "agent.session_created"


async def test_interactive_confirmation_asks_and_a_no_declines(serve: Any) -> None:
    served = await serve(world([1]), require_plan_confirmation=True)
    prompts: list[tuple[str, float]] = []

    async def ask(prompt: str, timeout: float) -> str | None:
        prompts.append((prompt, timeout))
        return "n"

    code, events = await _run(_options(served, confirm_timeout=7.0), ask)
    assert prompts == [("Confirm the plan? [y]es / [n]o / path to a JSON tasks file: ", 7.0)]
    assert code == 0 and events[-1]["content"] == "Plan was declined by user."


async def test_without_interactive_confirmation_the_server_timeout_decides(serve: Any) -> None:
    served = await serve(world([1]), require_plan_confirmation=True, confirm_timeout=0.2)

    async def never(prompt: str, timeout: float) -> str | None:
        raise AssertionError("must not ask")

    code, events = await _run(_options(served, interactive_confirm=False), never)
    assert code == 0 and events[-1]["content"] == "Plan was declined: no confirmation within 0.2 s."


async def test_cancel_after_sends_user_cancel(serve: Any) -> None:
    """The cancel lands while the planner is still thinking. (It was sent 0.1 s after the session began: on
    a loaded machine that came before the server's ``plan.start``; the planner now thinks for 60 s and the
    cancel comes after 1.5 s, both far from the moment ``plan.start`` is sent.)"""
    served = await serve([planner(plan_json([1]), seconds=60.0)])
    code, events = await _run(_options(served, cancel_after=1.5, interactive_confirm=False))
    assert code == 0 and [e["event"] for e in events][-2:] == ["plan.start", "agent.interrupted"]


def test_a_tasks_file_must_hold_a_json_array(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    path.write_text('{"id": 1}')
    with pytest.raises(ValueError, match="must hold a JSON array"):
        load_tasks_file(path)
