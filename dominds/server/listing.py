"""Dialog lists for the panel: trees from root to subdialogs with run state, Q4H and cost.

Built from the dialog index (``store/index.py``): facts per dialog kept in SQLite and checked against the
files at each listing, so only dialogs that changed since are read again, and nothing per dialog stays
in the daemon's memory between listings. Fields a listing needs come from ``store.dialog_facts.read_dialog``;
add new ones there (and bump ``INDEX_VERSION`` in ``store/index.py``). The cost of a tree comes from ``driver/usage.py``
(the one owner of cost), which prices the generations the index keeps per dialog.

A whole listing (``listing_chunks``) runs in a worker thread on its own index connection: checking
100,000 dialogs against their files takes seconds, and the event loop must answer every other request
and websocket meanwhile. What it reads besides the index is its ``ListingSource``: the trees the daemon
holds (from that thread it only looks one up, and a loaded dialog's load error) and the prices, taken
on the loop before it starts.

Light on purpose (the engine is named for the type checker only): while ``dominds serve`` starts, the
front application lists the dialogs before the engine's modules are even imported (``early_source``:
no tree is loaded yet, the prices come from the sheet the last daemon kept, ``driver/price_sheet.py``),
unless a tree of ``run/`` may need recovery, which could change what the listing says
(``NotAtRest``: that listing waits for the engine).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Generator, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dominds.driver import price_sheet, usage
from dominds.driver.attention import tree_at_rest
from dominds.rtws import DIALOG_STATUSES, Rtws
from dominds.server.memory import BIG_WORK_TREES, give_back_memory
from dominds.store.derived import Derived
from dominds.store.errors import DialogNotFoundError
from dominds.store.index import DialogIndex
from dominds.store.index_entries import Entry, Tree

if TYPE_CHECKING:
    from dominds.dialog.model import RootDialog
    from dominds.driver.engine import Engine
    from dominds.llm.catalog import Catalog

Node = dict[str, Any]


class NotAtRest(Exception):
    """An early listing (``ListingSource.at_rest_only``) found a tree of ``run/`` recovery may change."""


@dataclass(frozen=True)
class ListingSource:
    """What a listing reads besides the index: the workspace, the trees the daemon holds, the prices."""

    rtws: Rtws
    loaded: Mapping[str, RootDialog]
    """The daemon's loaded trees by root id (a loaded tree is listed as the daemon knows it)."""
    catalog: Catalog | usage.PriceSheet
    at_rest_only: bool = False
    """Raise ``NotAtRest`` instead of listing when a tree of ``run/`` may need recovery."""


def engine_source(engine: Engine) -> ListingSource:
    """A listing of a started engine's workspace (call on the loop: the configuration reloads there)."""
    return ListingSource(engine.rtws, engine.roots, engine.config.get().catalog)


def early_source(rtws: Rtws) -> ListingSource | None:
    """A listing before the engine has started: nothing loaded, the prices the last daemon kept (``None``
    when they may not be those in force now: the listing then waits for the engine)."""
    sheet = price_sheet.read(rtws)
    return None if sheet is None else ListingSource(rtws, {}, sheet, at_rest_only=True)


def _node(loaded_trees: Mapping[str, RootDialog], entry: Entry) -> Node:
    facts = entry.facts
    error = facts.get("error")
    root = loaded_trees.get(entry.root_id)  # read from the listing's thread: one lookup, no iteration
    loaded = root.local.get(entry.self_id) if root is not None else None
    if loaded is not None and loaded.load_error and not error:
        error = loaded.load_error  # found when the daemon read it (a corrupt course, a refused write)
    node: Node = {
        "selfId": entry.self_id,
        "rootId": entry.root_id,
        "status": entry.status,
        "title": facts.get("title"),
        "conductor": facts.get("conductor"),
        "agentId": facts.get("agentId"),
        "taskDocPath": facts.get("taskDocPath"),
        "createdAt": facts.get("createdAt"),
        "lastModified": facts.get("lastModified"),
        "currentCourse": facts.get("currentCourse"),
        "runState": facts.get("runState") if not error else {"kind": "error", "detail": error},
        "q4hCount": entry.q4h_count,
        "waitingForSubdialogs": "subdlg.yaml" in entry.files,
        "subdialogs": [],
    }
    if error:
        node["error"] = error
    if loaded is not None and loaded.notices:  # a rebuilt registry, a state read from its spare
        node["notices"] = list(loaded.notices)
    if entry.self_id != entry.root_id:
        node["supdialogId"] = facts.get("supdialogId")
        node["tellaskSession"] = facts.get("tellaskSession")
        if facts.get("tellaskHead") is not None:
            node["tellaskHead"] = facts.get("tellaskHead")
            node["callType"] = facts.get("callType")
        node["fbr"] = bool(facts.get("fbr"))
    return node


