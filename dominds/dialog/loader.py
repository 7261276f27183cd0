"""Load dialogs from their files into Dialog objects."""

from __future__ import annotations

from dominds.dialog.model import Dialog, Publish, RootDialog, SubDialog
from dominds.ids import now_iso
from dominds.store.dialog_store import DialogFiles
from dominds.store.errors import StoreError
from dominds.store.records import DialogMeta, LatestState, RunState


def load_root(files: DialogFiles, publish: Publish, status: str) -> RootDialog:
    meta = files.read_meta()
    latest = files.read_latest() or LatestState(last_modified=now_iso())
    root = RootDialog(files, meta, latest, publish)
    root.status = status
    _load_state(root)
    try:
        root.type_b = files.read_registry()
    except StoreError as exc:
        root.load_error = str(exc)
    return root


def load_sub(files: DialogFiles, publish: Publish, root: RootDialog) -> SubDialog:
    meta = files.read_meta()
    latest = files.read_latest() or LatestState(last_modified=now_iso())
    sub = SubDialog(files, meta, latest, publish, root)
    _load_state(sub)
    root.local[sub.self_id] = sub
    return sub


def _load_state(dialog: Dialog) -> None:
    """Read reminders, Q4H, pending index and the current course; a corrupt file marks the dialog."""
    try:
        dialog.reminders = list(dialog.files.read_reminders().reminders)
        dialog.q4h = list(dialog.files.read_q4h().questions)
        dialog.pending = list(dialog.files.read_subdlg().pending)
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
