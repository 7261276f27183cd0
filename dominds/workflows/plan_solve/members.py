"""The Plan & Solve roles as teammates, and the requests the conductor sends them.

The members are hidden and tool-less (the data travels in the request), extensions of the engine that
runs Plan & Solve, so a run needs no team.yaml entry; team.yaml may define the same ids to choose a
provider/model or a persona file.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict
from pathlib import Path

from dominds.driver.extensions import Extensions
from dominds.team import WorkflowMembers
from dominds.workflows.plan_solve.tasks import SlideTask

CONDUCTOR_ID = "plan_solve"
"""Agent of a run's root dialog: the conductor code, which never calls an LLM."""
PLANNER_ID = "plan_solve_planner"
SOLVER_ID = "plan_solve_solver"
MAX_DATA_CHARS = 12_000
"""CSV text beyond this is cut from the requests (the head is kept) so a big file cannot blow the context."""

PLANNER_PERSONA = """\
You are the planner of a data-to-slides presentation. You read the user's question and the data, and you
split the presentation into slide-sized tasks. You never write the slides yourself.

Answer with ONE JSON object and nothing else:
{"plan_summary": "<one sentence>",
 "tasks": [{"id": 1, "title": "...", "objective": "what this slide must show",
            "insights": ["..."], "query_suggestions": ["how to compute it from the data"],
            "chart_hint": "bar|line|pie|area|none", "notes": "..."}]}
Ids start at 1 and are sequential. Plan as many slides as the question asks for (default 3).
"""

SOLVER_PERSONA = """\
You write one slide of a presentation from the task you are given and the data. Compute numbers from the
data; never invent them.

Answer with ONE JSON object and nothing else:
{"id": <the task id>, "title": "...", "text": "one short paragraph",
 "charts": [{"type": "bar|line|pie|area", "title": "...", "data": [{"name": "...", "value": 123}]}]}
Use at most 2 charts; leave "charts" empty when a chart does not help.
"""

def plan_solve_extensions() -> Extensions:
    """The roles as hidden members of the engine that runs Plan & Solve."""
    no_llm_tools = {"toolsets": (), "tools": ()}
    members = WorkflowMembers(
        specs={
            CONDUCTOR_ID: {
                "name": "Plan & Solve",
                "gofor": ("conducts Plan & Solve runs (code, never an LLM)",),
            },
            PLANNER_ID: {
                "name": "Slide planner",
                "gofor": ("plans slide tasks for Plan & Solve",),
                **no_llm_tools,
            },
            SOLVER_ID: {
                "name": "Slide solver",
                "gofor": ("writes one slide with chart data",),
                **no_llm_tools,
            },
        },
        personas={PLANNER_ID: PLANNER_PERSONA, SOLVER_ID: SOLVER_PERSONA},
    )
    return Extensions(members=members)


def data_brief(csv_path: Path | None) -> str:
    """What the teammates are told about the data: columns, row count and the CSV text (cut if large)."""
    if csv_path is None:
        return "No data file was given: work from the question alone."
    try:
        text = csv_path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the data file {csv_path}: {exc}") from exc
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0] if rows else []
    shown = text if len(text) <= MAX_DATA_CHARS else text[:MAX_DATA_CHARS].rsplit("\n", 1)[0] + "\n… (cut)"
    return (
        f"Data file: {csv_path.name} ({max(len(rows) - 1, 0)} rows; columns: {', '.join(header)})\n"
        f"```csv\n{shown.rstrip()}\n```"
    )


def planner_request(question: str, brief: str) -> str:
    return f"Plan the slides for this request.\n\nQuestion: {question}\n\n{brief}\n"


def solver_request(question: str, plan_summary: str, task: SlideTask, brief: str) -> str:
    # The first line names the task: scripted response databases match on it ("Slide task #2:").
    return (
        f"Slide task #{task.id}: {task.title}\n\n"
        f"Question: {question}\nPlan: {plan_summary}\n"
        f"Task: {json.dumps(asdict(task), ensure_ascii=False)}\n\n{brief}\n"
    )


def ensure_taskdoc(workspace_root: Path, taskdoc_path: str) -> None:
    """Give the runs' dialog tree a Taskdoc so teammates see what the runs are for (kept if it exists)."""
    package = workspace_root / taskdoc_path
    goals = package / "goals.md"
    if goals.exists():
        return
    package.mkdir(parents=True, exist_ok=True)
    goals.write_text(
        "# Plan & Solve runs\n\nEach run answers one question from the websocket service: a planner splits it "
        "into slide tasks, solvers write one slide each, and the slides become a presentation.\n",
        encoding="utf-8",
    )
