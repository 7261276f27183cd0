"""One refresh of the dialog index (``store/index.py``): each tree and dialog checked against its files
(signature, and the bytes' digest for a racy dialog) and read again where they changed, the rows to
write collected as it goes."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from dominds.ids import is_dialog_id
from dominds.store.dialog_facts import Kept, current_digest, kept_courses, read_dialog, signature, stat_key
from dominds.store.index_entries import Entry, Heavy, Tree, columns, tree_key


class Refresh:
    """One refresh: the clock it judges "too recent" by, and the rows it has yet to write."""

    def __init__(
        self, load: Callable[[Entry], Heavy], racy_seconds: float, stored_facts: Callable[[str, str, str], str | None] | None = None
    ) -> None:
        self.load = load
        """Where an entry's facts are fetched from when first asked for."""
        self.stored_facts = stored_facts
        """The facts JSON the index holds for (key, sig, digest), or None (never read from the files)."""
        self.now_ns = time.time_ns()
        self.racy_ns = racy_seconds * 1e9
        self.dialogs: list[tuple[Any, ...]] = []
        self.trees: list[tuple[Any, ...]] = []
        self.calm: list[tuple[str, str, str, str, str]] = []
        """Racy rows whose bytes were found unchanged once old enough: the signature suffices from now on."""

    @property
    def big(self) -> bool:
        return len(self.dialogs) + len(self.calm) + len(self.trees) > 500

    def tree(self, status: str, root_dir: str, root_id: str, known: tuple[Any, ...] | None, rows: dict[str, tuple[Any, ...]]) -> Tree:
        subs_dir = f"{root_dir}/subdialogs"
        subs_sig = stat_key(subs_dir)
        if known is not None and known[0] == subs_sig:
            sub_ids = known[1].split()
        else:
            try:
                sub_ids = sorted(e.name for e in os.scandir(subs_dir) if e.is_dir(follow_symlinks=False) and is_dialog_id(e.name))
            except OSError:
                sub_ids = []
            stored = "racy" if self.now_ns - _mtime_of(subs_sig) < self.racy_ns else subs_sig
            self.trees.append((f"{status}/{root_id}", stored, " ".join(sub_ids)))
            known = (stored, " ".join(sub_ids), known[2] if known is not None else None)
        entries = [
            self.entry(status, root_id, self_id, root_dir if self_id == root_id else f"{subs_dir}/{self_id}", rows.pop(self_id, None))
            for self_id in (root_id, *sub_ids)
        ]
        for gone in rows:
            self.dialogs.append((f"{status}/{root_id}/{gone}", status, root_id, gone))
        key = tree_key(entries)
        return Tree(entries[0], entries[1:], known[2] is not None and known[2] == key, key)

    def entry(self, status: str, root_id: str, self_id: str, path: str, row: tuple[Any, ...] | None) -> Entry:
        kept: Kept | None = None
        if row is not None:
            sig, newest = signature(path, row[3].split())
            if sig == row[0] and (not row[2] or current_digest(path, kept := self._kept(status, root_id, self_id, row)) == row[1]):
                if row[2] and self.now_ns - newest >= self.racy_ns:
                    self.calm.append((status, root_id, self_id, row[0], row[1]))
                    row = (*row[:2], 0, *row[3:])
                return Entry(status, root_id, self_id, row[:9], heavy_of(row), self.load)
            if kept is None:
                kept = self._kept(status, root_id, self_id, row)
        # a dialog that changed: its finished courses kept from the last read are not read again
        read = read_dialog(path, kept, int(self.now_ns - self.racy_ns))
        sig, newest = signature(path, read.watch)
        light, heavy = columns(read.facts)
        row = (sig, read.digest, int(self.now_ns - newest < self.racy_ns), " ".join(read.watch), *light)
        self.dialogs.append((f"{status}/{root_id}/{self_id}", status, root_id, self_id, *row, *heavy))
        return Entry(status, root_id, self_id, row, heavy, facts=read.facts)

    def _kept(self, status: str, root_id: str, self_id: str, row: tuple[Any, ...]) -> Kept | None:
        """What the index kept of this dialog's finished course files at its last read."""
        heavy = heavy_of(row)
        if heavy is not None:
            text: str | None = heavy[0]
        elif self.stored_facts is not None:
            text = self.stored_facts(f"{status}/{root_id}/{self_id}", row[0], row[1])
        else:
            return None
        if not text or '"courses"' not in text:
            return None
        try:
            facts = json.loads(text)
        except ValueError:
            return None
        return kept_courses(facts) if isinstance(facts, dict) else None

    def write(self, db: sqlite3.Connection) -> None:
        if not self.dialogs and not self.trees and not self.calm:
            return
        db.execute("BEGIN")
        try:
            for row in self.dialogs:
                if len(row) == 4:
                    db.execute("DELETE FROM dialogs WHERE status = ? AND root_id = ? AND self_id = ?", row[1:])
                    db.execute("DELETE FROM facts WHERE key = ?", row[:1])
                else:
                    db.execute("INSERT OR REPLACE INTO dialogs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", row[1:13])
                    db.execute("INSERT OR REPLACE INTO facts VALUES (?,?,?,?,?,?)", (row[0], row[4], row[5], *row[13:]))
            db.executemany(
                "UPDATE dialogs SET racy = 0 WHERE status = ? AND root_id = ? AND self_id = ? AND sig = ? AND digest = ?", self.calm
            )
            for key, sig, subs in self.trees:
                if sig is None:
                    db.execute("DELETE FROM trees WHERE key = ?", (key,))
                else:  # a settled note stays: it names every dialog of the tree (``tree_key``), so it
                    # can only match the tree it was taken of (a refresh running since must not erase it)
                    db.execute(
                        "INSERT INTO trees VALUES (?,?,?,NULL) ON CONFLICT(key) DO UPDATE SET sig = excluded.sig, subs = excluded.subs",
                        (key, sig, subs),
                    )
            db.execute("COMMIT")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        self.dialogs.clear()
        self.trees.clear()
        self.calm.clear()


def heavy_of(row: tuple[Any, ...]) -> Heavy | None:
    """The heavy columns that follow a row's light ones, if they were read and kept."""
    return (row[9], row[10], row[11]) if len(row) > 9 and row[9] is not None else None


def _mtime_of(stat_key: str) -> int:
    try:
        return int(stat_key.rsplit(".", 1)[1])
    except (IndexError, ValueError):
        return 0
