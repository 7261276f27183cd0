"""The trees an engine holds in memory: loaded on demand, found by id, unloaded at rest.

``Engine`` takes these methods (a part of it kept in a file of its own: the engine's API is one
object for the server, the CLI and the workflows). ``roots``, ``sub_roots`` and the reads under way
are set by ``Engine.__init__``; a tree of ``run/`` is loaded once and kept until ``unload_if_at_rest``
forgets it (server/resting.py decides when).

The server asks for dialogs with ``get_dialog_off_loop``: a tree or subdialog not in memory is read
in a worker thread. Reading a long dialog's course takes a while (0.6 s for the 11 MB course of a
10,000-turn dialog); on the event loop it held every other request and stream meanwhile. The engine's
own lookups (drives, recovery, workflows) stay synchronous: they load on the loop, and a copy loaded
there while a thread reads the same tree is the one kept (see ``_read_and_keep``).
"""

from __future__ import annotations

import asyncio
import logging
import time

from dominds.dialog.loader import error_dialog, load_root, read_sub
from dominds.dialog.model import Dialog, Publish, RootDialog, SubDialog
from dominds.driver.request_record import read_request_log_ahead
from dominds.driver.scheduler import Scheduler
from dominds.ids import now_iso
from dominds.pubchan import PubChan
from dominds.store.course_records import CourseStartRecord
from dominds.store.dialog_store import DialogFiles, DialogStore, create_dialog_dir
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
    reading: dict[str, asyncio.Future[RootDialog]]
    """rootId → the read of a tree of ``run/`` under way in a worker thread (``get_dialog_off_loop``)."""
    read_again: set[str]
    """Trees of ``reading`` the loop loaded itself meanwhile: its copy wins, or, forgotten again before
    the read ended, the tree is read anew (it may have been written in between)."""

    def load_root(self, root_id: str) -> RootDialog:
        root = self.roots.get(root_id)
        if root is not None:
            self.fetched_at[root_id] = time.monotonic()
            return root
        status = self.store.locate_root(root_id)
        root, readable = _read_root(self.store.files(status, root_id), self.pubchan.publish, status)
        if status == "run" and readable:
            if root_id in self.reading:
                self.read_again.add(root_id)
            self._keep_root(root)
        return root

    def _keep_root(self, root: RootDialog) -> None:
        """``root`` is the tree of its id in memory from now on (handed out now: see ``fetched_at``)."""
        self.roots[root.root_id] = root
        self.fetched_at[root.root_id] = time.monotonic()

    async def get_dialog_off_loop(self, root_id: str, self_id: str | None = None) -> Dialog:
        """``get_dialog``, with a tree or subdialog that is not in memory read in a worker thread (see the
        module docstring). Requests for a tree being read share its read."""
        root = await self.load_root_off_loop(root_id)
        if self_id is not None and self_id != root_id and not await self._sub_off_loop(root, self_id):
            return self.get_dialog(root_id, self_id)  # the tree was forgotten or replaced meanwhile
        return self._dialog_in(root, self_id)

    async def load_root_off_loop(self, root_id: str) -> RootDialog:
        """``load_root``, reading a tree that is not in memory in a worker thread."""
        root = self.roots.get(root_id)
        if root is None:
            return await self._root_off_loop(root_id)
        self.fetched_at[root_id] = time.monotonic()
        return root

    async def read_tree_off_loop(self, root_id: str) -> None:
        """A tree with every subdialog of it in memory, each read in a worker thread (moving a tree to
        ``done/`` settles all of its dialogs, which ``run_control.move_root`` reads first)."""
        root = await self.load_root_off_loop(root_id)
        for sub_id in await asyncio.to_thread(self.store.subdialog_ids, root.status, root_id):
            if not await self._sub_off_loop(root, sub_id):
                return  # the tree was forgotten or replaced meanwhile: the caller reads it on the loop

    async def _sub_off_loop(self, root: RootDialog, self_id: str) -> bool:
        """``self_id`` of ``root`` read in a worker thread unless it is in memory (a subdialog whose files
        cannot be read is left out, for the synchronous lookup to report); False when a tree of ``run/``
        is no longer the one in memory once it is read."""
        if self_id in root.local:
            return True
        files = self.store.files(root.status, root.root_id, self_id)
        sub = await asyncio.to_thread(_read_sub, files, self.pubchan.publish, root, root.status == "run")
        if root.status == "run" and self.roots.get(root.root_id) is not root:
            return False
        if sub is not None and self_id not in root.local:
            self._adopt(root, sub)
        return True

    async def _root_off_loop(self, root_id: str) -> RootDialog:
        reading = self.reading.get(root_id)
        if reading is None:
            status = self.store.locate_root(root_id)
            files = self.store.files(status, root_id)
            if status != "run":  # never kept (resting.py keeps only trees that can drive): read for this request
                root, _ = await asyncio.to_thread(_read_root, files, self.pubchan.publish, status)
                return root
            reading = self.reading[root_id] = asyncio.ensure_future(self._read_and_keep(root_id, files))
        # shielded: a request that goes away does not cancel the read the others wait for
        return await asyncio.shield(reading)

    async def _read_and_keep(self, root_id: str, files: DialogFiles) -> RootDialog:
        try:
            root, readable = await asyncio.to_thread(_read_root, files, self.pubchan.publish, "run", True)
            # back on the loop: nothing below awaits, so no lookup sees the tree half kept
            loaded = self.roots.get(root_id)
            if loaded is not None:  # the loop loaded it meanwhile, and may have written to it since
                self.fetched_at[root_id] = time.monotonic()
                return loaded
            if root_id in self.read_again:  # loaded, maybe written, and forgotten while this read ran
                return self.load_root(root_id)
            if readable:
                self._keep_root(root)
            return root
        finally:
            del self.reading[root_id]
            self.read_again.discard(root_id)

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
        sub = _read_sub(self.store.files(root.status, root.root_id, self_id), self.pubchan.publish, root, False)
        if sub is not None:
            self._adopt(root, sub)
        return sub

    def _adopt(self, root: RootDialog, sub: SubDialog) -> None:
        """``sub`` is one of ``root``'s loaded dialogs from now on."""
        root.local[sub.self_id] = sub
        self.sub_roots[sub.self_id] = root.root_id

    def get_dialog(self, root_id: str, self_id: str | None = None) -> Dialog:
        return self._dialog_in(self.load_root(root_id), self_id)

    def _dialog_in(self, root: RootDialog, self_id: str | None) -> Dialog:
        root_id = root.root_id
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

    async def find_dialog_off_loop(self, self_id: str) -> Dialog:
        """``find_dialog``, reading what is not in memory in worker threads: a subdialog's id alone is found
        by a search of every tree's directory, and its tree and itself may be long to read."""
        loaded = self.find_loaded(self_id)
        if loaded is not None:
            return loaded
        _, root_id = await asyncio.to_thread(self.store.locate_dialog, self_id)
        return await self.get_dialog_off_loop(root_id, self_id)

    def create_subdialog(self, root: RootDialog, meta: DialogMeta, latest: LatestState) -> SubDialog:
        files = self.store.files(root.status, root.root_id, meta.id)
        first = CourseStartRecord(ts=now_iso(), course=1)
        create_dialog_dir(files, meta, latest, first)
        sub = SubDialog(files, meta, latest, self.pubchan.publish, root)
        sub.adopt_first_course(first)
        self._adopt(root, sub)
        return sub


