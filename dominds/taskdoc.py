"""Taskdoc packages (``*.tsk/``): the shared, encapsulated task state of one dialog tree.

A package is a directory whose name ends in ``.tsk``, addressed by an rtws-relative path that is fixed
for the life of a dialog tree. Its layout:

- ``goals.md``, ``constraints.md``, ``progress.md`` at the top level (and nowhere else);
- ``bearinmind/{contracts,acceptance,grants,runbook,decisions,risks}.md`` (a fixed whitelist);
- extra sections ``<category>/<selector>.md`` whose names are dotted identifiers.

Reading never raises for a bad layout: every violation becomes a ``TaskdocNote`` shown to the agent,
because a hand-edited package must never stop a dialog from running. Writing (``change_mind``) and
reading one section (``recall_taskdoc``) refuse bad requests with a ``TaskdocError`` whose message tells
the model what to call instead. General file tools never reach a package: see ``dominds.access``.
"""

from __future__ import annotations

import codecs
import fnmatch
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from dominds.store.atomic import write_atomic
from dominds.store.errors import WriteFailedError

TOP_SECTIONS = ("goals", "constraints", "progress")
BEARINMIND_CATEGORY = "bearinmind"
BEARINMIND_SECTIONS = ("contracts", "acceptance", "grants", "runbook", "decisions", "risks")
RESERVED_SELECTORS = frozenset(TOP_SECTIONS + BEARINMIND_SECTIONS)

# Category and selector names: a letter first, then dotted segments (``api.v2``, ``env.check_1``).
NAME_PATTERN = re.compile(r"[a-zA-Z][a-zA-Z0-9_-]*(\.[a-zA-Z0-9_-]+)*")

# Discovery never descends into runtime state, VCS data or dependency trees.
DISCOVERY_SKIP_DIRS = frozenset({".dialogs", ".minds", ".git", ".venv", "node_modules"})
TASKDOC_IGNORE_FILE = ".taskdoc-ignore"

# A hand-made package with thousands of files would make every generation slow; stop scanning there.
MAX_SCAN_ENTRIES = 2048

_NAME_RULE = (
    "a letter, then letters, digits, '_' or '-', optionally dotted segments (e.g. 'design', 'api.v2')"
)


class TaskdocError(Exception):
    """A Taskdoc request that cannot be honoured; the message says what to do instead."""


@dataclass(frozen=True)
class TaskdocNote:
    """Something wrong with a package's layout or files, reported to the agent instead of raised.

    ``kind`` is one of: ``top_section_misplaced``, ``bearinmind_name_misplaced``,
    ``bearinmind_unknown_entry``, ``bearinmind_not_directory``, ``bad_name``, ``unexpected_entry``,
    ``not_a_file``, ``symlink_ignored``, ``unreadable``, ``not_utf8``, ``too_large``, ``scan_limit``,
    ``not_a_directory``, ``outside_rtws``. ``where`` is the package-relative path it is about.
    """

    kind: str
    where: str
    detail: str = ""


