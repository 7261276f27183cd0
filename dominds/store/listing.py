"""Cheap dialog listings: read ``dialog.yaml`` and ``latest.yaml`` (plus index-file existence), never transcripts."""

from __future__ import annotations

from dataclasses import dataclass, field

from dominds.rtws import DIALOG_STATUSES
from dominds.store.dialog_store import DialogFiles, DialogStore
from dominds.store.errors import StoreError
from dominds.store.records import DialogMeta, LatestState


@dataclass
class DialogSummary:
    """What a list view needs about one dialog."""

    status: str
    self_id: str
    root_id: str
    files: DialogFiles
    meta: DialogMeta | None = None
    latest: LatestState | None = None
    has_q4h: bool = False
    has_pending_subdialogs: bool = False
    error: str | None = None
    """Set when a file of this dialog is corrupt; the other fields are best effort."""
    subdialogs: list[DialogSummary] = field(default_factory=list)


def summarize(store: DialogStore, status: str, root_id: str, self_id: str | None = None) -> DialogSummary:
    files = store.files(status, root_id, self_id)
    summary = DialogSummary(status=status, self_id=self_id or root_id, root_id=root_id, files=files)
    summary.has_q4h = files.q4h_yaml.exists()
    summary.has_pending_subdialogs = files.subdlg_yaml.exists()
    try:
        summary.meta = files.read_meta()
        summary.latest = files.read_latest()
        # The index files are small and decide what the dialog waits for: a corrupt one shows here too.
        if summary.has_q4h:
            files.read_q4h()
        if summary.has_pending_subdialogs:
            files.read_subdlg()
    except StoreError as exc:
        summary.error = str(exc)
    return summary


def list_roots(
    store: DialogStore, statuses: tuple[str, ...] = DIALOG_STATUSES, *, with_subdialogs: bool = False
) -> list[DialogSummary]:
    out = []
    for status in statuses:
        for root_id in store.root_ids(status):
            root = summarize(store, status, root_id)
            if with_subdialogs:
                root.subdialogs = [
                    summarize(store, status, root_id, sub_id) for sub_id in store.subdialog_ids(status, root_id)
                ]
            out.append(root)
    return out