def _read_root(files: DialogFiles, publish: Publish, status: str, ahead: bool = False) -> tuple[RootDialog, bool]:
    """A tree's root read from its files (in any thread: it touches nothing of the engine's); False
    with the placeholder of a tree whose files cannot be read. ``ahead``: also what its first request
    will read (``_derive``)."""
    try:
        root = load_root(files, publish, status)
    except StoreError as exc:
        return error_dialog(files, publish, str(exc), None), False  # type: ignore[return-value]
    _derive(root, ahead)
    return root, True


def _read_sub(files: DialogFiles, publish: Publish, root: RootDialog, ahead: bool) -> SubDialog | None:
    try:
        sub = read_sub(files, publish, root)
    except StoreError:
        return None
    _derive(sub, ahead)
    return sub


def _derive(dialog: Dialog, ahead: bool) -> None:
    """``ahead`` (a tree of ``run/`` read in a worker thread): what the dialog's first message and first
    request would otherwise derive from its whole history on the event loop, derived in that thread: the
    message ids recorded (every message is checked for a duplicate: 40 ms of a 10,000-record course) and
    its request log (read whole, every line laid out over the one before). Read on the loop (recovery, a
    drive), nothing is derived ahead: a tree recovery reads and finds at rest never needs either."""
    if not ahead or dialog.load_error:
        return
    dialog.recorded_msg_ids()
    read_request_log_ahead(dialog)
