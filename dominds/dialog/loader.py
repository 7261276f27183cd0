"""Load dialogs from their files into Dialog objects."""

from __future__ import annotations

import logging

from dominds.dialog.model import Dialog, Publish, RootDialog, SubDialog
from dominds.dialog.queue import PromptQueue
from dominds.ids import now_iso
from dominds.store.dialog_store import DialogFiles
from dominds.store.errors import CorruptFileError, StoreError
from dominds.store.records import (
    DialogMeta,
    LatestState,
    RegistryEntry,
    RemindersFile,
    RunState,
    with_stable_ids,
)

log = logging.getLogger("dominds.dialog")


def load_root(files: DialogFiles, publish: Publish, status: str) -> RootDialog:
    files.check_real_directories()
    meta = files.read_meta()
    notes: list[str] = []
    latest = files.read_latest(restore=True, notes=notes) or LatestState(last_modified=now_iso())
    root = RootDialog(files, meta, latest, publish)
    root.notices.extend(notes)
    root.status = status
    _load_state(root)
    _load_registry(root)
    return root


def _load_registry(root: RootDialog) -> None:
    """Read ``registry.yaml``; when it is missing or unreadable, rebuild it from the subdialogs' ``dialog.yaml``.

    The seed makes the registry derivable: each TYPE B subdialog records its agent and session. A rebuild is
    reported as a notice on the root, never a refusal; it is saved for running trees.
    """
    files = root.files
    try:
        if files.registry_yaml.exists():
            root.type_b = files.read_registry()
            return
        notice = f"{files.registry_yaml.name} was missing; it was rebuilt from the subdialogs"
    except StoreError as exc:
        notice = f"{files.registry_yaml.name} was unreadable ({exc}); it was rebuilt from the subdialogs"
    root.type_b = rebuild_registry(files)
    if root.type_b or files.registry_yaml.exists():
        log.warning("dialog %s: %s", root.root_id, notice)
        root.notices.append(notice)
        if root.status == "run":
            root.save_registry()


def rebuild_registry(files: DialogFiles) -> dict[str, RegistryEntry]:
    """``agentId!session`` → the newest live TYPE B subdialog with that session, from their ``dialog.yaml``."""
    registry: dict[str, RegistryEntry] = {}
    for sub_files in files.subdialog_files():
        try:
            meta = sub_files.read_meta()
            latest = sub_files.read_latest()
        except StoreError:
            continue
        if not meta.tellask_session or (latest is not None and latest.run_state.kind == "dead"):
            continue
        key = f"{meta.agent_id}!{meta.tellask_session}"
        known = registry.get(key)
        if known is None or known.created_at < meta.created_at:
            registry[key] = RegistryEntry(
                subdialog_id=meta.id,
                agent_id=meta.agent_id,
                tellask_session=meta.tellask_session,
                created_at=meta.created_at,
                last_accessed=latest.last_modified if latest is not None else None,
            )
    return registry


def read_sub(files: DialogFiles, publish: Publish, root: RootDialog) -> SubDialog:
    """A subdialog of ``root`` read from its files, not yet one of ``root.local`` (the engine adds it, on
    the event loop: a worker thread may read it, ``driver/loaded_trees.py``)."""
    files.check_real_directories()
    meta = files.read_meta()
    notes: list[str] = []
    latest = files.read_latest(restore=True, notes=notes) or LatestState(last_modified=now_iso())
    sub = SubDialog(files, meta, latest, publish, root)
    sub.notices.extend(notes)
    _load_state(sub)
    return sub


def _load_state(dialog: Dialog) -> None:
    """Read reminders, Q4H, pending index and the current course; a corrupt file marks the dialog."""
    try:
        dialog.queue = PromptQueue.load(dialog.files.queue_log, dialog.latest)
        dialog.reminders, migrated = with_stable_ids(list(dialog.files.read_reminders().reminders))
        if migrated:  # reminders from before stable ids (named by number): give them ids once, on disk
            dialog.files.write_reminders(RemindersFile(reminders=dialog.reminders, updated_at=now_iso()))
        dialog.q4h = list(dialog.files.read_q4h().questions)
        dialog.pending = list(dialog.files.read_subdlg().pending)
        current = dialog.latest.current_course
        if current > 1 and not dialog.files.course(current).exists():
            numbers = dialog.files.course_numbers()
            raise CorruptFileError(
                dialog.files.latest_yaml,
                f"currentCourse is {current} but there is no {dialog.files.course(current).name}"
                + (f" (the last course is {numbers[-1]})" if numbers else ""),
            )
        dialog.files.repair_course_tail(dialog.latest.current_course)
        dialog.records = dialog.files.read_course(dialog.latest.current_course)
    except StoreError as exc:
        dialog.load_error = str(exc)


def error_dialog(files: DialogFiles, publish: Publish, error: str, meta: DialogMeta | None) -> Dialog:
    """A placeholder for a dialog whose files are corrupt: visible with its error, never driven."""
    if meta is None:
        meta = DialogMeta(id=files.dir.name, root_id=files.dir.name, agent_id="?", task_doc_path="", created_at="")
    latest = LatestState(last_modified=now_iso(), run_state=RunState(kind="error", detail=error))
    dialog: Dialog = RootDialog(files, meta, latest, publish) if meta.is_root else SubDialog(files, meta, latest, publish, None)
    dialog.load_error = error
    return dialog
