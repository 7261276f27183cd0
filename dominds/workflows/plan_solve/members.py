"""The Plan & Solve roles as teammates, and the requests the conductor sends them.

The members are hidden extensions of the engine that runs Plan & Solve, so a run needs no team.yaml
entry; team.yaml may define the same ids to choose a provider/model or a persona file. The planner and
the solvers get one tool, ``query_data`` (data_tool.py): they are told the table's schema and a few rows,
and compute every number with SQL instead of reading a pasted CSV.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from dominds.driver.extensions import Extensions
from dominds.team import WorkflowMembers
from dominds.workflows.plan_solve.data_tool import TOOL_NAME, TOOLSET, data_toolsets
from dominds.workflows.plan_solve.limits import MAX_CHART_POINTS

if TYPE_CHECKING:  # loaded when a run uses them, not when serve starts (limits.py)
    from dominds.workflows.plan_solve.dataset import DataTable
    from dominds.workflows.plan_solve.tasks import SlideTask

CONDUCTOR_ID = "plan_solve"
"""Agent of a run's root dialog: the conductor code, which never calls an LLM."""
PLANNER_ID = "plan_solve_planner"
SOLVER_ID = "plan_solve_solver"
SAMPLE_ROWS = 5

PLANNER_PERSONA = f"""\
You are the planner of a data-to-slides presentation. You read the user's question and the data's schema,
and you split the presentation into slide-sized tasks. You never write the slides yourself. You may look
at the data with the `{TOOL_NAME}` tool (one SQL SELECT per call) to choose what is worth a slide.

Answer with ONE JSON object and nothing else:
{{"title": "<the deck's title, at most 60 characters>", "plan_summary": "<one sentence>",
 "tasks": [{{"id": 1, "title": "...", "objective": "what this slide must show",
            "insights": ["..."], "query_suggestions": ["SELECT ... (SQL that computes it)"],
            "chart_hint": "bar|line|pie|area|none", "notes": "..."}}]}}
Ids start at 1 and are sequential. Plan as many slides as the question asks for (default 3); the cover
slide is added for you, do not plan it.
"""

SOLVER_PERSONA = f"""\
You write one slide of a presentation from the task you are given. The data is a SQL table: compute every
number with the `{TOOL_NAME}` tool (one SELECT per call, DuckDB SQL); never estimate or invent a number.
When a query fails, read the error, fix the SQL and call again.

Answer with ONE JSON object and nothing else:
{{"id": <the task id>, "title": "... (at most 60 characters)", "text": "2-3 sentences with the key numbers",
 "charts": [{{"type": "bar|line|pie|area", "title": "...",
             "query": "SELECT <label> AS name, <number> AS value FROM ... GROUP BY ... ORDER BY ..."}}]}}
A chart's "query" is run again by the deck builder and its rows become the chart, so the chart shows
exactly what the data says: two columns (a label, then a number), at most {MAX_CHART_POINTS} rows. Run it
with `{TOOL_NAME}` first to see it works. Use at most 2 charts; leave "charts" empty when a chart does
not help.
"""


def plan_solve_extensions() -> Extensions:
    """The roles as hidden members of the engine that runs Plan & Solve, and their data toolset."""
    with_data = {"toolsets": (TOOLSET,), "tools": ()}
    members = WorkflowMembers(
        specs={
            CONDUCTOR_ID: {
                "name": "Plan & Solve",
                "gofor": ("conducts Plan & Solve runs (code, never an LLM)",),
            },
            PLANNER_ID: {
                "name": "Slide planner",
                "gofor": ("plans slide tasks for Plan & Solve",),
                **with_data,
            },
            SOLVER_ID: {
                "name": "Slide solver",
                "gofor": ("writes one slide with charts computed from the data",),
                **with_data,
            },
        },
        personas={PLANNER_ID: PLANNER_PERSONA, SOLVER_ID: SOLVER_PERSONA},
    )
    return Extensions(toolsets=data_toolsets(), members=members)


def data_brief(table: DataTable | None) -> str:
    """What the teammates are told about the data: the table, its columns, its size and a few rows."""
    if table is None:
        return "No data file was given: work from the question alone (there is no table to query)."
    sample = table.sample(SAMPLE_ROWS)
    lines = [",".join(sample.columns), *(",".join("" if v is None else str(v) for v in row) for row in sample.rows)]
    return (
        f"Data: table `{table.table}` ({table.row_count} rows) from {table.path.name}.\n"
        f"Columns: {table.schema_text()}\n"
        f"First {len(sample.rows)} rows:\n```csv\n" + "\n".join(lines) + "\n```\n"
        f"Query it with `{TOOL_NAME}`."
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