def _tree(loaded_trees: Mapping[str, RootDialog], catalog: Catalog | usage.PriceSheet, root: Entry, subs: list[Entry]) -> Node:
    top = _node(loaded_trees, root)
    nodes = {root.self_id: top}
    for sub in subs:
        nodes[sub.self_id] = _node(loaded_trees, sub)
    for sub in subs:  # subdialogs are stored flat; the tree comes from supdialogId
        parent = nodes.get(sub.facts.get("supdialogId") or "", top)
        parent["subdialogs"].append(nodes[sub.self_id])
    top["subdialogCount"] = len(subs)
    top["q4hTotal"] = sum(n["q4hCount"] for n in nodes.values())
    top["cost"] = tree_cost(catalog, (root, *subs))
    return top


def tree_cost(catalog: Catalog | usage.PriceSheet, entries: tuple[Entry, ...]) -> dict[str, Any]:
    """Tokens and USD of a tree: its generations as the index keeps them, priced by ``driver/usage.py``."""
    total = usage.Usage()
    for entry in entries:
        if entry.generations != "[]":
            total.add(usage.price_generations(json.loads(entry.generations), catalog))
    return usage.totals(total)


_RANK = {status: chr(ord("z") - i) for i, status in enumerate(DIALOG_STATUSES)}
_STATUS_OF_RANK = {rank: status for status, rank in _RANK.items()}


def _sort_key(tree: Tree) -> bytes:
    """The tree's place in a listing, as ``Listing`` sorts it (in reverse)."""
    key = f"{_RANK[tree.root.status]}\0{tree.root.last_modified or ''}\0{tree.root.root_id}\0{tree.sig}"
    return key.encode("utf-8", "surrogatepass")


LISTING_VERSION = 1
"""Bump when the JSON of a listed tree changes shape or meaning (trees kept in the index are redone)."""


class Listing:
    """One listing (``GET /api/dialogs``): the order of its trees, then each tree's JSON.

    A tree nobody loaded keeps its JSON in the index (``store.derived.Derived``, under the tree's file
    signatures and digests and the prices), so a listing of 10,000 unchanged dialogs reads those texts
    instead of decoding and pricing every dialog. A loaded tree is always built afresh (the daemon may
    know more than its files: a load error)."""

    def __init__(
        self, source: ListingSource, index: DialogIndex, statuses: tuple[str, ...] = DIALOG_STATUSES, limit: int | None = None
    ) -> None:
        """``limit``: only the first ``limit`` trees, chosen without checking every dialog's files
        (``DialogIndex.recent_trees``); ``more`` says how many were left out."""
        from dominds import __version__

        self.source = source
        self.index = index
        self.catalog = source.catalog
        if source.at_rest_only:
            _refuse_unless_at_rest(index)
        salt = f"{LISTING_VERSION}:{__version__}:{usage.pricing_fingerprint(source.catalog)}"
        self.kept = Derived(index, "listing", salt, preload=False)
        # One key per tree, sorted in reverse: its status's rank (inverted, so the first status sorts
        # last), its activity, its id (a tie in activity: the newer dialog first), its signature, apart
        # by NULs (which sort below every other character, so the parts compare like a tuple's). SQLite
        # sorts them in memory of its own, as UTF-8 bytes (code point order, as Python compares str;
        # ``surrogatepass`` keeps a stray surrogate sortable): a list of 20,000 strings (100,000
        # dialogs) was 5 MB of small objects, and the arenas they shared with objects that stay kept
        # the daemon that much bigger after the listing.
        self.order = sqlite3.connect(":memory:")
        self.order.execute("CREATE TABLE trees (key BLOB)")
        self.more = 0
        """Trees left out by ``limit``."""
        if limit is None:
            trees: Iterable[Tree] = index.iter_trees(statuses)
        else:
            trees, total = index.recent_trees(statuses, limit)
            self.more = total - len(trees)
        self.order.executemany("INSERT INTO trees VALUES (?)", ((_sort_key(tree),) for tree in trees))
        self.count: int = self.order.execute("SELECT count(*) FROM trees").fetchone()[0]
        """How many trees of ``statuses`` are listed; the index was brought up to date on the way."""

    def trees(self) -> Iterator[tuple[str, str, str]]:
        """(status, rootId, ``Tree.sig``) of each tree: most recently active first within a status."""
        for (key,) in self.order.execute("SELECT key FROM trees ORDER BY key DESC"):
            parts = key.decode("utf-8", "surrogatepass").split("\0")
            yield _STATUS_OF_RANK[parts[0]], parts[-2], parts[-1]

    def tree_json(self, status: str, root_id: str, sig: str) -> bytes | None:
        """One tree as JSON (None if it is gone since the order was taken)."""
        loaded = root_id in self.source.loaded
        if not loaded:
            text = self.kept.lookup(status, root_id, sig)
            if text is not None:
                return text.encode()
        tree = self.index.stored_tree(status, root_id)
        if tree is None:
            return None
        text = json.dumps(_tree(self.source.loaded, self.catalog, tree.root, tree.subs), ensure_ascii=False, separators=(",", ":"))
        if not loaded:
            self.kept.put(tree, text)
        return text.encode()

    def close(self) -> None:
        self.kept.save()
        self.order.close()


