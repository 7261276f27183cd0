"""The dialog index: what listings need about every dialog, kept in SQLite as a cache of the files.

Listings (the panel's ``/api/dialogs``, ``dominds status``) and the daemon's start-up scan need a few
facts about every dialog — agent, run state, questions, pending subdialogs, registry keys, tokens per
model — and reading them from ``dialog.yaml``, ``latest.yaml`` and the course files of 10,000 dialogs
takes seconds. The index keeps those facts per dialog together with the *signature* of the files they
were read from, in ``.dominds/cache/dialogs.sqlite``:

- **a cache, never the only copy**: every fact is re-read from the files whenever they changed; delete
  the file (or let it be corrupt) and it is rebuilt from the files on the next refresh;
- **checked against the files** on every refresh: per dialog the directory (a file created, replaced,
  renamed or removed changes its mtime), ``dialog.yaml``, ``latest.yaml`` and the current course file
  (inode, size, mtime) are ``stat``-ed, so hand edits, other writers and a crash between a write and the
  index update are all seen; a dialog whose files changed within the last two seconds is read again on
  the next refresh too (a file rewritten in place within the clock's granularity keeps its mtime);
- written by whoever refreshes it (the daemon, ``dominds status``): SQLite serialises them.

``read_facts`` is the one place that turns a dialog directory into facts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from dominds.ids import is_dialog_id
from dominds.rtws import DIALOG_STATUSES, Rtws
from dominds.store import fastyaml

INDEX_VERSION = 7
"""Bump when the facts change shape: an index of another version is rebuilt."""
USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
STATE_FILES = ("dialog.yaml", "latest.yaml", "q4h.yaml", "subdlg.yaml", "registry.yaml")
RACY_SECONDS = 2.0
"""Files changed this recently when read are read again on the next refresh (mtime granularity)."""
Facts = dict[str, Any]


# ---------------------------------------------------------------- facts from the files


def read_state_yaml(path: str) -> Any:
    """A state file as plain data (None when missing); ``ValueError`` when it is not valid YAML."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    try:
        return fastyaml.load(text)
    except fastyaml.NotFastYaml:
        import yaml

        try:
            return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise ValueError(f"{os.path.basename(path)} is not valid YAML: {' '.join(str(exc).split())[:200]}") from exc


def read_facts(directory: str) -> Facts:
    """One dialog's facts from its files; a corrupt file becomes ``error``, never an exception."""
    facts: Facts = {"selfId": os.path.basename(directory)}
    try:
        present = {e.name for e in os.scandir(directory) if e.is_file()}
    except OSError as exc:
        return {**facts, "error": f"cannot list {directory}: {exc.strerror or exc}", "runState": {"kind": "error"}}
    facts["files"] = sorted(n for n in present if n in STATE_FILES)
    strays = sorted(n for n in present if n.startswith(".") and n.endswith(".tmp"))
    if strays:  # temp files of atomic writes (a kill interrupted them, or one is being written now)
        facts["strayTemps"] = strays
    try:
        meta = _valid(directory, "dialog.yaml") or {}
        latest = _valid(directory, "latest.yaml") or {}
        facts.update(
            agentId=meta.get("agentId"),
            title=latest.get("title") or meta.get("title"),
            taskDocPath=meta.get("taskDocPath"),
            createdAt=meta.get("createdAt"),
            conductor=meta.get("conductor"),
            lastModified=latest.get("lastModified"),
            currentCourse=latest.get("currentCourse", 1),
            runState=latest.get("runState") or {"kind": "idle"},
            generating=bool(latest.get("generating")),
            needsDrive=bool(latest.get("needsDrive")),
            queuedPrompts=len(latest.get("queuedPrompts") or ()),
            inboundTellaskBacks=len(latest.get("inboundTellaskBacks") or ()),
            dead=bool(latest.get("dead")),
        )
        if meta.get("id") != meta.get("rootId"):
            assignment = meta.get("assignmentFromSup") or {}
            facts.update(
                supdialogId=meta.get("supdialogId"),
                tellaskSession=meta.get("tellaskSession"),
                callType=assignment.get("callType"),
                tellaskHead=assignment.get("tellaskHead"),
                fbr=bool(meta.get("fbr")),
            )
        if "q4h.yaml" in present:
            questions = (_valid(directory, "q4h.yaml") or {}).get("questions") or []
            facts["q4h"] = [{"id": q.get("id"), "tellaskHead": q.get("tellaskHead")} for q in questions]
        if "subdlg.yaml" in present:
            pending = (_valid(directory, "subdlg.yaml") or {}).get("pending") or []
            facts["pendingSubdialogs"] = [
                {k: p.get(k) for k in ("subdialogId", "agentId", "callType", "tellaskSession")} for p in pending
            ]
        if "registry.yaml" in present:
            registry = _valid(directory, "registry.yaml") or {}
            facts["registry"] = [{"key": key, "subdialogId": e.get("subdialogId")} for key, e in registry.items()]
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        facts["error"] = f"{type(exc).__name__}: {exc}"
        facts.setdefault("runState", {"kind": "error", "detail": str(exc)})
    courses = sorted(n for n in present if n.startswith("course-") and n.endswith(".jsonl"))
    facts["generations"] = _course_usage(directory, courses, facts)
    return facts


