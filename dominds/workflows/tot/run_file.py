"""``tot-run.json``: a ToT run's snapshot, kept in its root dialog directory so it outlives the daemon.

The panel's ``GET /api/tot/runs/{id}`` answers a run of this daemon from memory and any other run
(from before a restart, a crash, or a local ``dominds tot`` run with teammates) from this file. It is
what the snapshot of the API holds, in the same camelCase keys:

``format`` = ``dominds.tot-run``, ``version`` = 1, ``runId`` (the log folder's task id), ``rootId``,
``problem``, ``symbolic``, ``status`` (``running`` | ``completed`` | ``unsolved`` | ``failed`` |
``cancelled`` | ``interrupted`` = its daemon stopped; a reader shows a ``running`` record no live run drives as ``interrupted``, see
``workflows/run_roots.py``), ``settings`` (the resolved search settings or null before the search),
``layers`` (the per-layer reports), ``backtracks``, ``tree`` (seed 000's ThoughtTree or null),
``solution`` (the ``final_solution`` payload or null), ``solved``, ``unsolvedCode``, ``unsolvedReason``,
``errors`` (the role errors), ``stats``, ``logDir``, ``failure``, ``usage``, ``startedAt``,
``updatedAt``; since issue 36 also ``decomposition`` (the decomposer's result, null before the search), ``resumedFrom`` (the interrupted run this one resumes) and ``resumedAs`` (set on an interrupted
run once it is resumed): absent in older records, read as null. Unknown keys are ignored when read.

When it is written (atomically, temp file + rename): when the search starts, at the end of each layer,
when the run ends (whatever the ending), and in between at most every ``MIN_INTERVAL`` seconds while the
tree changes; a kill loses at most that much of the tree. The snapshot is taken on the event loop and
written in a worker thread (``runner.RunFileWriter``); ``bench/tot_run_file.py`` prints what a write
and a read cost (a 5,000-node tree, the explorer's guard, is about 2 MB). The seed's log folder (``logs/tot-…/``) is
left exactly as the seed specifies it; its ``00-task-info.json`` names the root dialog
(``root_dialog_id``) so a run is found from its id without a search.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dominds.ids import now_iso
from dominds.store.atomic import write_atomic
from dominds.store.records import Record
from dominds.workflows.run_roots import load_run_file
from dominds.workflows.tot.logs import TASK_INFO

RUN_FILE = "tot-run.json"
FORMAT = "dominds.tot-run"
VERSION = 1
MIN_INTERVAL = 0.25
"""Seconds between two writes caused by tree changes inside a layer (layer ends and the end always write)."""


class RunFileError(Exception):
    """The run file is missing, unreadable or of another format."""


class TotRunFile(Record):
    format: str = FORMAT
    version: int = VERSION
    run_id: str
    root_id: str
    problem: str
    symbolic: bool = False
    status: str = "running"
    settings: dict[str, Any] | None = None
    layers: list[dict[str, Any]] = []
    backtracks: int = 0
    tree: dict[str, Any] | None = None
    solution: dict[str, Any] | None = None
    solved: bool = False
    unsolved_code: str | None = None
    unsolved_reason: str | None = None
    errors: list[dict[str, Any]] = []
    stats: dict[str, Any] | None = None
    log_dir: str | None = None
    failure: str | None = None
    usage: dict[str, Any] | None = None
    decomposition: dict[str, Any] | None = None
    resumed_from: str | None = None
    resumed_as: str | None = None
    started_at: str
    updated_at: str = ""

    def snapshot(self) -> dict[str, Any]:
        """The API's snapshot form (every key present, nulls included)."""
        return self.model_dump(mode="json", by_alias=True, exclude={"format", "version", "started_at", "updated_at"})

    def summary(self) -> dict[str, Any]:
        return {"runId": self.run_id, "rootId": self.root_id, "problem": self.problem, "status": self.status}


def save(root_dir: Path, record: TotRunFile) -> None:
    record.updated_at = now_iso()
    write_atomic(root_dir / RUN_FILE, record.model_dump_json(by_alias=True, indent=1) + "\n")


def load(root_dir: Path) -> TotRunFile:
    return load_run_file(root_dir, RUN_FILE, TotRunFile, run_kind="a ToT run", fmt=FORMAT, version=VERSION, error=RunFileError)


def root_of_run(logs_root: Path, run_id: str) -> str | None:
    """The root dialog id a run's ``00-task-info.json`` names (None: no such run, or one without a root)."""
    if "/" in run_id or "\\" in run_id or run_id.startswith(".") or not run_id.startswith("tot-"):
        return None
    try:
        info = json.loads((logs_root / run_id / TASK_INFO).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    root_id = info.get("root_dialog_id") if isinstance(info, dict) else None
    return root_id if isinstance(root_id, str) else None