def _refuse_unless_at_rest(index: DialogIndex) -> None:
    """``NotAtRest`` when recovery may change a tree of ``run/`` (``driver/attention.tree_at_rest``)."""
    for tree in index.iter_trees(("run",)):
        if not tree_at_rest(tree):
            raise NotAtRest(tree.root.root_id)


CHUNK_BYTES = 65536


def listing_chunks(source: ListingSource, statuses: tuple[str, ...], limit: int | None = None) -> Generator[bytes, None, None]:
    """The body of ``GET /api/dialogs`` (``{"dialogs": [...]}``) in pieces of about ``CHUNK_BYTES``, on
    an index connection of its own: run it in a worker thread (a listing of 100,000 dialogs never sits
    in memory whole, and never holds the event loop)."""
    trees = [0]
    try:
        yield from _listing_chunks(source, statuses, trees, limit)
    finally:
        if trees[0] > BIG_WORK_TREES:  # its objects are all freed by now (the generator above is done)
            give_back_memory()


def _listing_chunks(
    source: ListingSource, statuses: tuple[str, ...], trees: list[int], limit: int | None
) -> Generator[bytes, None, None]:
    index = DialogIndex(source.rtws)
    try:
        listing = Listing(source, index, statuses, limit)
        trees[0] = listing.count
        try:
            chunk = bytearray(b'{"dialogs":[')
            first = True
            for status, root_id, sig in listing.kept.batched(listing.trees(), lambda o: (o[0], o[1])):
                text = listing.tree_json(status, root_id, sig)
                if text is None:
                    continue
                if not first:
                    chunk += b","
                chunk += text
                first = False
                if len(chunk) > CHUNK_BYTES:
                    yield bytes(chunk)
                    chunk.clear()
            chunk += b"]" + (f',"more":{listing.more}'.encode() if limit is not None else b"") + b"}"
            yield bytes(chunk)
        finally:
            listing.close()
    finally:
        index.close()


_LISTING_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dominds-listing")
"""Every listing's steps run on this one thread: listings at once take turns piece by piece, and the
daemon's memory gains one thread's allocations, not one per worker of the default pool."""


class ListingInThread:
    """``listing_chunks`` stepped on the listing thread, one piece per ``next_chunk``; ``close`` waits
    for a step still running (a client that went away mid-listing) before closing it on that thread."""

    def __init__(self, source: ListingSource, statuses: tuple[str, ...], limit: int | None = None) -> None:
        self.chunks = listing_chunks(source, statuses, limit)
        self.step: asyncio.Future[bytes | None] | None = None

    async def next_chunk(self) -> bytes | None:
        self.step = asyncio.get_running_loop().run_in_executor(_LISTING_THREAD, next, self.chunks, None)
        return await asyncio.shield(self.step)

    async def close(self) -> None:
        if self.step is not None and not self.step.done():
            await asyncio.wait([self.step])
        if self.step is not None and not self.step.cancelled():
            self.step.exception()  # read: a step that failed after its client went away is of no use now
        await asyncio.get_running_loop().run_in_executor(_LISTING_THREAD, self.chunks.close)


async def dialog_tree(engine: Engine, root_id: str) -> Node:
    """One root's tree, checked against its files in a worker thread, as a listing is (a tree whose
    long course changed is read again: 0.15-0.3 s of a 5,000-turn dialog's, which held the event
    loop); raises ``DialogNotFoundError`` for an unknown root. Not on the listing thread: one tree must
    not wait behind a listing of 100,000."""
    status = engine.store.locate_root(root_id)
    catalog = engine.config.get().catalog  # on the loop: the configuration is reloaded there
    node = await asyncio.to_thread(_one_tree, engine.rtws, engine.roots, catalog, status, root_id)
    if node is None:
        raise DialogNotFoundError(f"no dialog {root_id!r} in {engine.rtws.dialogs_dir}")
    return node


def _one_tree(
    rtws: Rtws, loaded_trees: Mapping[str, RootDialog], catalog: Catalog | usage.PriceSheet, status: str, root_id: str
) -> Node | None:
    index = DialogIndex(rtws)  # a connection of its own, in its thread
    try:
        for tree in index.trees(root=(status, root_id)):
            return _tree(loaded_trees, catalog, tree.root, tree.subs)
        return None
    finally:
        index.close()