def _valid(directory: str, name: str) -> Any:
    """A state file's data, checked against its record type as the daemon checks it when it loads it."""
    from pydantic import ValidationError

    from dominds.store import records

    data = read_state_yaml(f"{directory}/{name}")
    if data is None:
        return None
    models: dict[str, type[records.Record]] = {
        "dialog.yaml": records.DialogMeta,
        "latest.yaml": records.LatestState,
        "q4h.yaml": records.Q4hFile,
        "subdlg.yaml": records.SubdlgFile,
    }
    model = models.get(name)
    try:
        if not isinstance(data, dict):
            raise ValueError(f"expected a mapping, found {type(data).__name__}")
        if model is not None:
            model.model_validate(data)
        else:  # registry.yaml: a map of agentId!tellaskSession -> entry
            for entry in data.values():
                records.RegistryEntry.model_validate(entry)
    except (ValidationError, ValueError, AttributeError) as exc:
        raise ValueError(f"{name} does not match its format: {' '.join(str(exc).split())[:300]}") from exc
    return data


def finish_generations(data: bytes) -> list[list[Any]]:
    """The generations recorded in one course file's bytes: ``[provider/model, input, output, cacheRead,
    cacheWrite, cacheWriteLong]`` each. Only the ``gen_finish_record`` lines are decoded (found by a byte
    search); a torn last line is skipped until it is complete. ``driver/usage.py`` prices them."""
    out: list[list[Any]] = []
    start = 0
    while (found := data.find(_FINISH_MARK, start)) != -1:
        line_start = data.rfind(b"\n", 0, found) + 1
        line_end = data.find(b"\n", found)
        start = len(data) if line_end == -1 else line_end
        try:
            record = json.loads(data[line_start:start])
        except ValueError:
            continue  # a torn last line: that generation is counted once it is complete
        raw = record.get("usage") if isinstance(record, dict) else None
        if not isinstance(raw, dict):
            continue
        key = f"{record.get('provider') or ''}/{record.get('model') or ''}"
        out.append([key, *(_count(raw.get(f)) for f in (*USAGE_FIELDS, "cacheWriteLongTokens"))])
    return out


