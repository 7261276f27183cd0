"""The trees an engine holds in memory: loaded on demand, found by id, unloaded at rest.

``Engine`` takes these methods (a part of it kept in a file of its own: the engine's API is one
object for the server, the CLI and the workflows). ``roots`` and ``sub_roots`` are set by
``Engine.__init__``; a tree of ``run/`` is loaded once and kept until ``unload_if_at_rest`` forgets it
(server/resting.py decides when).
"""

from __future__ import annotations

import logging
import time

from dominds.dialog.loader import error_dialog, load_root, load_sub
from dominds.dialog.model import Dialog, RootDialog, SubDialog
from dominds.driver.scheduler import Scheduler
from dominds.ids import now_iso
from dominds.pubchan import PubChan
from dominds.store.course_records import CourseStartRecord
from dominds.store.dialog_store import DialogStore, create_dialog_dir
from dominds.store.errors import DialogNotFoundError, StoreError
from dominds.store.index import DialogIndex
from dominds.store.records import DialogMeta, LatestState

log = logging.getLogger("dominds.engine")


class LoadedTrees:
    """Loading, finding and unloading the trees of one engine (a part of ``Engine``)."""

    store: DialogStore
    index: DialogIndex
    pubchan: PubChan
    scheduler: Scheduler
    roots: dict[str, RootDialog]
    """Global registry: rootId → loaded root of ``run/``."""
    sub_roots: dict[str, str]
    """selfId of a known subdialog → its rootId."""
    fetched_at: dict[str, float]
    """rootId → ``time.monotonic()`` when a loaded tree was last handed out (``load_root``,
    ``find_loaded``, ``add_root``). server/resting.py leaves a tree alone for a while after that: a
    caller that holds one of its dialogs across an await must never write into a forgotten copy
    while the next request reads the files into a new one."""

    def load_root(self, root_id: str) -> RootDialog:
        root = self.roots.get(root_id)
        if root is not None:
            self.fetched_at[root_id] = time.monotonic()
            return root
        status = self.store.locate_root(root_id)
        files = self.store.files(status, root_id)
        try:
            root = load_root(files, self.pubchan.publish, status)
        except StoreError as exc:
            return error_dialog(files, self.pubchan.publish, str(exc), None)  # type: ignore[return-value]
        if status == "run":
            self.roots[root_id] = root
            self.fetched_at[root_id] = time.monotonic()
        return root

    def tree_at_rest(self, root_id: str) -> bool:
        """A loaded tree with nothing to do: no drive, no wanted drive, no failed write, no notice, no
        workflow, no waiting stream (its files are the truth; it can be read again when needed)."""
        root = self.roots.get(root_id)
        if root is None or root.meta.conductor:
            return False
        for dialog in root.local.values():
            if (
                dialog.is_driving
                or dialog.latest.needs_drive
                or dialog.load_error
                or dialog.notices  # said once, when it was loaded: not on disk
                or (root_id, dialog.self_id) in self.scheduler.wanted
                or dialog.self_id in self.scheduler.scopes
                or dialog.drive_mutex.locked()
            ):
                return False
        return True

    def unload_if_at_rest(self, root_id: str) -> bool:
        """Forget a loaded tree at rest (``tree_at_rest``), so memory does not grow with dialogs that
        are not being driven, and note it settled in the dialog index; False for a busy tree."""
        if not self.tree_at_rest(root_id):
            return False
        root = self.roots.pop(root_id)
        self.fetched_at.pop(root_id, None)
        dialogs = list(root.local.values())
        for dialog in dialogs:
            self.sub_roots.pop(dialog.self_id, None)
            self.scheduler.forget(dialog.self_id)
        self.pubchan.forget([dialog.self_id for dialog in dialogs])
        try:  # noted as settled: the next start need not load it either
            self.index.settle("run", root_id)
        except Exception:  # a cache: the next start recovers the tree instead
            log.warning("could not note %s as settled", root_id, exc_info=True)
        return True

    def try_load_sub(self, root: RootDialog, self_id: str) -> SubDialog | None:
        loaded = root.local.get(self_id)
        if loaded is not None:
            return loaded  # type: ignore[return-value]
        files = self.store.files(root.status, root.root_id, self_id)
        try:
            sub = load_sub(files, self.pubchan.publish, root)
        except StoreError:
            return None
        self.sub_roots[self_id] = root.root_id
        return sub

    def get_dialog(self, root_id: str, self_id: str | None = None) -> Dialog:
        root = self.load_root(root_id)
        if self_id is None or self_id == root_id:
            return root
        sub = self.try_load_sub(root, self_id)
        if sub is None:
            files = self.store.files(root.status, root_id, self_id)
            if not files.dir.exists():
                raise DialogNotFoundError(f"no dialog {self_id!r} under root {root_id!r}")
            try:
                files.read_meta()
                files.read_latest()
            except StoreError as exc:
                return error_dialog(files, self.pubchan.publish, str(exc), None)
            raise DialogNotFoundError(f"dialog {self_id!r} could not be loaded")
        return sub

    def try_get_dialog(self, root_id: str, self_id: str) -> Dialog | None:
        try:
            return self.get_dialog(root_id, self_id)
        except StoreError:
            return None

    def find_loaded(self, self_id: str) -> Dialog | None:
        root_id = self_id if self_id in self.roots else self.sub_roots.get(self_id)
        root = self.roots.get(root_id) if root_id is not None else None
        if root is None:
            return None
        self.fetched_at[root.root_id] = time.monotonic()
        return root.local.get(self_id)

    def find_dialog(self, self_id: str) -> Dialog:
        """A dialog by self id alone (roots and subdialogs, any status)."""
        loaded = self.find_loaded(self_id)
        if loaded is not None:
            return loaded
        _, root_id = self.store.locate_dialog(self_id)
        return self.get_dialog(root_id, self_id)

    def create_subdialog(self, root: RootDialog, meta: DialogMeta, latest: LatestState) -> SubDialog:
        files = self.store.files(root.status, root.root_id, meta.id)
        first = CourseStartRecord(ts=now_iso(), course=1)
        create_dialog_dir(files, meta, latest, first)
        sub = SubDialog(files, meta, latest, self.pubchan.publish, root)
        sub.adopt_first_course(first)
        root.local[meta.id] = sub
        self.sub_roots[meta.id] = root.root_id
        return sub
