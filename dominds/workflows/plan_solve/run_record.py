"""``plan-solve-run.json``: what a Plan & Solve run is about, kept in its root dialog directory.

Written when the run starts (before the planner is asked) and rewritten when it ends, atomically. It is
what the ``query_data`` tool reads to find the run's data file, what the panel page lists, and where the
deck of a finished run is. It lives with the root (``.dialogs/<status>/<root>/``), so archiving the run
moves it too.

Format (JSON, camelCase like every Dominds record): ``format`` = ``dominds.plan-solve-run``, ``version``
= 1, ``question``, ``data`` (``{path, table, rows, columns}`` or null), ``outputDir`` (workspace-relative
when inside the workspace), ``startedAt``, ``updatedAt``, ``status`` (``running`` | ``completed`` |
``failed`` | ``cancelled`` | ``declined`` | ``interrupted`` = its server stopped mid-run; a reader shows a
``running`` record that no live run drives as ``interrupted`` too, see ``workflows/run_roots.py``), ``finalText``, ``deck`` (``{pptx, json, slides, template}``
or null), ``plan`` (``{title, summary, tasks, accepted}`` or absent: written as soon as the planner
answers and again when the plan is accepted, so a past run's plan can be read; absent in records
written before it was kept). Unknown keys are ignored when read.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from dominds.ids import now_iso
from dominds.store.atomic import write_atomic
from dominds.store.records import Record
from dominds.workflows.run_roots import load_run_file

if TYPE_CHECKING:
    from dominds.workflows.plan_solve.dataset import DataTable
    from dominds.workflows.plan_solve.tasks import Plan

RUN_FILE = "plan-solve-run.json"
FORMAT = "dominds.plan-solve-run"
VERSION = 1
RunStatus = Literal["running", "completed", "failed", "cancelled", "declined", "interrupted"]


class RunRecordError(Exception):
    """The run record is missing, unreadable or of another format."""


class RunData(Record):
    path: str
    """The data file: workspace-relative when inside the workspace, else absolute."""
    table: str
    """The SQL table name ``query_data`` knows it by."""
    rows: int
    columns: list[str]


class RunDeck(Record):
    pptx: str
    """Workspace-relative (or absolute) path of the ``.pptx``."""
    json_path: str
    slides: int
    """Slides in the deck, the cover included."""
    template: str


class RunTask(Record):
    """One slide task of the plan, as ``tasks.SlideTask``."""

    id: int
    title: str
    objective: str
    insights: list[str] = []
    query_suggestions: list[str] = []
    chart_hint: str | None = None
    notes: str | None = None


class RunPlan(Record):
    """The run's plan: the planner's (``accepted`` false while it waits for the user, or after a decline)
    or the one the run went on to solve (the user's edits included)."""

    title: str | None = None
    summary: str
    tasks: list[RunTask]
    accepted: bool = False


class RunRecord(Record):
    format: str = FORMAT
    version: int = VERSION
    question: str
    data: RunData | None = None
    output_dir: str
    started_at: str
    updated_at: str
    status: RunStatus = "running"
    final_text: str | None = None
    deck: RunDeck | None = None
    plan: RunPlan | None = None


def shown_path(path: Path, workspace_root: Path) -> str:
    """``path`` relative to the workspace when it is inside it (POSIX form), else absolute."""
    try:
        return path.resolve().relative_to(workspace_root.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def resolve_shown(shown: str, workspace_root: Path) -> Path:
    path = Path(shown)
    return path if path.is_absolute() else workspace_root / path


def save(root_dir: Path, record: RunRecord) -> None:
    record.updated_at = now_iso()
    write_atomic(root_dir / RUN_FILE, record.model_dump_json(by_alias=True, exclude_none=True, indent=2) + "\n")


def load(root_dir: Path) -> RunRecord:
    return load_run_file(
        root_dir, RUN_FILE, RunRecord, run_kind="a Plan & Solve run", fmt=FORMAT, version=VERSION, error=RunRecordError
    )


def data_of(table: DataTable | None, workspace_root: Path) -> RunData | None:
    """The record's ``data`` for a loaded table."""
    if table is None:
        return None
    return RunData(
        path=shown_path(table.path, workspace_root),
        table=table.table,
        rows=table.row_count,
        columns=[c.name for c in table.columns],
    )


def plan_of(plan: Plan, *, accepted: bool) -> RunPlan:
    """The record's ``plan`` for a parsed (or edited) plan."""
    tasks = [RunTask.model_validate(asdict(task)) for task in plan.tasks]
    return RunPlan(title=plan.title, summary=plan.summary, tasks=tasks, accepted=accepted)
