"""Taskdoc section files one at a time: which file a ``change_mind`` writes, writing it atomically, and
reading one section for ``recall_taskdoc``. Requests that break the layout rules of ``dominds.taskdoc``
are refused with a ``TaskdocError`` that tells the model what to call instead.

Every section has a content hash (``content_hash``): the panel's editor and ``change_mind`` send the hash
of the text they last saw, and a write is refused (``SectionConflict``, with the current text) when the
file changed since, so neither an agent nor a person overwrites the other's edit unseen.
``append_section`` adds one entry (``append_progress``) and never rewrites what is there.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from dominds.store.atomic import write_atomic
from dominds.store.errors import WriteFailedError
from dominds.taskdoc import (
    BEARINMIND_CATEGORY,
    BEARINMIND_SECTIONS,
    NAME_PATTERN,
    NAME_RULE,
    RESERVED_SELECTORS,
    TOP_SECTIONS,
    TaskdocError,
    cut_note,
    decode_cut,
    load_taskdoc,
    normalize_taskdoc_path,
    package_dir,
    read_bounded,
)


def _check_name(kind: str, value: str) -> None:
    if not NAME_PATTERN.fullmatch(value):
        raise TaskdocError(f"{kind} {value!r} is not a valid name: use {NAME_RULE}")


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
    package = package_dir(rtws_root, rel)
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


def content_hash(text: str) -> str:
    """The hash of a section's text as the Taskdoc view, ``recall_taskdoc`` and the panel show it."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class SectionConflict(TaskdocError):
    """The section changed since the writer read it; ``current`` is its text now."""

    def __init__(self, message: str, current: str) -> None:
        super().__init__(message)
        self.current = current
        self.current_hash = content_hash(current)


def current_section_text(rtws_root: Path, rel_path: str, selector: str, category: str | None) -> str:
    """A section's text as its hash is computed ("" when it does not exist)."""
    if not category:
        return load_taskdoc(rtws_root, rel_path).top_section(selector) or ""
    try:
        return read_section(rtws_root, rel_path, category, selector)
    except TaskdocError:
        return ""


def write_section_checked(
    rtws_root: Path, rel_path: str, selector: str, content: str, category: str | None, base_hash: str | None
) -> Path:
    """``write_section`` unless the section's text is no longer the one ``base_hash`` was computed from."""
    file_rel = section_file(selector, category)  # refuses a bad section before anything is read
    if base_hash is not None:
        current = current_section_text(rtws_root, rel_path, selector, category)
        if content_hash(current) != base_hash:
            raise SectionConflict(f"{file_rel} changed since it was read (an agent or a person wrote it)", current)
    return write_section(rtws_root, rel_path, selector, content, category)


def append_section(rtws_root: Path, rel_path: str, selector: str, entry: str, category: str | None = None) -> Path:
    """Append one entry to a section file, on a line of its own (``append_progress``): what is there stays
    byte for byte, whoever wrote it meanwhile (an ``O_APPEND`` write, never a read-modify-write)."""
    rel = normalize_taskdoc_path(rel_path)
    file_rel = section_file(selector, category)
    target = package_dir(rtws_root, rel) / file_rel
    if target.is_symlink() or target.is_dir():
        raise TaskdocError(f"{rel}/{file_rel} is not a plain file; a human must fix it")
    if not target.exists():
        write_section(rtws_root, rel_path, selector, entry, category)  # creates the package, atomically
        return target
    text = entry.strip("\n") + "\n"
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND)
        try:
            size = os.fstat(fd).st_size
            needs_newline = size > 0 and not _ends_with_newline(target, size)
            os.write(fd, (("\n" if needs_newline else "") + text).encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise TaskdocError(f"could not append to {rel}/{file_rel}: {exc.strerror or exc}") from exc
    return target


def _ends_with_newline(path: Path, size: int) -> bool:
    with path.open("rb") as f:
        f.seek(size - 1)
        return f.read(1) == b"\n"


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
    target = package_dir(rtws_root, rel) / file_rel
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
    return decode_cut(data) + cut_note(size) if size > len(data) else data.decode("utf-8", errors="replace")


def _available_sections(rtws_root: Path, rel: str) -> list[str]:
    taskdoc = load_taskdoc(rtws_root, rel)
    names = [f"{BEARINMIND_CATEGORY}/{name}" for name in taskdoc.bearinmind]
    names += [
        f"{category}/{selector}" for category, selectors in taskdoc.extra.items() for selector in selectors
    ]
    return names
