"""The most recently active trees, without checking every dialog's files (``dominds status --limit``).

A full refresh (``index.py``) stats the directory and every watched file of every dialog: 4–5 ``stat``
calls per dialog, seconds at 100,000 dialogs. Choosing the N trees a listing shows first needs less.
Trees are ordered by their root's ``lastModified``, which comes from the root's ``latest.yaml``; that
file is only ever replaced by a rename (``store/atomic.py``), and a rename changes the mtime of its
directory. So one ``stat`` per root directory tells which trees may have a new order: those are
refreshed (their files read again where they changed), the others keep the index's ``lastModified``.
The trees chosen are then refreshed as fully as by a whole listing (every watched file ``stat``-ed,
racy bytes hashed), so what is shown is as fresh as ever; only the choice trusts directory mtimes (a
``latest.yaml`` edited in place, keeping its directory's mtime, may be ordered by its old time).

A tree whose directory changed, or that the index has never seen (a first run, an index deleted or
from an older version), is not read unless it may belong among the first N: ``lastModified`` is
stamped just before that rename, so the directory's mtime bounds it from above. The changed trees are
read newest directory first, and no further once the N-th tree found so far is more recent than the
next directory's mtime (plus ``MTIME_SLACK_NS`` for coarse file-system clocks). A first listing of
100,000 dialogs with no index reads about N trees, not 100,000.
"""

from __future__ import annotations

import bisect
import heapq
import os
import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import NamedTuple

from dominds.ids import is_dialog_id
from dominds.rtws import Rtws
from dominds.store.index_entries import Tree

ROOTS_PER_QUERY = 256
MTIME_SLACK_NS = 1_000_000_000
"""How far a ``lastModified`` may be after its directory's recorded mtime (file systems stamp with a
coarse clock: a tick of a few ms behind ``time.time()``)."""


class _Root(NamedTuple):
    rank: int
    """The status's place in the order asked for (run/ first)."""
    last_modified: str
    status: str
    root_id: str
    changed: bool
    mtime_ns: int
    """The root directory's mtime (an upper bound of ``lastModified``)."""


def order_key(tree: Tree, ranks: dict[str, int]) -> tuple[int, str, str]:
    """Trees are listed by status, then most recent root ``lastModified`` first, then (a tie) the newer
    root id first: as ``server/listing.py`` and ``status`` sort."""
    return ranks[tree.root.status], _descending(tree.root.last_modified), _descending(tree.root.root_id)


_DESCENDING_ASCII = {c: chr(0x10FFFF - c) for c in range(128)}


def _descending(text: str) -> str:
    """``text`` with every character inverted: ascending order of these is descending order of texts.
    A timestamp is ASCII: one ``translate`` (the per-character loop was a fifth of ``status --limit``)."""
    if text.isascii():
        return text.translate(_DESCENDING_ASCII)
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


def recent_trees(
    db: sqlite3.Connection,
    rtws: Rtws,
    statuses: tuple[str, ...],
    limit: int,
    refresh_one: Callable[[str, str], Tree | None],
) -> tuple[list[Tree], int]:
    """(the first ``limit`` trees of ``statuses`` in listing order, how many trees there are in all).

    ``refresh_one(status, rootId)`` is the index's refresh of one tree."""
    ranks = {status: rank for rank, status in enumerate(statuses)}
    roots = list(_roots(db, rtws, statuses))
    fresh: dict[tuple[str, str], Tree] = {}
    order: list[tuple[tuple[int, str, str], str, str]] = [
        ((root.rank, _descending(root.last_modified), _descending(root.root_id)), root.status, root.root_id)
        for root in roots
        if not root.changed
    ]
    best = heapq.nsmallest(limit, order)  # the first ``limit`` found so far, in order
    changed = sorted((r for r in roots if r.changed), key=lambda r: (r.rank, -r.mtime_ns))
    for root in changed:
        if len(best) == limit and not _may_come_before(root, best[-1][0]):
            break  # nor may any later one: same status and an older directory, or a later status
        tree = refresh_one(root.status, root.root_id)
        if tree is None:
            continue
        fresh[(root.status, root.root_id)] = tree
        item = (order_key(tree, ranks), root.status, root.root_id)
        order.append(item)
        bisect.insort(best, item)
        del best[limit:]
    chosen: list[Tree] = []
    for _key, status, root_id in heapq.nsmallest(limit, order):
        tree = fresh.get((status, root_id)) or refresh_one(status, root_id)
        if tree is not None:
            chosen.append(tree)
    chosen.sort(key=lambda t: order_key(t, ranks))
    return chosen, len(roots)


def _may_come_before(root: _Root, last: tuple[int, str, str]) -> bool:
    """Whether ``root`` (changed, not read) may be listed before the tree whose order key is ``last``."""
    rank, descending, _ = last
    if root.rank != rank:
        return root.rank < rank
    try:
        then = datetime.fromisoformat(_descending(descending)).timestamp()
    except ValueError:
        return True  # no time to compare with: read it
    return root.mtime_ns + MTIME_SLACK_NS >= then * 1e9


def _roots(db: sqlite3.Connection, rtws: Rtws, statuses: tuple[str, ...]) -> Iterator[_Root]:
    """Every root directory of ``statuses``, with the index's ``lastModified`` of its root and whether
    the directory changed since the index read it (one ``stat`` each)."""
    stat = os.stat
    for rank, status in enumerate(statuses):
        directory = str(rtws.status_dir(status))
        try:
            root_ids = sorted(e.name for e in os.scandir(directory) if e.is_dir(follow_symlinks=False) and is_dialog_id(e.name))
        except FileNotFoundError:
            continue
        for start in range(0, len(root_ids), ROOTS_PER_QUERY):
            chunk = root_ids[start : start + ROOTS_PER_QUERY]
            known = {
                root_id: (sig.partition("|")[0], racy, last or "")
                for root_id, sig, racy, last in db.execute(
                    "SELECT root_id, sig, racy, last_modified FROM dialogs"
                    " WHERE status = ? AND root_id BETWEEN ? AND ? AND self_id = root_id",
                    (status, chunk[0], chunk[-1]),
                )
            }
            for root_id in chunk:
                row = known.get(root_id)
                try:
                    mtime = stat(f"{directory}/{root_id}").st_mtime_ns
                except OSError:
                    continue  # gone since the directory was listed
                if row is None or row[1]:
                    yield _Root(rank, "", status, root_id, True, mtime)
                else:
                    yield _Root(rank, row[2], status, root_id, str(mtime) != row[0], mtime)