_FINISH_MARK = b'"gen_finish_record"'


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _course_usage(directory: str, course_files: list[str], facts: Facts) -> list[list[Any]]:
    """Every generation of every course (``finish_generations``); a line in the middle of a course that
    is not a JSON record marks the dialog with an error (the daemon refuses such a dialog); a torn last
    line does not (it is what a crash leaves)."""
    gens: list[list[Any]] = []
    for name in course_files:
        try:
            with open(os.path.join(directory, name), "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        bad = _bad_course_line(data)
        if bad is not None and "error" not in facts:
            facts["error"] = f"{name}:{bad}: not a JSON record (the dialog refuses messages until it is repaired)"
            facts["runState"] = {"kind": "error", "detail": facts["error"]}
        gens += finish_generations(data)
    return gens


def _bad_course_line(data: bytes) -> int | None:
    """Number of the first line before the last that is not shaped like a JSON object, or None (cheap)."""
    lines = data.rstrip(b"\n").split(b"\n")
    for number, line in enumerate(lines[:-1], start=1):
        stripped = line.strip()
        if stripped and not (stripped.startswith(b"{") and stripped.endswith(b"}")):
            return number
    return None


# ---------------------------------------------------------------- signatures


def _stat_key(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_ino}.{st.st_size}.{st.st_mtime_ns}"


_ALWAYS_READ = frozenset({"dialog.yaml", "latest.yaml"})


def signature(directory: str, course: int, files: Iterable[str]) -> tuple[str, int]:
    """What the facts of this directory were read from: (signature, newest mtime in ns).

    The directory's mtime (a file created, replaced by rename, or removed), and inode, size and mtime of
    ``dialog.yaml``, ``latest.yaml``, the current course file and the other state files that exist
    (a file edited in place)."""
    try:
        newest = os.stat(directory).st_mtime_ns
    except OSError:
        return "gone", 0
    names = ["dialog.yaml", "latest.yaml", f"course-{course:03d}.jsonl"]
    names += [n for n in files if n not in _ALWAYS_READ]
    parts = [str(newest)]
    for name in names:
        try:
            st = os.stat(f"{directory}/{name}")
        except OSError:
            parts.append("-")
            continue
        parts.append(f"{st.st_ino}.{st.st_size}.{st.st_mtime_ns}")
        if st.st_mtime_ns > newest:
            newest = st.st_mtime_ns
    return "|".join(parts), newest


def _course_of(facts: Facts) -> int:
    try:
        return int(facts.get("currentCourse") or 1)
    except (TypeError, ValueError):
        return 1


# ---------------------------------------------------------------- the index


PRIVATE_FACTS = frozenset({"selfId", "files", "generations", "conductor", "inboundTellaskBacks", "dead", "strayTemps"})
"""Facts the index keeps for the daemon (recovery, cost) but a listing does not show as they are."""


class Entry:
    """One dialog as the index knows it; its facts are decoded on first use.

    ``public`` (the facts a listing shows, as JSON text), ``sup``, ``last_modified``, ``q4h_count``,
    ``run_kind`` and ``generations`` (JSON text) are kept apart so a listing can be assembled without
    decoding the facts."""

    __slots__ = (
        "_facts", "_raw", "files", "last_modified", "public", "q4h_count", "root_id", "run_kind", "self_id", "sig",
        "status", "sup", "generations",
    )

    def __init__(self, status: str, root_id: str, self_id: str, sig: str, facts: Facts | str, columns: tuple[Any, ...]) -> None:
        self.status = status
        self.root_id = root_id
        self.self_id = self_id
        self.sig = sig
        """The signature of its files when this entry was checked ("racy": changed too recently to trust)."""
        self._raw = facts if isinstance(facts, str) else None
        self._facts = facts if isinstance(facts, dict) else None
        files, self.public, self.sup, self.last_modified, self.q4h_count, self.run_kind, self.generations = columns
        self.files: list[str] = files.split()
        """The state files it has (``q4h.yaml`` and so on)."""

    @property
    def facts(self) -> Facts:
        if self._facts is None:
            self._facts = json.loads(self._raw or "{}")
            self._raw = None
        return self._facts


def _columns(facts: Facts) -> tuple[Any, ...]:
    """(files, public JSON, supdialogId, lastModified, questions, run state kind, generations JSON) of some facts."""
    public = {k: v for k, v in facts.items() if k not in PRIVATE_FACTS and v is not None}
    public.setdefault("runState", {"kind": "idle"})
    return (
        " ".join(facts.get("files") or ()),
        json.dumps(public, ensure_ascii=False, separators=(",", ":")),
        facts.get("supdialogId"),
        facts.get("lastModified") or "",
        len(facts.get("q4h") or ()),
        str((public.get("runState") or {}).get("kind")),
        json.dumps(facts.get("generations") or [], separators=(",", ":")),
    )


@dataclass
class Tree:
    """A root and its subdialogs (flat, in id order) as the index knows them."""

    root: Entry
    subs: list[Entry]
    settled: bool
    """Its files are exactly as they were when the daemon last left the whole tree at rest."""

    @property
    def entries(self) -> list[Entry]:
        return [self.root, *self.subs]

    @property
    def sig(self) -> str | None:
        """The signatures of all its dialogs together; None while any changed too recently to trust."""
        return _tree_sig(self.entries)


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS dialogs (key TEXT PRIMARY KEY, status TEXT, root_id TEXT, self_id TEXT,"
    " sig TEXT, course INTEGER, facts TEXT, files TEXT, public TEXT, sup TEXT, last_modified TEXT,"
    " q4h_count INTEGER, run_kind TEXT, generations TEXT);"
    "CREATE INDEX IF NOT EXISTS dialogs_tree ON dialogs (status, root_id);"
    "CREATE TABLE IF NOT EXISTS trees (key TEXT PRIMARY KEY, sig TEXT, subs TEXT, settled TEXT);"
    "CREATE TABLE IF NOT EXISTS derived (purpose TEXT, tree TEXT, sig TEXT, value TEXT, PRIMARY KEY (purpose, tree));"
)


class DialogIndex:
    """Facts of every dialog of a workspace, refreshed from the files on demand (see the module doc)."""

    def __init__(self, rtws: Rtws, *, persistent: bool = True) -> None:
        """``persistent=False``: an index in memory only (every dialog read; nothing written)."""
        self.rtws = rtws
        self.path = rtws.state_dir / "cache" / "dialogs.sqlite"
        self.persistent = persistent
        self._db: sqlite3.Connection | None = None

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
                if db.execute("PRAGMA user_version").fetchone()[0] != INDEX_VERSION:
                    db.executescript(f"DROP TABLE IF EXISTS dialogs; DROP TABLE IF EXISTS trees; DROP TABLE IF EXISTS derived; PRAGMA user_version={INDEX_VERSION};")
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

    # -- reading -----------------------------------------------------------------------------------

    def entries(self, statuses: Iterable[str] = DIALOG_STATUSES, root: tuple[str, str] | None = None) -> list[Entry]:
        """Every dialog of ``statuses`` (or of the one tree ``root`` = (status, rootId)), checked against
        the files and re-read where they changed; each root before its subdialogs, trees in id order."""
        return [entry for tree in self.trees(statuses, root) for entry in tree.entries]

    def trees(self, statuses: Iterable[str] = DIALOG_STATUSES, root: tuple[str, str] | None = None) -> list[Tree]:
        """``entries`` grouped by tree."""
        wanted = tuple(statuses)
        return self._retrying(lambda: list(self._trees(wanted, root)))  # type: ignore[no-any-return]

    def iter_trees(self, statuses: Iterable[str] = DIALOG_STATUSES) -> Iterator[Tree]:
        """``trees`` one at a time (a listing of 100,000 dialogs never holds them all); the index is
        brought up to date as they go."""
        wanted = tuple(statuses)
        try:
            yield from self._trees(wanted, None)
        except sqlite3.Error:
            self.close()
            if self.persistent:
                self._remove_file()
            yield from self._trees(wanted, None)

    def _trees(self, statuses: tuple[str, ...], root: tuple[str, str] | None) -> Iterator[Tree]:
        db = self._connect()
        now_ns = time.time_ns()
        racy_ns = RACY_SECONDS * 1e9
        pending: list[tuple[Any, ...]] = []
        pending_trees: list[tuple[Any, ...]] = []
        for status in (root[0],) if root else statuses:
            directory = str(self.rtws.status_dir(status))
            if root is not None:
                root_ids = [root[1]] if os.path.isdir(f"{directory}/{root[1]}") else []
            else:
                try:
                    root_ids = sorted(e.name for e in os.scandir(directory) if e.is_dir() and is_dialog_id(e.name))
                except FileNotFoundError:
                    root_ids = []
            args: tuple[str, ...]
            if root is not None:
                query, args = "SELECT key, sig, subs, settled FROM trees WHERE key = ?", (f"{status}/{root[1]}",)
            else:
                query, args = "SELECT key, sig, subs, settled FROM trees WHERE key >= ? AND key < ?", (f"{status}/", f"{status}0")
            trees_known = {key.partition("/")[2]: (sig, subs, settled) for key, sig, subs, settled in db.execute(query, args)}
            seen_roots = set()
            for root_id in root_ids:
                seen_roots.add(root_id)
                root_dir = f"{directory}/{root_id}"
                subs_dir = f"{root_dir}/subdialogs"
                subs_sig = _stat_key(subs_dir)
                tree_known = trees_known.get(root_id)
                if tree_known is not None and tree_known[0] == subs_sig:
                    sub_ids = tree_known[1].split()
                else:
                    try:
                        sub_ids = sorted(e.name for e in os.scandir(subs_dir) if e.is_dir() and is_dialog_id(e.name))
                    except OSError:
                        sub_ids = []
                    stored = "racy" if now_ns - _mtime_of(subs_sig) < racy_ns else subs_sig
                    pending_trees.append((f"{status}/{root_id}", stored, " ".join(sub_ids), None))
                    tree_known = (stored, " ".join(sub_ids), None)
                rows = {
                    row[0]: row[1:]
                    for row in db.execute(
                        "SELECT self_id, sig, course, facts, files, public, sup, last_modified, q4h_count, run_kind, generations"
                        " FROM dialogs WHERE status = ? AND root_id = ?",
                        (status, root_id),
                    )
                }
                entries = []
                for self_id in (root_id, *sub_ids):
                    path = root_dir if self_id == root_id else f"{subs_dir}/{self_id}"
                    row = rows.pop(self_id, None)
                    if row is not None:
                        sig, newest = signature(path, row[1], row[3].split())
                        if sig == row[0]:
                            entries.append(Entry(status, root_id, self_id, sig, row[2], row[3:]))
                            continue
                    facts = read_facts(path)
                    course, columns = _course_of(facts), _columns(facts)
                    sig, newest = signature(path, course, facts.get("files") or ())
                    stored = "racy" if now_ns - newest < racy_ns else sig
                    pending.append(
                        (f"{status}/{root_id}/{self_id}", status, root_id, self_id, stored, course,
                         json.dumps(facts, separators=(",", ":")), *columns)
                    )
                    entries.append(Entry(status, root_id, self_id, stored, facts, columns))
                for gone in rows:
                    pending.append((f"{status}/{root_id}/{gone}", None))
                settled = tree_known[2] is not None and tree_known[2] == _tree_sig(entries)
                yield Tree(entries[0], entries[1:], settled)
                if len(pending) > 500:
                    self._write(db, pending, pending_trees)
            if root is None:
                for gone_root in set(trees_known) - seen_roots:
                    pending_trees.append((f"{status}/{gone_root}", None, None, None))
                    db.execute("DELETE FROM dialogs WHERE status = ? AND root_id = ?", (status, gone_root))
                    db.execute("DELETE FROM derived WHERE tree = ?", (f"{status}/{gone_root}",))
        self._write(db, pending, pending_trees)

    @staticmethod
    def _write(db: sqlite3.Connection, dialogs: list[tuple[Any, ...]], trees: list[tuple[Any, ...]]) -> None:
        if not dialogs and not trees:
            return
        db.execute("BEGIN")
        try:
            for row in dialogs:
                if row[1] is None:
                    db.execute("DELETE FROM dialogs WHERE key = ?", (row[0],))
                else:
                    db.execute("INSERT OR REPLACE INTO dialogs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row)
            for key, sig, subs, settled in trees:
                if sig is None:
                    db.execute("DELETE FROM trees WHERE key = ?", (key,))
                else:  # a new list of subdialogs: the tree is no longer known to be at rest
                    db.execute("INSERT OR REPLACE INTO trees VALUES (?,?,?,?)", (key, sig, subs, settled))
            db.execute("COMMIT")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        dialogs.clear()
        trees.clear()

    def stored_tree(self, status: str, root_id: str) -> Tree | None:
        """One tree as the index holds it, without checking the files again (right after a refresh:
        a listing sends trees one by one in its own order)."""

        def work() -> Tree | None:
            db = self._connect()
            found = db.execute("SELECT subs, settled FROM trees WHERE key = ?", (f"{status}/{root_id}",)).fetchone()
            rows = {
                row[0]: row[1:]
                for row in db.execute(
                    "SELECT self_id, sig, facts, files, public, sup, last_modified, q4h_count, run_kind, generations"
                    " FROM dialogs WHERE status = ? AND root_id = ?",
                    (status, root_id),
                )
            }
            if found is None or root_id not in rows:
                return None
            entries = [
                Entry(status, root_id, self_id, rows[self_id][0], rows[self_id][1], rows[self_id][2:])
                for self_id in (root_id, *found[0].split())
                if self_id in rows
            ]
            return Tree(entries[0], entries[1:], found[1] is not None and found[1] == _tree_sig(entries))

        result: Tree | None = self._retrying(work)
        return result

    # -- what readers derive per tree ---------------------------------------------------------------

    def derived(self, purpose: str, tree: str | None = None) -> dict[str, tuple[str, str]]:
        """What a reader kept per tree for ``purpose`` (see ``Derived``): "status/rootId" → (key, value);
        every tree's, or only ``tree``'s."""

        def work() -> dict[str, tuple[str, str]]:
            db = self._connect()
            if tree is None:
                rows = db.execute("SELECT tree, sig, value FROM derived WHERE purpose = ?", (purpose,))
            else:
                rows = db.execute("SELECT tree, sig, value FROM derived WHERE purpose = ? AND tree = ?", (purpose, tree))
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
        not recover it while they stay exactly so. False when they changed too recently to tell."""

        def work() -> bool:
            trees = list(self._trees((status,), (status, root_id)))
            if not trees:
                return False
            sig = _tree_sig(trees[0].entries)
            if sig is None:
                return False
            self._connect().execute("UPDATE trees SET settled = ? WHERE key = ?", (sig, f"{status}/{root_id}"))
            return True

        return bool(self._retrying(work))


class Derived:
    """What a reader computes per tree from its entries (a listing's JSON text, tokens and cost), kept in
    the index so an unchanged tree is not computed again.

    A value is found only under the key it was kept with: the tree's signature (``Tree.sig``: every file
    of every dialog, so any change to the tree misses) and the reader's ``salt`` (whatever else the value
    depends on: prices, the code's version). A tree that changed too recently to trust is never kept.
    ``preload`` reads every kept value at once (a one-shot command); otherwise one tree at a time (the
    daemon: its memory must not grow with the number of dialogs)."""

    FLUSH = 500

    def __init__(self, index: DialogIndex, purpose: str, salt: str, *, preload: bool) -> None:
        self.index = index
        self.purpose = purpose
        self.salt = salt
        self.known = index.derived(purpose) if preload else None
        self.fresh: list[tuple[str, str, str]] = []

    def get(self, tree: Tree) -> str | None:
        return self.lookup(tree.root.status, tree.root.root_id, tree.sig)

    def put(self, tree: Tree, value: str) -> None:
        self.keep(tree.root.status, tree.root.root_id, tree.sig, value)

    def lookup(self, status: str, root_id: str, sig: str | None) -> str | None:
        """The value kept for this tree as it is now (``sig``: its ``Tree.sig``), or None."""
        if sig is None:
            return None
        name = f"{status}/{root_id}"
        found = (self.known if self.known is not None else self.index.derived(self.purpose, name)).get(name)
        return found[1] if found is not None and found[0] == f"{self.salt}:{sig}" else None

    def keep(self, status: str, root_id: str, sig: str | None, value: str) -> None:
        if sig is not None:  # a tree that changed too recently to trust is computed again next time
            self.fresh.append((f"{status}/{root_id}", f"{self.salt}:{sig}", value))
            if len(self.fresh) >= self.FLUSH:
                self.save()

    def save(self) -> None:
        self.index.keep_derived(self.purpose, self.fresh)
        self.fresh.clear()


def _tree_sig(entries: list[Entry]) -> str | None:
    """The signatures of every dialog of a tree together (None while any of them is too recent to trust)."""
    if any(e.sig == "racy" for e in entries):
        return None
    return hashlib.blake2b("\n".join(f"{e.self_id}:{e.sig}" for e in entries).encode(), digest_size=12).hexdigest()


def _mtime_of(stat_key: str) -> int:
    try:
        return int(stat_key.rsplit(".", 1)[1])
    except (IndexError, ValueError):
        return 0
