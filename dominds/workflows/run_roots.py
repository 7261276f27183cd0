"""Past workflow runs, found on disk: the root dialogs that hold a workflow's run file.

A workflow run (ToT, Plan & Solve) is a root dialog with a small record of its own next to
``dialog.yaml`` (``tot-run.json``, ``plan-solve-run.json``). The runs a daemon started before a
restart (or a crash) are found here, not in the daemon's memory: the store's root listing gives the
root ids of each status directory without reading a file, ids sort by creation time, so the newest
runs come first and the walk stops after ``limit`` of them, with one ``stat`` per root it passes.

"interrupted": a record that still says ``running`` was left so by a process that stopped (a crash, a
kill, a daemon stop) unless a live run of this process drives it. The daemon holds the workspace
lock, so no other process can be driving it; readers derive ``interrupted`` when they read (see
``shown_status``) instead of rewriting records at start-up: nothing is written on the daemon's start
path, a record from a kill is shown right after the restart, and a record is only ever written by the
run it belongs to.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from dominds.rtws import DIALOG_STATUSES
from dominds.store.dialog_store import DialogStore
from dominds.store.records import Record

RecordT = TypeVar("RecordT", bound=Record)

INTERRUPTED = "interrupted"
"""The status shown for a run whose record says ``running`` but which no live run of this process drives."""


@dataclass(frozen=True)
class RunRoot:
    status: str
    """The root's status directory (``run``, ``done``, ``archive``)."""
    root_id: str
    directory: Path


def newest_run_roots(store: DialogStore, run_file: str, limit: int) -> list[RunRoot]:
    """Up to ``limit`` roots holding ``run_file``, newest first (by root id = creation time)."""
    found: list[RunRoot] = []
    folders = {status: str(store.rtws.status_dir(status)) for status in DIALOG_STATUSES}
    per_status = [_newest_of(store, status) for status in DIALOG_STATUSES]
    for root_id, status in heapq.merge(*per_status, reverse=True):
        if os.path.isfile(f"{folders[status]}/{root_id}/{run_file}"):  # plain strings: one stat, little else
            found.append(RunRoot(status, root_id, store.root_dir(status, root_id)))
            if len(found) >= limit:
                break
    return found


def newest_run_records(
    store: DialogStore, run_file: str, limit: int, load: Callable[[Path], RecordT], error: type[Exception]
) -> list[tuple[str, RecordT]]:
    """(rootId, record) of the newest ``limit`` runs whose ``run_file`` ``load`` reads; a record it
    refuses with ``error`` is left out (reading that run alone says why)."""
    out = []
    for root in newest_run_roots(store, run_file, limit):
        try:
            out.append((root.root_id, load(root.directory)))
        except error:
            continue
    return out


def _newest_of(store: DialogStore, status: str) -> Iterator[tuple[str, str]]:
    for root_id in reversed(store.root_ids(status)):
        yield root_id, status


def shown_status(recorded: str, run_key: str, live: Container[str]) -> str:
    """The status to show for a record: ``running`` only while a live run of this process (``live``: the
    keys of the runs it drives, as the caller names runs) drives it."""
    return INTERRUPTED if recorded == "running" and run_key not in live else recorded


def load_run_file(root_dir: Path, file_name: str, model: type[RecordT], *, run_kind: str, fmt: str, version: int,
                  error: type[Exception]) -> RecordT:
    """The run file ``file_name`` of the root ``root_dir``, validated as ``model`` of format ``fmt`` v``version``;
    ``error`` with the reason when it is missing, unreadable, invalid or of another format (``run_kind``:
    "a ToT run", "a Plan & Solve run")."""
    path = root_dir / file_name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise error(f"{root_dir.name} is not {run_kind} (no {file_name})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path} cannot be read: {exc}") from exc
    try:
        record = model.model_validate_json(text)
    except ValidationError as exc:
        raise error(f"{path} is not a valid {file_name}: {exc.errors()[0]['msg']}") from exc
    found = (getattr(record, "format", None), getattr(record, "version", None))
    if found != (fmt, version):
        raise error(f"{path} has format {found[0]} v{found[1]}; expected {fmt} v{version}")
    return record
