"""The Taskdoc as people read it, and the panel's section editor.

The panel used to show the *effective* Taskdoc, the text the model sees: headings doubled by the
files' own headings, instructions to the model, and no file paths. ``taskdoc_sections`` gives each
section once, with the file it lives in, its text and its rendered HTML. ``POST /api/taskdocs/section``
replaces one section file atomically with ``taskdoc.write_section`` — the same rule as ``change_mind``
and as an editor's atomic save — refusing it when the file changed since the panel read it
(``baseHash``), so an agent's or a person's newer text is never overwritten unseen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dominds.server.render import render_markdown
from dominds.taskdoc import BEARINMIND_CATEGORY, TOP_SECTIONS, Taskdoc, TaskdocError
from dominds.taskdoc_sections import SectionConflict, content_hash, read_section, section_file
from dominds.taskdoc_sections import write_section_checked as write_checked

__all__ = ["SectionConflict", "taskdoc_sections", "write_section_checked"]

MAX_EXTRA_SECTIONS = 100
"""Extra sections shown with their text; more are listed by name only (a hand-made package can hold thousands)."""
_NOT_EDITABLE = {"too_large": "only the first part of this file is shown", "not_utf8": "the file is not UTF-8 text"}


def _section(taskdoc: Taskdoc, key: str, text: str | None, lead_title: str | None = None) -> dict[str, Any]:
    category, _, selector = key.rpartition("/")
    file_rel = section_file(selector, category or None)
    problems = {n.kind for n in taskdoc.notes if n.where == file_rel and n.kind in _NOT_EDITABLE}
    body = text or ""
    return {
        "key": key,
        "category": category or None,
        "selector": selector,
        "file": f"{taskdoc.rel_path}/{file_rel}",
        "exists": text is not None,
        "markdown": body if not problems else "",  # the text to edit: only where an edit cannot lose any
        "html": render_markdown(_without_lead_heading(body, lead_title or selector)) if body.strip() else "",
        "hash": content_hash(body),
        "editable": not problems,
        "readOnlyReason": next((_NOT_EDITABLE[k] for k in sorted(problems)), None),
    }


def _without_lead_heading(text: str, title: str) -> str:
    """Drop a first heading that only repeats the section's name (``# Goals`` in goals.md): shown once."""
    lines = text.lstrip("\n").split("\n", 1)
    first = lines[0].strip()
    if first.startswith("#") and first.lstrip("#").strip().lower().replace(" ", "") == title.lower().replace(" ", ""):
        return lines[1] if len(lines) > 1 else ""
    return text


def taskdoc_sections(rtws_root: Path, taskdoc: Taskdoc) -> dict[str, Any]:
    """Each section once, in reading order: the three top sections, bearinmind/*, then the extra sections."""
    sections = [_section(taskdoc, name, taskdoc.top_section(name)) for name in TOP_SECTIONS]
    sections += [_section(taskdoc, f"{BEARINMIND_CATEGORY}/{name}", text) for name, text in taskdoc.bearinmind.items()]
    listed_only: list[str] = []
    shown = 0
    for category, selectors in taskdoc.extra.items():
        for selector in selectors:
            key = f"{category}/{selector}"
            if shown >= MAX_EXTRA_SECTIONS:
                listed_only.append(f"{taskdoc.rel_path}/{key}.md")
                continue
            shown += 1
            try:
                text: str | None = read_section(rtws_root, taskdoc.rel_path, category, selector)
            except TaskdocError:
                text = None
            sections.append(_section(taskdoc, key, text))
    return {
        "sections": sections,
        "moreSections": listed_only,
        "notes": [{"kind": n.kind, "where": n.where, "detail": n.detail} for n in taskdoc.notes],
    }


def write_section_checked(rtws_root: Path, taskdoc_path: str, key: str, content: str, base_hash: str | None) -> str:
    """Replace one section file unless it changed since ``base_hash``; the file's rtws-relative path.

    Raises ``TaskdocError`` for a bad section key or an unwritable package, ``SectionConflict`` when
    the file's current text is not the one the panel read.
    """
    category, _, selector = key.rpartition("/")
    try:
        target = write_checked(rtws_root, taskdoc_path, selector, content, category or None, base_hash)
    except SectionConflict as exc:
        file_rel = section_file(selector, category or None)
        message = f"{file_rel} changed since you opened it (an agent or an editor wrote it); reload the Taskdoc and edit again"
        raise SectionConflict(message, exc.current) from None
    return target.relative_to(rtws_root).as_posix()
