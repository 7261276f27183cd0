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
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

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

NAME_RULE = (
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


def package_dir(rtws_root: Path, rel: str) -> Path:
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


def decode_cut(data: bytes) -> str:
    """Decode a prefix of a file: a character split by the cut is dropped, other bad bytes become U+FFFD."""
    return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False)


def cut_note(size: int) -> str:
    return f"\n\n[… cut: this file is {size / 1_048_576:.1f} MiB; only its first {MAX_SECTION_BYTES // 1024} KiB are shown]\n"


def _read_text(path: Path, where: str, notes: list[TaskdocNote]) -> str | None:
    try:
        data, size = read_bounded(path)
    except OSError as exc:
        notes.append(TaskdocNote("unreadable", where, exc.strerror or str(exc)))
        return None
    if size > len(data):
        notes.append(TaskdocNote("too_large", where, f"{size / 1_048_576:.1f} MiB"))
        return decode_cut(data) + cut_note(size)
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
        package = package_dir(rtws_root, rel)
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