@dataclass(frozen=True)
class Taskdoc:
    """One package as loaded from disk. A section that has no file is ``None``."""

    rel_path: str
    exists: bool
    goals: str | None = None
    constraints: str | None = None
    progress: str | None = None
    bearinmind: dict[str, str] = field(default_factory=dict)
    """Present whitelist files, keyed by selector, in the fixed ``BEARINMIND_SECTIONS`` order."""
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Extra sections: category -> sorted selectors. Only names; bodies are read on demand."""
    notes: tuple[TaskdocNote, ...] = ()

    def top_section(self, selector: str) -> str | None:
        if selector not in TOP_SECTIONS:
            raise KeyError(selector)
        value: str | None = getattr(self, selector)
        return value


# --- paths -------------------------------------------------------------------------------------------


def normalize_taskdoc_path(rel: str) -> str:
    """Return the canonical rtws-relative form (``tasks/auth.tsk``) or raise ``TaskdocError``."""
    text = rel.strip().replace("\\", "/")
    if not text:
        raise TaskdocError(
            "Taskdoc path is empty: give an rtws-relative path ending in .tsk, e.g. 'tasks/auth.tsk'"
        )
    if "\0" in text:
        raise TaskdocError(f"Taskdoc path {rel!r} contains a NUL character")
    if text.startswith("/") or re.match(r"^[a-zA-Z]:", text):
        raise TaskdocError(f"Taskdoc path {rel!r} is absolute: give a path relative to the workspace root")
    segments = [segment for segment in text.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise TaskdocError(f"Taskdoc path {rel!r} contains '..': it must stay inside the workspace")
    if not segments:
        raise TaskdocError(f"Taskdoc path {rel!r} names the workspace root, not a .tsk package")
    name = segments[-1]
    if not name.endswith(".tsk") or name == ".tsk":
        raise TaskdocError(
            f"Taskdoc path {rel!r} must name a directory ending in '.tsk' (e.g. 'tasks/auth.tsk')"
        )
    if any(segment.lower().endswith(".tsk") for segment in segments[:-1]):
        raise TaskdocError(f"Taskdoc path {rel!r} is nested inside another .tsk package")
    if segments[0] == ".dialogs":
        raise TaskdocError(f"Taskdoc path {rel!r} is inside .dialogs/, which belongs to the runtime")
    return "/".join(segments)


def _is_within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _package_dir(rtws_root: Path, rel: str) -> Path:
    """The package directory, refusing one that a symlink moves outside the workspace."""
    package = rtws_root / rel
    try:
        resolved = package.resolve()
        root = rtws_root.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: symlink loop on Python 3.11
        raise TaskdocError(f"Taskdoc path {rel!r} cannot be resolved: {exc}") from exc
    if not _is_within(resolved, root):
        raise TaskdocError(f"Taskdoc path {rel!r} leads outside the workspace (through a symlink)")
    return package


# --- loading -----------------------------------------------------------------------------------------


MAX_SECTION_BYTES = 256 * 1024
"""A section file is read up to this size (the model's context and the panel could not use more); a longer
file is cut with a note, so a huge file never stalls the daemon or fills its memory."""


def read_bounded(path: Path) -> tuple[bytes, int]:
    """The first ``MAX_SECTION_BYTES`` of ``path`` and its full size (raises OSError)."""
    with path.open("rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        return stream.read(MAX_SECTION_BYTES), size


def _decode_cut(data: bytes) -> str:
    """Decode a prefix of a file: a character split by the cut is dropped, other bad bytes become U+FFFD."""
    return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False)


def _cut_note(size: int) -> str:
    return f"\n\n[… cut: this file is {size / 1_048_576:.1f} MiB; only its first {MAX_SECTION_BYTES // 1024} KiB are shown]\n"


def _read_text(path: Path, where: str, notes: list[TaskdocNote]) -> str | None:
    try:
        data, size = read_bounded(path)
    except OSError as exc:
        notes.append(TaskdocNote("unreadable", where, exc.strerror or str(exc)))
        return None
    if size > len(data):
        notes.append(TaskdocNote("too_large", where, f"{size / 1_048_576:.1f} MiB"))
        return _decode_cut(data) + _cut_note(size)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        notes.append(TaskdocNote("not_utf8", where))
        return data.decode("utf-8", errors="replace")


def _scan(directory: Path) -> list[os.DirEntry[str]]:
    """Visible entries of ``directory`` in name order (hidden ones are atomic-write temp files, etc.)."""
    with os.scandir(directory) as entries:
        return sorted((entry for entry in entries if not entry.name.startswith(".")), key=lambda e: e.name)


class _Loader:
    """Walks one package once, collecting sections and notes."""

    def __init__(self, package: Path) -> None:
        self.package = package
        self.notes: list[TaskdocNote] = []
        self.top: dict[str, str] = {}
        self.bearinmind: dict[str, str] = {}
        self.extra: dict[str, tuple[str, ...]] = {}
        self.seen = 0

    def _count(self) -> bool:
        """Count one entry; False once the scan limit is passed (noted once)."""
        self.seen += 1
        if self.seen == MAX_SCAN_ENTRIES + 1:
            self.notes.append(TaskdocNote("scan_limit", ".", str(MAX_SCAN_ENTRIES)))
        return self.seen <= MAX_SCAN_ENTRIES

    def load(self) -> None:
        for entry in self._entries(self.package, "."):
            if not self._count():
                return
            name = entry.name
            if entry.is_symlink():
                self.notes.append(TaskdocNote("symlink_ignored", name))
            elif name == BEARINMIND_CATEGORY:
                if entry.is_dir(follow_symlinks=False):
                    self._load_bearinmind(Path(entry.path))
                else:
                    self.notes.append(TaskdocNote("bearinmind_not_directory", name))
            elif name.removesuffix(".md") in TOP_SECTIONS and name.endswith(".md"):
                if entry.is_file(follow_symlinks=False):
                    text = _read_text(Path(entry.path), name, self.notes)
                    if text is not None:
                        self.top[name.removesuffix(".md")] = text
                else:
                    self.notes.append(TaskdocNote("not_a_file", name))
            elif entry.is_dir(follow_symlinks=False):
                self._load_category(Path(entry.path), name)
            elif name.removesuffix(".md") in BEARINMIND_SECTIONS and name.endswith(".md"):
                self.notes.append(TaskdocNote("bearinmind_name_misplaced", name))
            else:
                self.notes.append(TaskdocNote("unexpected_entry", name))

    def _entries(self, directory: Path, where: str) -> list[os.DirEntry[str]]:
        try:
            return _scan(directory)
        except OSError as exc:
            self.notes.append(TaskdocNote("unreadable", where, exc.strerror or str(exc)))
            return []

    def _load_bearinmind(self, directory: Path) -> None:
        found: dict[str, str] = {}
        for entry in self._entries(directory, BEARINMIND_CATEGORY):
            if not self._count():
                break
            where = f"{BEARINMIND_CATEGORY}/{entry.name}"
            selector = entry.name.removesuffix(".md")
            if entry.is_symlink():
                self.notes.append(TaskdocNote("symlink_ignored", where))
            elif not (entry.name.endswith(".md") and selector in BEARINMIND_SECTIONS):
                self.notes.append(TaskdocNote("bearinmind_unknown_entry", where))
            elif not entry.is_file(follow_symlinks=False):
                self.notes.append(TaskdocNote("not_a_file", where))
            else:
                text = _read_text(Path(entry.path), where, self.notes)
                if text is not None:
                    found[selector] = text
        self.bearinmind = {name: found[name] for name in BEARINMIND_SECTIONS if name in found}

    def _load_category(self, directory: Path, category: str) -> None:
        if not NAME_PATTERN.fullmatch(category):
            self.notes.append(TaskdocNote("bad_name", category))
            return
        selectors: list[str] = []
        for entry in self._entries(directory, category):
            if not self._count():
                break
            where = f"{category}/{entry.name}"
            selector = entry.name.removesuffix(".md")
            if entry.is_symlink():
                self.notes.append(TaskdocNote("symlink_ignored", where))
            elif not entry.is_file(follow_symlinks=False) or not entry.name.endswith(".md"):
                # Extra sections are one level deep and Markdown only; anything else is never read.
                self.notes.append(TaskdocNote("unexpected_entry", where))
            elif selector in TOP_SECTIONS:
                self.notes.append(TaskdocNote("top_section_misplaced", where))
            elif selector in BEARINMIND_SECTIONS:
                self.notes.append(TaskdocNote("bearinmind_name_misplaced", where))
            elif not NAME_PATTERN.fullmatch(selector):
                self.notes.append(TaskdocNote("bad_name", where))
            else:
                selectors.append(selector)
        if selectors:
            self.extra[category] = tuple(selectors)


def load_taskdoc(rtws_root: Path, rel_path: str) -> Taskdoc:
    """Read a package. A missing package has empty sections; a bad layout or file becomes a note.

    Raises ``TaskdocError`` only for a path that ``normalize_taskdoc_path`` rejects.
    """
    rel = normalize_taskdoc_path(rel_path)
    try:
        package = _package_dir(rtws_root, rel)
    except TaskdocError as exc:
        return Taskdoc(rel, exists=False, notes=(TaskdocNote("outside_rtws", ".", str(exc)),))
    if not package.exists():
        return Taskdoc(rel, exists=False)
    if not package.is_dir():
        return Taskdoc(rel, exists=False, notes=(TaskdocNote("not_a_directory", "."),))
    loader = _Loader(package)
    loader.load()
    return Taskdoc(
        rel,
        exists=True,
        goals=loader.top.get("goals"),
        constraints=loader.top.get("constraints"),
        progress=loader.top.get("progress"),
        bearinmind=loader.bearinmind,
        extra=dict(sorted(loader.extra.items())),
        notes=tuple(loader.notes),
    )


# --- change_mind / recall_taskdoc --------------------------------------------------------------------


def _check_name(kind: str, value: str) -> None:
    if not NAME_PATTERN.fullmatch(value):
        raise TaskdocError(f"{kind} {value!r} is not a valid name: use {_NAME_RULE}")


def _reserved_refusal(selector: str) -> TaskdocError:
    if selector in TOP_SECTIONS:
        return TaskdocError(
            f"selector {selector!r} is reserved for the top-level {selector}.md: "
            f'call change_mind with selector "{selector}" and no category'
        )
    return TaskdocError(
        f"selector {selector!r} is reserved for bearinmind/{selector}.md: "
        f'use category "{BEARINMIND_CATEGORY}" with selector "{selector}"'
    )


def _extra_section_file(category: str, selector: str) -> str:
    _check_name("category", category)
    if category.lower() == BEARINMIND_CATEGORY:
        # A case variant would alias bearinmind/ on case-insensitive filesystems.
        raise TaskdocError(f'category {category!r} is ambiguous: write it exactly as "{BEARINMIND_CATEGORY}"')
    _check_name("selector", selector)
    if selector.lower() in RESERVED_SELECTORS:
        raise _reserved_refusal(selector.lower())
    return f"{category}/{selector}.md"


def _bearinmind_file(selector: str) -> str:
    if selector not in BEARINMIND_SECTIONS:
        raise TaskdocError(
            f'category "{BEARINMIND_CATEGORY}" only accepts selector {", ".join(BEARINMIND_SECTIONS)} '
            f'(got {selector!r}); put other material in an extra category, e.g. category "notes"'
        )
    return f"{BEARINMIND_CATEGORY}/{selector}.md"


def section_file(selector: str, category: str | None = None) -> str:
    """The package-relative file ``change_mind`` writes for these arguments, or ``TaskdocError``."""
    if not category:
        if selector in TOP_SECTIONS:
            return f"{selector}.md"
        if selector in BEARINMIND_SECTIONS:
            raise TaskdocError(
                f"{selector!r} is a bearinmind section: call change_mind with "
                f'category "{BEARINMIND_CATEGORY}" and selector "{selector}"'
            )
        raise TaskdocError(
            f"without a category, selector must be one of {', '.join(TOP_SECTIONS)} (got {selector!r}); "
            f'for a bearinmind section pass category "{BEARINMIND_CATEGORY}", '
            "for an extra section pass its category"
        )
    if category == BEARINMIND_CATEGORY:
        return _bearinmind_file(selector)
    return _extra_section_file(category, selector)


def write_section(
    rtws_root: Path, rel_path: str, selector: str, content: str, category: str | None = None
) -> Path:
    """Replace one whole section file atomically (``change_mind``); create the package if missing."""
    rel = normalize_taskdoc_path(rel_path)
    file_rel = section_file(selector, category)
    package = _package_dir(rtws_root, rel)
    if package.exists() and not package.is_dir():
        raise TaskdocError(
            f"{rel} exists but is not a directory; a human must fix it before change_mind can write"
        )
    target = package / file_rel
    parent = target.parent
    if parent != package and (parent.is_symlink() or (parent.exists() and not parent.is_dir())):
        raise TaskdocError(
            f"{rel}/{parent.name} is not a plain directory, so {file_rel} cannot be written; a human must fix it"
        )
    if target.is_dir():
        raise TaskdocError(f"{rel}/{file_rel} is a directory, not a file; a human must fix it")
    if content and not content.endswith("\n"):
        content += "\n"
    try:
        write_atomic(target, content)
    except WriteFailedError as exc:
        raise TaskdocError(f"could not write {rel}/{file_rel}: {exc.problem}") from exc
    return target


def read_section(rtws_root: Path, rel_path: str, category: str, selector: str) -> str:
    """Read one section that is not injected whole (``recall_taskdoc``): bearinmind/* or an extra section."""
    rel = normalize_taskdoc_path(rel_path)
    if selector in TOP_SECTIONS:
        raise TaskdocError(
            "goals, constraints and progress are already in your context (the Taskdoc block); "
            "recall_taskdoc reads bearinmind/* and extra <category>/<selector> sections"
        )
    if not category:
        raise TaskdocError(f'recall_taskdoc needs a category: "{BEARINMIND_CATEGORY}" or an extra category')
    file_rel = (
        _bearinmind_file(selector)
        if category == BEARINMIND_CATEGORY
        else _extra_section_file(category, selector)
    )
    target = _package_dir(rtws_root, rel) / file_rel
    if target.is_symlink() or target.parent.is_symlink():
        raise TaskdocError(f"{rel}/{file_rel} is a symlink; Taskdoc sections must be plain files")
    try:
        data, size = read_bounded(target)
    except FileNotFoundError:
        available = _available_sections(rtws_root, rel)
        listing = ", ".join(available) if available else "none"
        raise TaskdocError(f"{rel} has no section {file_rel}; readable sections: {listing}") from None
    except OSError as exc:
        raise TaskdocError(f"cannot read {rel}/{file_rel}: {exc.strerror or exc}") from exc
    return _decode_cut(data) + _cut_note(size) if size > len(data) else data.decode("utf-8", errors="replace")


def _available_sections(rtws_root: Path, rel: str) -> list[str]:
    taskdoc = load_taskdoc(rtws_root, rel)
    names = [f"{BEARINMIND_CATEGORY}/{name}" for name in taskdoc.bearinmind]
    names += [
        f"{category}/{selector}" for category, selectors in taskdoc.extra.items() for selector in selectors
    ]
    return names


# --- discovery and change detection ------------------------------------------------------------------


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


def discover_taskdocs(rtws_root: Path) -> list[str]:
    """Every ``*.tsk`` directory under the workspace, as sorted rtws-relative paths.

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
    return sorted(found)


def taskdoc_fingerprint(rtws_root: Path, rel: str) -> str:
    """A cheap signature of a package (names, inode, size, mtime of every entry); changes on any edit.

    The inode is part of it because ``write_section`` replaces files by rename, which always changes
    the inode even when size and a coarse mtime stay the same.
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
    pending = [(package, "")]
    seen = 0
    while pending and seen <= MAX_SCAN_ENTRIES:
        directory, prefix = pending.pop()
        try:
            with os.scandir(directory) as iterator:
                entries = sorted(iterator, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            name = prefix + entry.name
            digest.update(f"{name}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}\n".encode())
            if stat.S_ISDIR(info.st_mode):
                pending.append((Path(entry.path), name + "/"))
    return digest.hexdigest()
