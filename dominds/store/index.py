"""The dialog index: what listings need about every dialog, kept in SQLite as a cache of the files.

Listings (the panel's ``/api/dialogs``, ``dominds status``) and the daemon's start-up scan need a few
facts about every dialog — agent, run state, questions, pending subdialogs, registry keys, tokens per
model — and reading them from ``dialog.yaml``, ``latest.yaml`` and the course files of 10,000 dialogs
takes seconds. The index keeps those facts per dialog together with the *signature* of the files they
were read from, in ``.dominds/cache/dialogs.sqlite``:

- **a cache, never the only copy**: every fact is re-read from the files whenever they changed; delete
  the file (or let it be corrupt) and it is rebuilt from the files on the next refresh;
- **checked against the files** on every refresh: per dialog the directory (a file created, replaced,
  renamed or removed changes its mtime) and every file its facts were read from
  (inode, size, mtime) are ``stat``-ed, so hand edits, other writers and a crash between a write and the
  index update are all seen; a dialog whose files changed within the last two seconds of its reading
  (a file rewritten in place within the clock's granularity keeps its mtime, and may keep its size) is
  *racy*: its files are hashed again at the next refresh and compared with the digest of the bytes its
  facts came from, until they are old enough for the signature alone;
- written by whoever refreshes it (the daemon, ``dominds status``): SQLite serialises them.

``store/dialog_facts.py`` reads the facts, digests and signatures; ``store/index_refresh.py`` checks
them against the files; ``store/index_entries.py`` is what this module hands out; readers keep what they derive per tree here too (``store/derived.py``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from dominds.ids import is_dialog_id
from dominds.rtws import DIALOG_STATUSES, Rtws
from dominds.store.dialog_facts import read_dialog
from dominds.store.index_entries import LIGHT_COLUMNS, Entry, Heavy, Tree, columns, tree_key
from dominds.store.index_recent import recent_trees
from dominds.store.index_refresh import Refresh, heavy_of

INDEX_VERSION = 9
"""Bump when the facts change shape: an index of another version is rebuilt (every dialog read again:
minutes at 100,000 dialogs, so not for a change an older index can live with). Not bumped for the kept
course files (``courses`` in the facts, absent from older rows: such a dialog is read whole once more)
nor for ``content_digest`` now hashing per-file digests (an older row's digest is only compared while
the row is racy, and a mismatch costs one read)."""
RACY_SECONDS = 2.0
"""Files changed this recently when read are checked by their bytes at the next refresh (mtime granularity)."""
ROOTS_PER_QUERY = 256
"""Trees whose rows one query reads (a refresh of 100,000 dialogs neither runs a query per tree nor
holds every row at once)."""

_SCHEMA = (
    # what every refresh reads, small rows in tree order; the facts apart (read only when asked for)
    "CREATE TABLE IF NOT EXISTS dialogs (status TEXT, root_id TEXT, self_id TEXT, sig TEXT, digest TEXT,"
    " racy INTEGER, watch TEXT, files TEXT, sup TEXT, last_modified TEXT, q4h_count INTEGER, run_kind TEXT,"
    " PRIMARY KEY (status, root_id, self_id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS facts (key TEXT PRIMARY KEY, sig TEXT, digest TEXT, facts TEXT, public TEXT, generations TEXT);"
    "CREATE TABLE IF NOT EXISTS trees (key TEXT PRIMARY KEY, sig TEXT, subs TEXT, settled TEXT);"
    "CREATE TABLE IF NOT EXISTS derived (purpose TEXT, tree TEXT, sig TEXT, value TEXT, PRIMARY KEY (purpose, tree));"
)


class DialogIndex:
    """Facts of every dialog of a workspace, refreshed from the files on demand (see the module doc).

    One connection is used by one thread at a time (the daemon's listing opens its own index)."""

    def __init__(self, rtws: Rtws, *, persistent: bool = True) -> None:
        """``persistent=False``: an index in memory only (every dialog read; nothing written)."""
        self.rtws = rtws
        self.path = rtws.cache_dir / "dialogs.sqlite"
        self.persistent = persistent
        self._db: sqlite3.Connection | None = None
        self._unwritten: list[Refresh] = []
        """Refreshes under way on this connection (an iteration suspended at a tree) whose rows are not
        written yet: another refresh writes them first, or it would read those dialogs again."""

    # -- storage -----------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        db: sqlite3.Connection | None = None
        if self.persistent:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=OFF")  # a cache: lost to a power cut, it is rebuilt
                db.execute("PRAGMA cache_size=-256")  # read in one pass: a big page cache only costs memory
                if db.execute("PRAGMA user_version").fetchone()[0] != INDEX_VERSION:
                    db.executescript(f"DROP TABLE IF EXISTS dialogs; DROP TABLE IF EXISTS facts; DROP TABLE IF EXISTS trees; DROP TABLE IF EXISTS derived; PRAGMA user_version={INDEX_VERSION};")
                db.executescript(_SCHEMA)
            except (OSError, sqlite3.Error):  # unreadable or not a database: rebuilt from the files
                if db is not None:
                    with contextlib.suppress(sqlite3.Error):
                        db.close()
                self._remove_file()
                db = None
        if db is None:  # in memory: read-only workspaces and --no-cache
            db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            db.executescript(_SCHEMA)
        self._db = db
        return db

    def _remove_file(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")

    def close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    def _retrying(self, work: Any) -> Any:
        try:
            return work()
        except sqlite3.Error:  # corrupt underneath us: start again from the files
            self.close()
            if self.persistent:
                self._remove_file()
            return work()

    def _rows(
        self, db: sqlite3.Connection, status: str, first: str, last: str, facts: bool = False
    ) -> dict[str, dict[str, tuple[Any, ...]]]:
        """The light columns of the dialogs of trees ``first``..``last`` of ``status``: rootId → selfId →
        row; with ``facts``, followed by the heavy ones (None where they were not kept for that row)."""
        out: dict[str, dict[str, tuple[Any, ...]]] = {}
        if facts:
            query = (
                f"SELECT {', '.join('d.' + c for c in LIGHT_COLUMNS.split(', '))}, f.facts, f.public, f.generations"
                " FROM dialogs d LEFT JOIN facts f ON f.key = d.status || '/' || d.root_id || '/' || d.self_id"
                " AND f.sig = d.sig AND f.digest = d.digest WHERE d.status = ? AND d.root_id BETWEEN ? AND ?"
            )
        else:
            query = f"SELECT {LIGHT_COLUMNS} FROM dialogs WHERE status = ? AND root_id BETWEEN ? AND ?"
        for row in db.execute(query, (status, first, last)):
            out.setdefault(row[0], {})[row[1]] = row[2:]
        return out

    def _load_heavy(self, entry: Entry) -> Heavy:
        """An entry's facts, fetched when first asked for (read from the files if its row changed since)."""
        found = self._connect().execute(
            "SELECT facts, public, generations FROM facts WHERE key = ? AND sig = ? AND digest = ?",
            (f"{entry.status}/{entry.root_id}/{entry.self_id}", entry.sig, entry.digest),
        ).fetchone()
        if found is not None:
            return (found[0], found[1], found[2])
        return columns(read_dialog(self._dialog_dir(entry.status, entry.root_id, entry.self_id)).facts)[1]

    def _stored_facts(self, key: str, sig: str, digest: str) -> str | None:
        """The facts JSON kept for this dialog as read with (sig, digest), or None; never the files."""
        found = self._connect().execute("SELECT facts FROM facts WHERE key = ? AND sig = ? AND digest = ?", (key, sig, digest)).fetchone()
        return str(found[0]) if found is not None and found[0] is not None else None

    def _dialog_dir(self, status: str, root_id: str, self_id: str) -> str:
        root_dir = f"{self.rtws.status_dir(status)}/{root_id}"
        return root_dir if self_id == root_id else f"{root_dir}/subdialogs/{self_id}"

    # -- reading -----------------------------------------------------------------------------------

    def entries(self, statuses: Iterable[str] = DIALOG_STATUSES, root: tuple[str, str] | None = None) -> list[Entry]:
        """Every dialog of ``statuses`` (or of the one tree ``root`` = (status, rootId)), checked against
        the files and re-read where they changed; each root before its subdialogs, trees in id order."""
        return [entry for tree in self.trees(statuses, root) for entry in tree.entries]

    def trees(
        self, statuses: Iterable[str] = DIALOG_STATUSES, root: tuple[str, str] | None = None, *, facts: bool = False
    ) -> list[Tree]:
        """``entries`` grouped by tree; ``facts``: every entry's facts read with it (a reader that shows
        them all), not on first use one by one."""
        wanted = tuple(statuses)
        return self._retrying(lambda: list(self._trees(wanted, root, facts)))  # type: ignore[no-any-return]

    def iter_trees(self, statuses: Iterable[str] = DIALOG_STATUSES) -> Iterator[Tree]:
        """``trees`` one at a time (a listing of 100,000 dialogs never holds them all); the index is
        brought up to date as they go."""
        wanted = tuple(statuses)
        # (status, rootId) of the last tree handed out: trees come in that order (statuses as given,
        # ids sorted), so a rebuild after a corrupt index skips up to it (no set of every tree seen)
        last: tuple[int, str] | None = None
        try:
            for tree in self._trees(wanted, None):
                last = (wanted.index(tree.root.status), tree.root.root_id)
                yield tree
        except sqlite3.Error:
            self.close()
            if self.persistent:
                self._remove_file()
            yield from (t for t in self._trees(wanted, None) if last is None or (wanted.index(t.root.status), t.root.root_id) > last)

    def recent_trees(self, statuses: Iterable[str], limit: int) -> tuple[list[Tree], int]:
        """(the first ``limit`` trees of ``statuses``, by status then most recent root first, refreshed
        with their facts; how many trees there are in all), without checking every dialog's files
        (``store/index_recent.py``)."""
        wanted = tuple(statuses)

        def one(status: str, root_id: str) -> Tree | None:
            found = list(self._trees((status,), (status, root_id), facts=True))
            return found[0] if found else None

        def work() -> tuple[list[Tree], int]:
            return recent_trees(self._connect(), self.rtws, wanted, limit, one)

        result: tuple[list[Tree], int] = self._retrying(work)
        return result

    def _trees(self, statuses: tuple[str, ...], root: tuple[str, str] | None, facts: bool = False) -> Iterator[Tree]:
        db = self._connect()
        for earlier in self._unwritten:  # e.g. recovery settling a tree in the middle of its first refresh
            earlier.write(db)
        refresh = Refresh(self._load_heavy, RACY_SECONDS, self._stored_facts)
        self._unwritten.append(refresh)
        try:
            yield from self._refreshed_trees(db, refresh, statuses, root, facts)
        finally:
            self._unwritten.remove(refresh)

    def _refreshed_trees(
        self, db: sqlite3.Connection, refresh: Refresh, statuses: tuple[str, ...], root: tuple[str, str] | None, facts: bool
    ) -> Iterator[Tree]:
        for status in (root[0],) if root else statuses:
            directory = str(self.rtws.status_dir(status))
            if root is not None:
                root_ids = [root[1]] if os.path.isdir(f"{directory}/{root[1]}") else []
            else:
                try:
                    root_ids = sorted(e.name for e in os.scandir(directory) if e.is_dir(follow_symlinks=False) and is_dialog_id(e.name))
                except FileNotFoundError:
                    root_ids = []
            above = f"{status}/"  # the index's trees with a key above this are not compared with the directory yet
            for start in range(0, len(root_ids), ROOTS_PER_QUERY):
                chunk = root_ids[start : start + ROOTS_PER_QUERY]
                rows = self._rows(db, status, chunk[0], chunk[-1], facts)
                # The index's trees of this chunk's range, one query per chunk: at 100,000 dialogs a
                # dict of every tree of the status took 8 MB, and the daemon's memory stayed that high.
                last = f"{status}/{chunk[-1]}"
                if root is not None:
                    found = db.execute("SELECT key, sig, subs, settled FROM trees WHERE key = ?", (last,))
                else:
                    found = db.execute("SELECT key, sig, subs, settled FROM trees WHERE key > ? AND key <= ?", (above, last))
                    above = last
                known = {key.partition("/")[2]: (sig, subs, settled) for key, sig, subs, settled in found}
                for root_id in chunk:
                    yield refresh.tree(status, f"{directory}/{root_id}", root_id, known.pop(root_id, None), rows.get(root_id, {}))
                    if refresh.big:
                        refresh.write(db)
                if root is None:
                    self._forget_roots(db, refresh, status, list(known))  # in the index, not in the directory
            if root is None:
                gone = [key.partition("/")[2] for (key,) in db.execute("SELECT key FROM trees WHERE key > ? AND key < ?", (above, f"{status}0"))]
                self._forget_roots(db, refresh, status, gone)
        refresh.write(db)

    @staticmethod
    def _forget_roots(db: sqlite3.Connection, refresh: Refresh, status: str, root_ids: list[str]) -> None:
        """Trees the index holds whose directories are gone."""
        for gone_root in root_ids:
            refresh.trees.append((f"{status}/{gone_root}", None, None))
            db.execute("DELETE FROM dialogs WHERE status = ? AND root_id = ?", (status, gone_root))
            db.execute("DELETE FROM facts WHERE key > ? AND key < ?", (f"{status}/{gone_root}/", f"{status}/{gone_root}0"))
            db.execute("DELETE FROM derived WHERE tree = ?", (f"{status}/{gone_root}",))

    def stored_tree(self, status: str, root_id: str) -> Tree | None:
        """One tree as the index holds it, without checking the files again (right after a refresh:
        a listing sends trees one by one in its own order)."""

        def work() -> Tree | None:
            db = self._connect()
            found = db.execute("SELECT subs, settled FROM trees WHERE key = ?", (f"{status}/{root_id}",)).fetchone()
            rows = self._rows(db, status, root_id, root_id, facts=True).get(root_id, {})
            if found is None or root_id not in rows:
                return None
            entries = [
                Entry(status, root_id, self_id, rows[self_id][:9], heavy_of(rows[self_id]), self._load_heavy)
                for self_id in (root_id, *found[0].split())
                if self_id in rows
            ]
            return Tree(entries[0], entries[1:], found[1] is not None and found[1] == tree_key(entries))

        result: Tree | None = self._retrying(work)
        return result

    # -- what readers derive per tree ---------------------------------------------------------------

    def derived(self, purpose: str, trees: list[str] | None = None) -> dict[str, tuple[str, str]]:
        """What a reader kept per tree for ``purpose`` (see ``Derived``): "status/rootId" → (key, value);
        every tree's, or only those of ``trees`` (one query)."""

        def work() -> dict[str, tuple[str, str]]:
            db = self._connect()
            if trees is None:
                rows = db.execute("SELECT tree, sig, value FROM derived WHERE purpose = ?", (purpose,))
            else:
                marks = ",".join("?" * len(trees))
                rows = db.execute(f"SELECT tree, sig, value FROM derived WHERE purpose = ? AND tree IN ({marks})", (purpose, *trees))
            return {name: (sig, value) for name, sig, value in rows}

        found: dict[str, tuple[str, str]] = self._retrying(work)
        return found

    def keep_derived(self, purpose: str, rows: list[tuple[str, str, str]]) -> None:
        """Keep (tree "status/rootId", key, value) rows for ``purpose`` (a cache of a cache: a failed
        write costs only time; the rows of a tree that is gone go with it)."""
        if not rows:
            return
        try:
            db = self._connect()
            db.execute("BEGIN")
            db.executemany(
                "INSERT OR REPLACE INTO derived VALUES (?,?,?,?)", [(purpose, tree, key, value) for tree, key, value in rows]
            )
            db.execute("COMMIT")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                self._connect().execute("ROLLBACK")

    # -- the daemon's notes ------------------------------------------------------------------------

    def settle(self, status: str, root_id: str) -> bool:
        """Note that the daemon left this whole tree at rest, as its files are now: the next start need
        not recover it while they hold exactly these bytes. False when the tree is gone."""

        def work() -> bool:
            trees = list(self._trees((status,), (status, root_id)))
            if not trees:
                return False
            self._connect().execute("UPDATE trees SET settled = ? WHERE key = ?", (trees[0].sig, f"{status}/{root_id}"))
            return True

        return bool(self._retrying(work))


    def note_settled(self, trees: list[tuple[str, str, str]]) -> None:
        """``settle`` for trees just refreshed and found at rest: (status, rootId, ``Tree.sig``) each, the
        key taken by that refresh (a note that no longer matches the files is simply never used)."""
        if trees:
            self._retrying(
                lambda: self._connect().executemany(
                    "UPDATE trees SET settled = ? WHERE key = ?", [(sig, f"{status}/{root_id}") for status, root_id, sig in trees]
                )
            )
