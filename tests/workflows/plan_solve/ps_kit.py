"""Scripted worlds for Plan & Solve tests and a websocket client that collects the seed's events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from aiohttp import ClientWebSocketResponse, WSMsgType

from dominds.rtws import Rtws
from dominds.workflows.plan_solve.events import ends_run
from dominds.workflows.plan_solve.members import PLANNER_ID, SOLVER_ID

TEAM_YAML = """\
member_defaults: {provider: scripted, model: test, diligence_push_max: 0}
"""
LLM_YAML = """\
providers:
  scripted:
    name: Scripted
    apiType: scripted
    baseUrl: .minds/scripted
    apiKeyEnvVar: null
    models:
      test: {context_length: 200000}
"""
PLAN_USAGE = {"input_tokens": 100, "output_tokens": 40}
SLIDE_USAGE = {"input_tokens": 200, "output_tokens": 50}


def task(task_id: int, title: str | None = None) -> dict[str, Any]:
    return {
        "id": task_id,
        "title": title or f"Slide {task_id}",
        "objective": f"show fact {task_id}",
        "chart_hint": "bar",
    }


def plan_json(task_ids: list[int], summary: str = "A plan") -> str:
    return json.dumps({"plan_summary": summary, "tasks": [task(i) for i in task_ids]})


def slide_json(task_id: int) -> str:
    chart = {
        "type": "bar",
        "title": f"Chart {task_id}",
        "data": [{"name": "A", "value": task_id}, {"name": "B", "value": 2}],
    }
    return json.dumps(
        {
            "id": task_id,
            "title": f"Slide {task_id}",
            "text": f"Fact {task_id} in one line.",
            "charts": [chart],
        }
    )


def slow(entry: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Stream the entry's response in chunks so that it takes about ``seconds``."""
    chunks = 20
    return {
        **entry,
        "chunk_chars": max(1, len(entry["response"]) // chunks + 1),
        "delay_ms": int(seconds * 1000 / chunks),
    }


def planner(response: str, contains: str | None = None, seconds: float = 0.0) -> dict[str, Any]:
    entry: dict[str, Any] = {"agent": PLANNER_ID, "response": response, "usage": PLAN_USAGE}
    if contains:
        entry["contains"] = contains
    return slow(entry, seconds) if seconds else entry


def solver(task_id: int, seconds: float = 0.0, response: str | None = None) -> dict[str, Any]:
    entry = {
        "agent": SOLVER_ID,
        "contains": f"Slide task #{task_id}:",
        "response": response or slide_json(task_id),
        "usage": SLIDE_USAGE,
    }
    return slow(entry, seconds) if seconds else entry


def world(
    task_ids: tuple[int, ...] | list[int] = (1, 2, 3),
    slow_tasks: dict[int, float] | None = None,
    extra: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Responses: ``extra`` first (more specific), then a quick planner and one solver per task."""
    slow_tasks = slow_tasks or {}
    solvers = [solver(i, slow_tasks.get(i, 0.0)) for i in range(1, 10)]
    return [*(extra or []), planner(plan_json(list(task_ids))), *solvers]


def write_workspace(root: Path, responses: list[dict[str, Any]]) -> Rtws:
    rtws = Rtws(root)
    (root / ".minds" / "scripted").mkdir(parents=True, exist_ok=True)
    rtws.team_yaml.write_text(TEAM_YAML)
    rtws.llm_yaml.write_text(LLM_YAML)
    (rtws.minds_dir / "scripted" / "test.yaml").write_text(
        yaml.safe_dump({"responses": responses}, sort_keys=False)
    )
    rtws.ensure_layout()
    return rtws


class PsClient:
    """A real websocket client: sends envelopes, collects events, waits for one by name."""

    def __init__(self, ws: ClientWebSocketResponse) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self.session_id = ""

    async def send(self, event: str, **fields: Any) -> None:
        await self.ws.send_json({"event": event, **fields})

    async def send_in_session(self, event: str, **fields: Any) -> None:
        await self.send(event, session_id=self.session_id, **fields)

    async def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        while True:
            frame = await self.ws.receive(timeout=timeout)
            assert frame.type == WSMsgType.TEXT, f"socket ended: {frame.type} {frame.data!r}"
            event: dict[str, Any] = json.loads(frame.data)
            if event["event"] in ("system.heartbeat", "system.connected"):
                continue
            self.events.append(event)
            return event

    async def until(self, name: str, timeout: float = 10.0, **content: Any) -> dict[str, Any]:
        """The next event called ``name`` (whose content has ``content`` items, e.g. task id), skipping others."""
        while True:
            event = await self.recv(timeout)
            if event["event"] == name and all(
                task_id_of(event) == v if k == "task_id" else event["content"].get(k) == v
                for k, v in content.items()
            ):
                return event

    async def create_session(self) -> str:
        await self.send("user.create_session")
        created = await self.until("agent.session_created")
        self.session_id = created["session_id"]
        return self.session_id

    async def ask(self, question: str = "Make slides", **fields: Any) -> None:
        await self.send_in_session("user.message", content=question, **fields)

    async def finish(self, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Events until (and with) the run's terminal event; returns only this run's events."""
        start = len(self.events)
        while not ends_run(await self.recv(timeout)):
            pass
        return self.events[start:]


def names(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in events]


def task_id_of(event: dict[str, Any]) -> int | None:
    content = event.get("content")
    if isinstance(content, dict) and isinstance(content.get("task"), dict):
        return int(content["task"]["id"])
    return None


def per_task(events: list[dict[str, Any]], task_id: int) -> list[str]:
    """The solver.* events of one task, in order (solvers interleave across tasks)."""
    return [e["event"] for e in events if e["event"].startswith("solver.") and task_id_of(e) == task_id]


def deck_of(events: list[dict[str, Any]], workspace: Path | None = None) -> Path:
    """The .pptx a run wrote, from its ``aggregate.completed`` (shown relative to ``workspace`` when inside)."""
    output = next(e for e in events if e["event"] == "aggregate.completed")["content"]["output"]
    shown = Path(output["pptx_path"])
    return shown if shown.is_absolute() else (workspace or Path.cwd()) / shown


def tool_solver(task_id: int, sqls: list[str], then: str, *, contains: str | None = None) -> list[dict[str, Any]]:
    """Solver ``task_id`` calls ``query_data`` once per SQL (all in one generation), then answers ``then``.

    The follow-up entry matches the solver's next turn after the tool results (``contains`` narrows it
    when several solvers query in one run)."""
    calls = [{"func_call": {"name": "query_data", "arguments": {"sql": sql}}} for sql in sqls]
    first = {"agent": SOLVER_ID, "contains": f"Slide task #{task_id}:", "stream": calls, "usage": SLIDE_USAGE}
    follow: dict[str, Any] = {"agent": SOLVER_ID, "role": "tool", "response": then, "usage": SLIDE_USAGE}
    if contains:
        follow["contains"] = contains
    return [first, follow]


def write_small_sales(path: Path) -> Path:
    """A small deterministic sales table: 4 regions × 12 months × 5 lines (240 rows)."""
    lines = ["order_date,region,revenue"]
    for month in range(1, 13):
        for index, region in enumerate(("East", "South", "North", "West")):
            for line in range(5):
                lines.append(f"2025-{month:02d}-{line + 1:02d},{region},{100 * (index + 1) + month + line}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path
