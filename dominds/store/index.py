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

INDEX_VERSION = 3
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
    facts["usage"] = _course_usage(directory, courses, facts)
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


def _course_usage(directory: str, course_files: list[str], facts: Facts) -> dict[str, list[int]]:
    """Per ``provider/model``: [input, output, cacheRead, cacheWrite, generations] over every course.

    A line in the middle of a course that is not a JSON record marks the dialog with an error (the daemon
    refuses such a dialog); a torn last line does not (it is what a crash leaves)."""
    totals: dict[str, list[int]] = {}
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
        start = 0
        while (found := data.find(b'"gen_finish_record"', start)) != -1:  # decode only those lines
            line_start = data.rfind(b"\n", 0, found) + 1
            line_end = data.find(b"\n", found)
            start = len(data) if line_end == -1 else line_end
            try:
                record = json.loads(data[line_start:start])
            except ValueError:
                continue  # a torn last line: that generation is counted once it is complete
            usage = record.get("usage") if isinstance(record, dict) else None
            if not isinstance(usage, dict):
                continue
            counts = totals.setdefault(f"{record.get('provider') or ''}/{record.get('model') or ''}", [0, 0, 0, 0, 0])
            for index, field in enumerate(USAGE_FIELDS):
                counts[index] += int(usage.get(field) or 0)
            counts[4] += 1
    return totals


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


def signature(directory: str, facts: Facts | None) -> tuple[str, int]:
    """What the facts of this directory were read from: (signature, newest mtime in ns).

    The directory's mtime (a file created, replaced by rename, or removed), and inode, size and mtime of
    ``dialog.yaml``, ``latest.yaml``, the current course file and the other state files that exist
    (a file edited in place)."""
    try:
        newest = os.stat(directory).st_mtime_ns
    except OSError:
        return "gone", 0
    facts = facts or {}
    names = ["dialog.yaml", "latest.yaml", f"course-{int(facts.get('currentCourse') or 1):03d}.jsonl"]
    names += [n for n in facts.get("files") or () if n not in _ALWAYS_READ]
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


# ---------------------------------------------------------------- the index


@dataclass
class Entry:
    """One dialog as the index knows it."""

    status: str
    root_id: str
    self_id: str
    facts: Facts


