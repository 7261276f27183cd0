"""Finding Taskdoc packages in a workspace (honouring ``.taskdoc-ignore``) and noticing that one changed
(a cheap fingerprint of its entries), for the panel's list and the Taskdoc watcher.

A workflow (ToT, Debate, Plan & Solve) keeps its runs on a Taskdoc of its own (``tasks/plan-solve.tsk``,
``tasks/tot/<id>.tsk``, …) and marks it with a ``.workflow`` file (hidden: the package's loader skips
dot files) when it starts a run. Those are the workflow's internals, not a task a person works on: the
Taskdoc a new dialog defaults to (``dominds run``, the panel's New-dialog form) and the panel's list of
Taskdocs leave them out (before, after any workflow run, ``dominds run`` attached the new dialog to
``tasks/plan-solve.tsk``, "the Taskdoc of the newest dialog")."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from dominds.taskdoc import DISCOVERY_SKIP_DIRS, MAX_SCAN_ENTRIES, TASKDOC_IGNORE_FILE, normalize_taskdoc_path


@dataclass(frozen=True)
class _IgnoreRule:
    """One ``.taskdoc-ignore`` line, gitignore-like: a pattern with an inner or leading '/' is anchored
    to the ignore file's directory and matches the path from there; otherwise it matches a name at any
    depth below that directory."""

    base: str
    pattern: str
    anchored: bool

    def ignores(self, rel: str, name: str) -> bool:
        if not self.anchored:
            return fnmatch.fnmatchcase(name, self.pattern)
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1 :]
        return fnmatch.fnmatchcase(rel, self.pattern)


def _read_ignore_rules(directory: Path, rel_dir: str) -> list[_IgnoreRule]:
    try:
        text = (directory / TASKDOC_IGNORE_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    rules = []
    for line in text.splitlines():
        pattern = line.strip()
        # Negation ('!') is not supported: skipping it keeps the file's other lines meaningful.
        if not pattern or pattern.startswith(("#", "!")):
            continue
        anchored = "/" in pattern.rstrip("/")
        pattern = pattern.strip("/")
        if pattern:
            rules.append(_IgnoreRule(rel_dir, pattern, anchored))
    return rules


WORKFLOW_MARKER = ".workflow"
"""In a Taskdoc package: the workflow that keeps its runs there (its name, one line)."""


def mark_workflow_taskdoc(rtws_root: Path, rel: str, workflow: str) -> None:
    """Mark ``rel`` as ``workflow``'s own Taskdoc (creating the package); best effort, never raises."""
    marker = rtws_root / rel / WORKFLOW_MARKER
    try:
        if not marker.is_file():
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(workflow + "\n", encoding="utf-8")
    except OSError:
        pass  # unmarked, the Taskdoc is only offered like any other


def is_workflow_taskdoc(rtws_root: Path, rel: str) -> bool:
    return (rtws_root / rel / WORKFLOW_MARKER).is_file()


def discover_taskdocs(rtws_root: Path, *, workflow: bool = True) -> list[str]:
    """Every ``*.tsk`` directory under the workspace, as sorted rtws-relative paths; with
    ``workflow=False`` without the workflows' own (``WORKFLOW_MARKER``).

    Symlinked directories are not followed (they would list a package twice or leave the workspace).
    """
    found: list[str] = []
    # Each stack item: a directory, its rtws-relative path, and the ignore rules in force there.
    stack: list[tuple[Path, str, list[_IgnoreRule]]] = [(rtws_root, "", [])]
    while stack:
        directory, rel_dir, inherited = stack.pop()
        rules = inherited + _read_ignore_rules(directory, rel_dir)
        try:
            with os.scandir(directory) as iterator:
                subdirs = [entry for entry in iterator if entry.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in subdirs:
            if entry.name in DISCOVERY_SKIP_DIRS:
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if any(rule.ignores(rel, entry.name) for rule in rules):
                continue
            if entry.name.endswith(".tsk") and entry.name != ".tsk":
                found.append(rel)  # packages are leaves: nothing inside one is another package
            else:
                stack.append((Path(entry.path), rel, rules))
    return sorted(rel for rel in found if workflow or not is_workflow_taskdoc(rtws_root, rel))


def taskdoc_fingerprint(rtws_root: Path, rel: str) -> str:
    """A cheap signature of a package (names, inode, size, mtime of every entry); changes on any edit.

    The inode is part of it because ``write_section`` replaces files by rename, which always changes
    the inode even when size and a coarse mtime stay the same. A directory's names are read again only
    when its inode or mtime changed (``_names``): every generation asks, and reading an unchanged
    directory cost ~5 % of the event loop's time in a 100-way fan-out; each entry is still ``lstat``ed,
    which is what sees an edit in place.
    """
    package = rtws_root / normalize_taskdoc_path(rel)
    digest = hashlib.sha1(usedforsecurity=False)
    try:
        root_stat = package.lstat()
    except OSError:
        return "missing"
    if not stat.S_ISDIR(root_stat.st_mode):
        return "not-a-directory"
    digest.update(f".:{root_stat.st_ino}:{root_stat.st_mtime_ns}\n".encode())
    pending = [(str(package), "", root_stat)]
    seen = 0
    while pending and seen <= MAX_SCAN_ENTRIES:
        directory, prefix, directory_stat = pending.pop()
        names = _names(directory, directory_stat)
        if names is None:
            continue
        for entry_name in names:
            seen += 1
            path = os.path.join(directory, entry_name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            name = prefix + entry_name
            digest.update(f"{name}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}\n".encode())
            if stat.S_ISDIR(info.st_mode):
                pending.append((path, name + "/", info))
    return digest.hexdigest()


SETTLED_NS = 2_000_000_000
"""A directory whose mtime is older than this (at the moment it is read) has its names kept: any later
change of its entries sets its mtime to the time of that change, which differs from the kept one on
every file system whose timestamps are finer than two seconds. A younger one may change again within
the same timestamp tick, so it is read every time until it is older (git's "racy" rule)."""
_MAX_LISTINGS = 4096
_listings: dict[str, tuple[int, int, tuple[str, ...]]] = {}
"""Sorted names of a directory by path, with the inode and mtime (ns) it had when they were read."""


def _names(directory: str, info: os.stat_result) -> tuple[str, ...] | None:
    """The sorted names in ``directory`` (whose ``lstat`` is ``info``); None when it cannot be read."""
    kept = _listings.get(directory)
    if kept is not None and kept[0] == info.st_ino and kept[1] == info.st_mtime_ns:
        return kept[2]
    try:
        with os.scandir(directory) as iterator:
            names = tuple(sorted(entry.name for entry in iterator))
    except OSError:
        return None
    if time.time_ns() - info.st_mtime_ns > SETTLED_NS:
        if len(_listings) >= _MAX_LISTINGS:
            _listings.clear()
        _listings[directory] = (info.st_ino, info.st_mtime_ns, names)
    return names
