"""Where each dialog lives on disk and typed access to its files.

Layout: ``.dialogs/<status>/<rootId>/`` for a root, ``.dialogs/<status>/<rootId>/subdialogs/<selfId>/``
for every subdialog of that tree whatever its depth. The directory a root is in *is* its status.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from dominds.ids import is_dialog_id, now_iso
from dominds.rtws import DIALOG_STATUSES, STATE_DIR_MODE, Rtws
from dominds.store.atomic import (
    SYMLINK_PROBLEM,
    fsync_dir,
    remove_file,
    renamed_into_place,
    restore_spare,
    spare_path,
    write_fresh,
)
from dominds.store.course_records import CourseRecord
from dominds.store.crashpoints import durable_step
from dominds.store.errors import CorruptFileError, DialogNotFoundError, StoreError, WriteFailedError
from dominds.store.fileio import (
    append_record,
    load_model,
    load_raw,
    read_course,
    record_line,
    repair_tail,
    save_model,
    save_raw,
    validate,
    write_first_record,
)
from dominds.store.queue_log import QUEUE_LOG, QueueLog, replay
from dominds.store.records import (
    REGISTRY_HEADER,
    DialogLifecycle,
    DialogMeta,
    LatestState,
    Q4hFile,
    QueuedPrompt,
    RegistryEntry,
    RemindersFile,
    SubdialogResponse,
    SubdlgFile,
)

DIALOG_YAML = "dialog.yaml"
LATEST_YAML = "latest.yaml"
REMINDERS_JSON = "reminders.json"
Q4H_YAML = "q4h.yaml"
SUBDLG_YAML = "subdlg.yaml"
RESPONSE_YAML = "response.yaml"
STATUS_DIR_LIFECYCLE: dict[str, DialogLifecycle] = {"run": "running", "done": "completed", "archive": "archived"}
REGISTRY_YAML = "registry.yaml"
SUBDIALOGS = "subdialogs"
ARTIFACTS = "artifacts"
"""Images and files an MCP tool returned (``mcp/results.py`` writes them, ``server/tools_api.py`` serves them)."""
DIALOGS_DIR_NAME = ".dialogs"

log = logging.getLogger("dominds.store")


def course_file_name(course: int) -> str:
    return f"course-{course:03d}.jsonl"


@dataclass(frozen=True)
class DialogFiles:
    """The files of one dialog directory (paths are computed once: listings touch tens of thousands)."""

    dir: Path

    @cached_property
    def dialog_yaml(self) -> Path:
        return self.dir / DIALOG_YAML

    @cached_property
    def queue_log(self) -> QueueLog:
        """``queue.jsonl``: the queued prompts (store/queue_log.py)."""
        return QueueLog(self.dir / QUEUE_LOG)

    @cached_property
    def latest_yaml(self) -> Path:
        return self.dir / LATEST_YAML

    @cached_property
    def reminders_json(self) -> Path:
        return self.dir / REMINDERS_JSON

    @cached_property
    def q4h_yaml(self) -> Path:
        return self.dir / Q4H_YAML

    @cached_property
    def subdlg_yaml(self) -> Path:
        return self.dir / SUBDLG_YAML

    @cached_property
    def response_yaml(self) -> Path:
        return self.dir / RESPONSE_YAML

    @cached_property
    def registry_yaml(self) -> Path:
        return self.dir / REGISTRY_YAML

    def course(self, number: int) -> Path:
        path = self._courses.get(number)
        if path is None:
            path = self._courses[number] = self.dir / course_file_name(number)
        return path

    @cached_property
    def _courses(self) -> dict[int, Path]:
        return {}

    def check_real_directories(self) -> None:
        """``CorruptFileError`` when the dialog's directory, one above it up to ``.dialogs/``, or its
        ``subdialogs/`` or ``artifacts/`` is a symbolic link: writes through it would land wherever the link
        points, outside the workspace (the Taskdoc rule: links are never followed), and an artifact link
        served an outside file over the API."""
        for directory in (self.dir / SUBDIALOGS, self.dir / ARTIFACTS, self.dir, *self.dir.parents):
            if directory.is_symlink():
                raise CorruptFileError(directory, SYMLINK_PROBLEM)
            if directory.name == DIALOGS_DIR_NAME:
                return

    def subdialog_files(self) -> list[DialogFiles]:
        """For a root: the files of every subdialog of its tree (flat), in id order."""
        if (self.dir / SUBDIALOGS).is_symlink():
            return []  # never followed (check_real_directories refuses the root)
        try:
            entries = sorted(e.name for e in os.scandir(self.dir / SUBDIALOGS) if e.is_dir(follow_symlinks=False) and is_dialog_id(e.name))
        except FileNotFoundError:
            return []
        return [DialogFiles(self.dir / SUBDIALOGS / name) for name in entries]

    # -- typed access -------------------------------------------------------------------------

    def read_meta(self) -> DialogMeta:
        meta = load_model(self.dialog_yaml, DialogMeta)
        if meta is None:
            raise DialogNotFoundError(f"no dialog at {self.dir} ({DIALOG_YAML} missing)")
        return meta

    def write_meta(self, meta: DialogMeta) -> None:
        save_model(self.dialog_yaml, meta)

    @cached_property
    def lifecycle_status(self) -> DialogLifecycle:
        """``running``/``completed``/``archived``, from the status directory this tree lives in (the truth)."""
        root_dir = self.dir.parent.parent if self.dir.parent.name == SUBDIALOGS else self.dir
        return STATUS_DIR_LIFECYCLE.get(root_dir.parent.name, "running")

    def read_latest(self, *, restore: bool = False, notes: list[str] | None = None) -> LatestState | None:
        """The dialog's run state: ``latest.yaml``, or its spare when ``latest.yaml`` cannot be read.

        ``latest.yaml`` is replaced by swapping its name with its spare's (``atomic.write_atomic``,
        ``spare``): under its name every reader finds a whole version, whenever a ``kill -9`` came, and
        that version is the truth, as the dialog index and ``dominds status`` read it. A whole spare is
        never preferred to a readable ``latest.yaml``: a kill between the spare's write and the swap
        leaves the next version whole under the spare's name, and reading it made the daemon hold a
        state that recovery (which picks trees by ``latest.yaml``'s facts) never reconciled: a queued
        message neither driven nor accepted again (``tests/driver/test_turn_crash_retry.py``). Only a
        ``latest.yaml`` torn or left empty by a power cut (a swap that reached the disk before the
        spare's bytes did) falls back to the spare, the last version whose group committed (docs/reliability.md).
        ``restore`` (the engine's loader, which writes the dialog next): that spare is made the file
        again, so that the next write goes over the torn version instead of the only copy of the one
        in use, and every reader sees what the engine runs with. ``notes`` gets a line saying so, for the
        dialog's notices (a rollback used to be silent)."""
        problem: StoreError | str | None = None
        try:
            latest = load_model(self.latest_yaml, LatestState)
            if latest is None and os.path.lexists(self.latest_yaml):
                problem = "it is empty"  # a cut before a new spare's blocks were written: torn too
        except StoreError as exc:
            latest, problem = None, exc
        if problem is not None:
            spare = _whole_spare(self.latest_yaml)
            if spare is not None:
                log.warning("%s: %s; its spare is read instead", self.latest_yaml, problem)
                if notes is not None:
                    notes.append(
                        f"latest.yaml could not be read ({problem}); the dialog goes on from its previous version "
                        "(the spare kept by the last write), which may lack the last change"
                    )
                latest = spare
                if restore:
                    restore_spare(self.latest_yaml)
            elif isinstance(problem, StoreError):
                raise problem
        if latest is not None:
            latest.status = self.lifecycle_status  # a move between status directories is the truth
        return latest

    def read_queue(self) -> list[QueuedPrompt]:
        """The queued prompts the files hold: ``latest.yaml``'s, then the queue log's (store/queue_log.py)."""
        latest = self.read_latest()
        return replay(latest.queued_prompts if latest is not None else [], self.queue_log.read())

    def write_latest(self, latest: LatestState, *, fresh: bool = False) -> None:
        latest.last_modified = now_iso()
        latest.status = self.lifecycle_status
        _save_latest(self.latest_yaml, latest, fresh=fresh)

    def read_reminders(self) -> RemindersFile:
        return load_model(self.reminders_json, RemindersFile) or RemindersFile(updated_at=now_iso())

    def write_reminders(self, reminders: RemindersFile) -> None:
        reminders.updated_at = now_iso()
        save_model(self.reminders_json, reminders)

    def read_q4h(self) -> Q4hFile:
        return load_model(self.q4h_yaml, Q4hFile) or Q4hFile(updated_at=now_iso())

    def write_q4h(self, q4h: Q4hFile) -> None:
        """Persist the question index; an empty index deletes the file (seed: deleted when empty)."""
        if not q4h.questions:
            remove_file(self.q4h_yaml)
            return
        q4h.updated_at = now_iso()
        save_model(self.q4h_yaml, q4h)

    def read_subdlg(self) -> SubdlgFile:
        return load_model(self.subdlg_yaml, SubdlgFile) or SubdlgFile(updated_at=now_iso())

    def write_subdlg(self, subdlg: SubdlgFile) -> None:
        if not subdlg.pending:
            remove_file(self.subdlg_yaml)
            return
        subdlg.updated_at = now_iso()
        save_model(self.subdlg_yaml, subdlg)

    def read_response(self) -> SubdialogResponse | None:
        return load_model(self.response_yaml, SubdialogResponse)

    def write_response(self, response: SubdialogResponse) -> None:
        save_model(self.response_yaml, response)

    def read_registry(self) -> dict[str, RegistryEntry]:
        raw = load_raw(self.registry_yaml)
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            from dominds.store.errors import CorruptFileError

            raise CorruptFileError(self.registry_yaml, "expected a map of agentId!tellaskSession -> entry")
        return {str(key): validate(self.registry_yaml, RegistryEntry, value) for key, value in raw.items()}

    def write_registry(self, registry: dict[str, RegistryEntry]) -> None:
        data = {key: entry.to_disk() for key, entry in registry.items()}
        save_raw(self.registry_yaml, data, header=REGISTRY_HEADER)

    def append(self, course: int, record: CourseRecord, *, sync: bool = True) -> None:
        append_record(self.course(course), record, sync=sync)

    def read_course(self, course: int) -> list[CourseRecord]:
        return read_course(self.course(course))

    def repair_course_tail(self, course: int) -> bool:
        return repair_tail(self.course(course))

    def course_numbers(self) -> list[int]:
        numbers = []
        for entry in os.scandir(self.dir):
            name = entry.name
            if name.startswith("course-") and name.endswith(".jsonl"):
                try:
                    numbers.append(int(name[7:-6]))
                except ValueError:
                    continue
        return sorted(numbers)


def _save_latest(path: Path, latest: LatestState, *, fresh: bool = False) -> None:
    """The one writer of ``latest.yaml``: the replaced version is kept as the spare that the next write
    goes over (rewritten at every turn: ``atomic.write_atomic``, ``spare``)."""
    save_model(path, latest, fresh=fresh, spare=True)


def _whole_spare(path: Path) -> LatestState | None:
    """The version the spare of ``path`` holds, when it is a plain file that reads whole (else None)."""
    spare_file = spare_path(path)
    try:
        if not stat.S_ISREG(os.lstat(spare_file).st_mode):
            return None  # a FIFO would block the reader; a link points elsewhere
        return load_model(spare_file, LatestState)
    except (FileNotFoundError, StoreError):
        return None  # none, or one cut mid-write: never read


CREATING_PREFIX = ".creating-"


def create_dialog_dir(
    files: DialogFiles,
    meta: DialogMeta,
    latest: LatestState,
    first: CourseRecord,
    *,
    history: dict[int, list[CourseRecord]] | None = None,
    reminders: RemindersFile | None = None,
) -> None:
    """Create a dialog directory with its first files atomically.

    ``history``: course files to write as well (course number → records; for ``latest.current_course``, the
    records after ``first``), and ``reminders`` its ``reminders.json``: a fork is created with its
    copied history in the same single rename, so no reader or crash sees it half made.

    The files are written into a hidden sibling directory that is then renamed into place, so a crash
    never leaves a dialog directory without its ``dialog.yaml`` (recovery removes leftover temp dirs).
    """
    final = files.dir
    staging = final.parent / f"{CREATING_PREFIX}{final.name}-{os.getpid()}"
    try:
        try:
            staging.mkdir(parents=True, mode=STATE_DIR_MODE)
        except FileExistsError:  # a leftover of this pid's earlier life
            shutil.rmtree(staging)
            staging.mkdir(mode=STATE_DIR_MODE)
    except OSError as exc:
        raise WriteFailedError(staging, exc.strerror or str(exc)) from exc
    staged = DialogFiles(staging)
    # Each file is written once, as a new file: no temp file + rename (the directory's rename is atomic),
    # and nothing is noted for the group under the staging name (renamed_into_place notes the final paths).
    save_model(staged.dialog_yaml, meta, fresh=True)
    staged.write_latest(latest, fresh=True)
    course = course_file_name(latest.current_course)
    names = [DIALOG_YAML, LATEST_YAML, course]
    history = history or {}
    for number, records in sorted(history.items()):
        if number != latest.current_course:
            write_fresh(staging / course_file_name(number), "".join(record_line(r) + "\n" for r in records))
            names.append(course_file_name(number))
    if latest.current_course in history:  # the current course: ``first``, then the records that follow it
        lines = [first, *history[latest.current_course]]
        write_fresh(staging / course, "".join(record_line(r) + "\n" for r in lines))
    else:
        write_first_record(staging / course, first)
    if reminders is not None:
        save_model(staged.reminders_json, reminders, fresh=True)
        names.append(REMINDERS_JSON)
    durable_step("rename", final)
    try:
        os.rename(staging, final)
    except OSError as exc:
        raise WriteFailedError(final, exc.strerror or str(exc)) from exc
    renamed_into_place(final, names)


def remove_creation_leftovers(directory: Path) -> int:
    """Delete staging dirs of creations a crash interrupted; returns how many were removed."""
    removed = 0
    try:
        entries = [e for e in os.scandir(directory) if e.is_dir(follow_symlinks=False) and e.name.startswith(CREATING_PREFIX)]
    except FileNotFoundError:
        return 0
    for entry in entries:
        shutil.rmtree(entry.path, ignore_errors=True)
        removed += 1
    return removed


class DialogStore:
    """Locates dialogs in a workspace and moves root trees between statuses."""

    def __init__(self, rtws: Rtws) -> None:
        self.rtws = rtws

    def root_dir(self, status: str, root_id: str) -> Path:
        _check_id(root_id)
        return self.rtws.status_dir(status) / root_id

    def files(self, status: str, root_id: str, self_id: str | None = None) -> DialogFiles:
        root = self.root_dir(status, root_id)
        if self_id is None or self_id == root_id:
            return DialogFiles(root)
        _check_id(self_id)
        return DialogFiles(root / SUBDIALOGS / self_id)

    def locate_root(self, root_id: str) -> str:
        """The status directory holding this root; DialogNotFoundError when none does."""
        _check_id(root_id)
        for status in DIALOG_STATUSES:
            if (self.rtws.status_dir(status) / root_id / DIALOG_YAML).exists():
                return status
        raise DialogNotFoundError(f"no dialog {root_id!r} in {self.rtws.dialogs_dir}")

    def locate_dialog(self, self_id: str) -> tuple[str, str]:
        """``(status, rootId)`` of a root or a subdialog in any status, from the directory layout alone."""
        _check_id(self_id)
        for status in DIALOG_STATUSES:
            if (self.rtws.status_dir(status) / self_id / DIALOG_YAML).exists():
                return status, self_id
        for status in DIALOG_STATUSES:
            for match in self.rtws.status_dir(status).glob(f"*/{SUBDIALOGS}/{self_id}/{DIALOG_YAML}"):
                return status, match.parent.parent.parent.name
        raise DialogNotFoundError(f"no dialog {self_id!r} in {self.rtws.dialogs_dir}")

    def root_ids(self, status: str) -> list[str]:
        """Root ids under one status, oldest first (ids sort by creation time). Reads no files."""
        directory = self.rtws.status_dir(status)
        try:
            names = [e.name for e in os.scandir(directory) if e.is_dir(follow_symlinks=False) and is_dialog_id(e.name)]
        except FileNotFoundError:
            return []
        return sorted(names)

    def subdialog_ids(self, status: str, root_id: str) -> list[str]:
        directory = self.root_dir(status, root_id) / SUBDIALOGS
        if directory.is_symlink():
            return []  # never followed (check_real_directories refuses the root)
        try:
            return sorted(e.name for e in os.scandir(directory) if e.is_dir(follow_symlinks=False) and is_dialog_id(e.name))
        except FileNotFoundError:
            return []

    def iter_tree(self, status: str, root_id: str) -> Iterator[DialogFiles]:
        yield self.files(status, root_id)
        for sub_id in self.subdialog_ids(status, root_id):
            yield self.files(status, root_id, sub_id)

    def move_root(self, root_id: str, from_status: str, to_status: str) -> None:
        """Move a whole tree (subdialogs, registry, queues) to another status directory."""
        if from_status == to_status:
            return
        src = self.root_dir(from_status, root_id)
        dst = self.root_dir(to_status, root_id)
        if not (src / DIALOG_YAML).exists():
            raise DialogNotFoundError(f"no dialog {root_id!r} in {from_status}/")
        if dst.exists():
            raise StoreError(f"cannot move {root_id}: {dst} already exists")
        dst.parent.mkdir(parents=True, exist_ok=True)
        durable_step("rename", dst)
        try:
            os.rename(src, dst)  # same filesystem: atomic
        except OSError as exc:
            raise WriteFailedError(dst, exc.strerror or str(exc)) from exc
        fsync_dir(src.parent)
        fsync_dir(dst.parent)
        for files in self.iter_tree(to_status, root_id):  # the moved tree's latest.yaml says where it is
            try:
                latest = files.read_latest()
            except StoreError:
                continue  # a corrupt file stays as it is; the directory is the truth anyway
            if latest is not None:
                _save_latest(files.latest_yaml, latest)

    def delete_root(self, status: str, root_id: str) -> None:
        shutil.rmtree(self.root_dir(status, root_id))
        fsync_dir(self.rtws.status_dir(status))


def _check_id(dialog_id: str) -> None:
    # Ids become path segments: refuse anything that could escape the dialogs directory.
    if not dialog_id or "/" in dialog_id or "\\" in dialog_id or dialog_id in (".", "..") or "\0" in dialog_id:
        raise DialogNotFoundError(f"invalid dialog id {dialog_id!r}")