class DialogIndex:
    """Facts of every dialog of a workspace, refreshed from the files on demand (see the module doc)."""

    def __init__(self, rtws: Rtws, *, persistent: bool = True) -> None:
        """``persistent=False``: an index in memory only (every dialog read; nothing written)."""
        self.rtws = rtws
        self.path = rtws.state_dir / "cache" / "dialogs.sqlite"
        self.persistent = persistent
        self._db: sqlite3.Connection | None = None

    # -- storage -----------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is not None:
            return self._db
        try:
            if not self.persistent:
                raise OSError("in memory only")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")  # a cache: lost to a power cut, it is rebuilt
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version != INDEX_VERSION:
                db.executescript(
                    "DROP TABLE IF EXISTS dialogs; DROP TABLE IF EXISTS trees;"
                    "CREATE TABLE dialogs (key TEXT PRIMARY KEY, status TEXT, root_id TEXT, self_id TEXT,"
                    " sig TEXT, facts TEXT);"
                    "CREATE INDEX dialogs_root ON dialogs (status, root_id);"
                    "CREATE TABLE trees (key TEXT PRIMARY KEY, sig TEXT, subs TEXT);"
                    f"PRAGMA user_version={INDEX_VERSION};"
                )
        except (OSError, sqlite3.Error):
            if self.persistent:
                self._rebuild_file()
            try:
                db = sqlite3.connect(":memory:", isolation_level=None)
                db.executescript(
                    "CREATE TABLE dialogs (key TEXT PRIMARY KEY, status TEXT, root_id TEXT, self_id TEXT, sig TEXT, facts TEXT);"
                    "CREATE INDEX dialogs_root ON dialogs (status, root_id);"
                    "CREATE TABLE trees (key TEXT PRIMARY KEY, sig TEXT, subs TEXT);"
                )
            except sqlite3.Error:
                return None
        self._db = db
        return db

    def _rebuild_file(self) -> None:
        """A corrupt or unreadable index is deleted: the next refresh builds it again from the files."""
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")

    def close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    # -- refresh -----------------------------------------------------------------------------------

    def entries(self, statuses: Iterable[str] = DIALOG_STATUSES, root: tuple[str, str] | None = None) -> list[Entry]:
        """Every dialog of ``statuses`` (or of the one tree ``root`` = (status, rootId)), checked against
        the files and re-read where they changed; roots come before their subdialogs, trees in id order."""
        try:
            return self._entries(tuple(statuses), root)
        except sqlite3.Error:
            self.close()
            self._rebuild_file()
            return self._entries(tuple(statuses), root)

    def _entries(self, statuses: tuple[str, ...], root: tuple[str, str] | None) -> list[Entry]:
        db = self._connect()
        known: dict[str, tuple[str, str]] = {}
        trees: dict[str, tuple[str, list[str]]] = {}
        if db is not None:
            wanted = (root[0],) if root else statuses
            marks = ",".join("?" * len(wanted))
            query = f"SELECT key, sig, facts FROM dialogs WHERE status IN ({marks})"
            args: tuple[str, ...] = wanted
            if root is not None:
                query += " AND root_id = ?"
                args = (*wanted, root[1])
            known = {key: (sig, facts) for key, sig, facts in db.execute(query, args)}
            for key, sig, subs in db.execute("SELECT key, sig, subs FROM trees"):
                trees[key] = (sig, subs.split())
        out: list[Entry] = []
        changed: list[tuple[str, str, str, str, str, str]] = []
        changed_trees: list[tuple[str, str, str]] = []
        seen: set[str] = set()
        now_ns = time.time_ns()
        for status in (root[0],) if root else statuses:
            directory = str(self.rtws.status_dir(status))
            if root is not None:
                root_ids = [root[1]] if os.path.isdir(os.path.join(directory, root[1])) else []
            else:
                try:
                    root_ids = sorted(e.name for e in os.scandir(directory) if e.is_dir() and is_dialog_id(e.name))
                except FileNotFoundError:
                    root_ids = []
            for root_id in root_ids:
                root_dir = f"{directory}/{root_id}"
                tree_key = f"{status}/{root_id}"
                subs_dir = f"{root_dir}/subdialogs"
                subs_sig = _stat_key(subs_dir)
                cached_tree = trees.get(tree_key)
                if cached_tree is not None and cached_tree[0] == subs_sig:
                    sub_ids = cached_tree[1]
                else:
                    try:
                        sub_ids = sorted(e.name for e in os.scandir(subs_dir) if e.is_dir() and is_dialog_id(e.name))
                    except OSError:
                        sub_ids = []
                    if now_ns - _mtime_of(subs_sig) < RACY_SECONDS * 1e9:
                        subs_sig = "racy"
                    changed_trees.append((tree_key, subs_sig, " ".join(sub_ids)))
                for self_id, path in [(root_id, root_dir), *((s, f"{subs_dir}/{s}") for s in sub_ids)]:
                    key = f"{status}/{root_id}/{self_id}"
                    seen.add(key)
                    cached = known.get(key)
                    facts = json.loads(cached[1]) if cached is not None else None
                    sig, newest = signature(path, facts)
                    if cached is None or facts is None or cached[0] != sig:
                        facts = read_facts(path)
                        sig, newest = signature(path, facts)
                        stored = "racy" if now_ns - newest < RACY_SECONDS * 1e9 else sig
                        changed.append((key, status, root_id, self_id, stored, json.dumps(facts, separators=(",", ":"))))
                    out.append(Entry(status, root_id, self_id, facts))
        if db is not None:
            gone = [key for key in known if key not in seen]
            if changed or changed_trees or gone:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("BEGIN")
                    db.executemany("INSERT OR REPLACE INTO dialogs VALUES (?,?,?,?,?,?)", changed)
                    db.executemany("INSERT OR REPLACE INTO trees VALUES (?,?,?)", changed_trees)
                    db.executemany("DELETE FROM dialogs WHERE key = ?", [(k,) for k in gone])
                    db.execute("COMMIT")
        return out


def _mtime_of(stat_key: str) -> int:
    try:
        return int(stat_key.rsplit(".", 1)[1])
    except (IndexError, ValueError):
        return 0


def trees(entries: list[Entry]) -> Iterator[tuple[Entry, list[Entry]]]:
    """Group entries (as ``DialogIndex.entries`` returns them) into (root, its subdialogs)."""
    current: tuple[Entry, list[Entry]] | None = None
    for entry in entries:
        if entry.self_id == entry.root_id:
            if current is not None:
                yield current
            current = (entry, [])
        elif current is not None and current[0].root_id == entry.root_id:
            current[1].append(entry)
    if current is not None:
        yield current
