"""The ``ws_read`` toolset (``list_dir``, ``read_file``, ``search_files``, and ``read_picture`` from
``pictures.py``); the path policy that every
general file tool shares is in ``fs_common.py``.

Every path a file tool touches goes through ``dominds.access.check_access`` with the calling member's
allow/deny lists (``PathPolicy``). A refusal becomes a ``ToolError`` carrying the rendered Access Denied
text (code ``ACCESS_DENIED`` and a hint), so the model reads why and what to do instead. Listings and
searches apply the same check to each entry and leave out what the member may not read, saying only how
many entries were left out (their names could themselves be secret).

Output is bounded everywhere: a tool result lands in the model's context, so a huge file, a minified
line or a big tree must never flood it. The write tools (``ws_mod``) are in ``fs_edit.py``.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from dominds.tools.base import FuncTool, ToolCallContext, ToolError, object_schema
from dominds.tools.fs_common import (
    BINARY_SNIFF_BYTES,
    PathPolicy,
    clip,
    human_size,
    int_arg,
    looks_binary,
    os_error,
)
from dominds.tools.pictures import READ_PICTURE

MAX_LIST_ENTRIES = 500
DEFAULT_MAX_LINES = 500
MAX_READ_LINES = 5000
MAX_LINE_CHARS = 2000
"""Longer lines (minified code, data) are cut; the cut is marked."""
MAX_READ_CHARS = 200_000
"""Hard cap on one ``read_file`` result, whatever ``max_lines`` says."""
DEFAULT_SEARCH_RESULTS = 100
MAX_SEARCH_RESULTS = 1000
MAX_SEARCH_LINE_CHARS = 300
MAX_SEARCH_FILE_BYTES = 4 * 1024 * 1024
"""Larger files are skipped by ``search_files`` (and counted): they are almost always data, not source."""
SEARCH_SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".tox",
    }
)
"""Version-control and dependency/cache directories: ripgrep skips them via .gitignore and hidden-file
rules; a plain walk must skip them by name or every search drowns in vendored code."""


# ---------------------------------------------------------------------------------------- list_dir


async def list_dir(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    path = str(args.get("path") or ".")
    directory = policy.check(path, write=False)
    if not directory.is_dir():
        raise ToolError(f"`{path}` is not a directory" + (" (use read_file)" if directory.is_file() else ""))
    base_rel = policy.rel(directory)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: (not e.is_dir(), e.name))
    except OSError as exc:
        raise os_error(exc, path) from exc
    lines: list[str] = []
    hidden = dirs = files = 0
    for entry in entries:
        entry_rel = entry.name if base_rel == "." else f"{base_rel}/{entry.name}"
        if not policy.allows(entry_rel, write=False):
            hidden += 1
            continue
        is_dir = entry.is_dir()
        dirs += is_dir
        files += not is_dir
        if len(lines) >= MAX_LIST_ENTRIES:
            continue  # keep counting so the summary is exact
        if entry.is_symlink():
            lines.append(f"{entry.name}{'/' if is_dir else ''} -> {os.readlink(entry.path)}")
        elif is_dir:
            lines.append(f"{entry.name}/")
        else:
            lines.append(f"{entry.name}  ({human_size(entry.stat().st_size)})")
    header = f"{base_rel if base_rel.endswith('/') else base_rel + '/'}  ({dirs} dirs, {files} files)"
    if dirs + files > len(lines):
        lines.append(f"[… {dirs + files - len(lines)} more entries not shown]")
    if hidden:
        lines.append(f"[{hidden} entries not shown: not accessible to you]")
    return "\n".join([header, *lines]) if lines else f"{header}\n(empty)"


# --------------------------------------------------------------------------------------- read_file

_RANGE_RE = re.compile(r"\s*(\d*)\s*~\s*(\d*)\s*")


def parse_line_range(spec: str | None) -> tuple[int, int | None]:
    """``"10~50"``, ``"300~"``, ``"~20"``, ``"~"``, ``"42"`` or nothing → (first, last or None), 1-based."""
    if spec is None or not spec.strip():
        return 1, None
    if spec.strip().isdigit():
        line = int(spec)
        return line, line
    match = _RANGE_RE.fullmatch(spec)
    if match is None:
        raise ToolError(f'range {spec!r} is not understood; write "10~50", "300~" (to the end) or "~20"')
    first = int(match[1]) if match[1] else 1
    last = int(match[2]) if match[2] else None
    if first < 1 or (last is not None and last < first):
        raise ToolError(f"range {spec!r} is empty; lines are numbered from 1 and the range is inclusive")
    return first, last


async def read_file(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    path = str(args["path"])
    target = policy.check(path, write=False)
    if target.is_dir():
        raise ToolError(f"`{path}` is a directory; use list_dir")
    if target.exists() and not target.is_file():  # a FIFO or device would block or never end
        raise ToolError(f"`{path}` is not a regular file")
    first, last = parse_line_range(args.get("range"))
    max_lines = int_arg(args, "max_lines", DEFAULT_MAX_LINES, 1, MAX_READ_LINES)
    show_linenos = args.get("show_linenos", True) is not False
    shown: list[str] = []
    shown_chars = 0
    last_shown = 0
    total_lines = 0
    try:
        size = target.stat().st_size
        with target.open("rb") as stream:
            if looks_binary(stream.read(BINARY_SNIFF_BYTES)):
                raise ToolError(f"`{path}` is a binary file ({human_size(size)}); read_file shows text only")
            stream.seek(0)
            # Stream the file: the totals need every line counted, but only the window is decoded and kept.
            for total_lines, raw in enumerate(stream, start=1):
                in_window = total_lines >= first and (last is None or total_lines <= last)
                if in_window and len(shown) < max_lines and shown_chars < MAX_READ_CHARS:
                    text = clip(raw.decode("utf-8", errors="replace").rstrip("\r\n"), MAX_LINE_CHARS)
                    shown.append(f"{total_lines:>6} | {text}" if show_linenos else text)
                    shown_chars += len(shown[-1]) + 1
                    last_shown = total_lines
    except OSError as exc:
        raise os_error(exc, path) from exc
    rel = policy.rel(target)
    totals = f"{total_lines} lines, {size} bytes"
    if total_lines == 0:
        return f"{rel}: empty file ({totals})"
    if not shown:
        raise ToolError(f"`{rel}` has {total_lines} lines; range {args.get('range')!r} starts after the end")
    header = f"{rel}: lines {first}~{last_shown} of {total_lines} ({totals})"
    wanted_last = total_lines if last is None else min(last, total_lines)
    if last_shown < wanted_last:
        limit = "max_lines" if len(shown) >= max_lines else "the output size limit"
        shown.append(f'[… stopped at {limit}; continue with range "{last_shown + 1}~"]')
    return "\n".join([header, *shown])


# ------------------------------------------------------------------------------------ search_files


@dataclass
class SearchReport:
    matches: list[str]
    files_searched: int = 0
    files_matched: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    not_accessible: int = 0
    truncated: bool = False


def glob_matches(globs: list[str], rel_to_base: str) -> bool:
    """rg-like: a glob without ``/`` matches the file name, one with ``/`` the path below the search dir."""
    name = rel_to_base.rsplit("/", 1)[-1]
    for glob in globs:
        if "/" not in glob:
            if fnmatchcase(name, glob):
                return True
        elif fnmatchcase(rel_to_base, glob) or (
            glob.startswith("**/") and fnmatchcase(rel_to_base, glob[3:])
        ):
            return True
    return False


def _search_tree(
    policy: PathPolicy, base: Path, regex: re.Pattern[str], globs: list[str], limit: int
) -> SearchReport:
    report = SearchReport(matches=[])
    walk: Iterable[tuple[str, list[str], list[str]]]
    if base.is_file():
        walk, base = [(str(base.parent), [], [base.name])], base.parent
    else:
        walk = os.walk(base)  # lazy and top-down, so pruning ``dirnames`` in place stops the descent
    for dirpath, dirnames, filenames in walk:
        dir_rel = policy.rel(Path(dirpath))
        prefix = "" if dir_rel == "." else f"{dir_rel}/"
        kept_dirs = []
        for name in sorted(dirnames):
            if name in SEARCH_SKIPPED_DIRS:
                continue
            if policy.allows(prefix + name, write=False):
                kept_dirs.append(name)
            else:
                report.not_accessible += 1
        dirnames[:] = kept_dirs
        for name in sorted(filenames):
            file_path = Path(dirpath, name)
            if globs and not glob_matches(globs, file_path.relative_to(base).as_posix()):
                continue
            if not policy.allows(prefix + name, write=False):
                report.not_accessible += 1
                continue
            try:
                info = file_path.stat()
                if not stat.S_ISREG(info.st_mode):
                    continue  # a FIFO or socket: reading it would block the walk
                if info.st_nlink > 1:
                    report.not_accessible += 1  # a hard link may be another name of a file it must not read
                    continue
                if info.st_size > MAX_SEARCH_FILE_BYTES:
                    report.skipped_large += 1
                    continue
                data = file_path.read_bytes()
            except OSError:
                continue  # vanished or unreadable mid-walk: a search is best effort
            if looks_binary(data):
                report.skipped_binary += 1
                continue
            report.files_searched += 1
            matched_here = False
            for lineno, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
                if regex.search(line):
                    matched_here = True
                    report.matches.append(
                        f"{prefix}{name}:{lineno}: {clip(line.strip(), MAX_SEARCH_LINE_CHARS)}"
                    )
                    if len(report.matches) >= limit:
                        report.files_matched += 1
                        report.truncated = True
                        return report
            report.files_matched += matched_here
    return report


async def search_files(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    pattern = str(args["pattern"])
    path = str(args.get("path") or ".")
    base = policy.check(path, write=False)
    if not base.exists():
        raise ToolError(f"`{path}` does not exist")
    flags = 0 if args.get("case_sensitive", True) is not False else re.IGNORECASE
    try:
        regex = re.compile(re.escape(pattern) if args.get("fixed_strings") else pattern, flags)
    except re.error as exc:
        raise ToolError(
            f"invalid regular expression {pattern!r}: {exc}; set fixed_strings=true for literal text"
        ) from exc
    globs = [g.strip() for g in str(args.get("glob") or "").split(",") if g.strip()]
    limit = int_arg(args, "max_results", DEFAULT_SEARCH_RESULTS, 1, MAX_SEARCH_RESULTS)
    # A tree walk can take a while; keep the event loop (other dialogs' streams) responsive meanwhile.
    report = await asyncio.to_thread(_search_tree, policy, base, regex, globs, limit)
    notes = [f"searched {report.files_searched} files"]
    if report.skipped_binary:
        notes.append(f"{report.skipped_binary} binary skipped")
    if report.skipped_large:
        notes.append(f"{report.skipped_large} over {human_size(MAX_SEARCH_FILE_BYTES)} skipped")
    if report.not_accessible:
        notes.append(f"{report.not_accessible} not accessible to you")
    where = policy.rel(base)
    if not report.matches:
        return f"No matches for {pattern!r} in {where} ({'; '.join(notes)})."
    summary = (
        f"{len(report.matches)} matches in {report.files_matched} files under {where} ({'; '.join(notes)})"
    )
    if report.truncated:
        summary += f"; stopped at max_results={limit}, narrow the pattern, path or glob to see the rest"
    return "\n".join([*report.matches, summary])


WS_READ_TOOLS = [
    FuncTool(
        "list_dir",
        "List a workspace directory (default: the root): subdirectories first, then files with sizes. "
        "Entries you may not read are left out and counted.",
        object_schema({"path": {"type": "string", "description": "relative to the workspace root"}}),
        list_dir,
    ),
    FuncTool(
        "read_file",
        "Read a text file with line numbers. The header gives the total lines and bytes (what "
        "overwrite_entire_file asks for). Long files are cut at max_lines; continue with the range it names.",
        object_schema(
            {
                "path": {"type": "string"},
                "range": {
                    "type": "string",
                    "description": 'inclusive 1-based lines: "10~50", "300~" or "~20"',
                },
                "max_lines": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_READ_LINES,
                    "default": DEFAULT_MAX_LINES,
                },
                "show_linenos": {"type": "boolean", "default": True},
            },
            ["path"],
        ),
        read_file,
    ),
    FuncTool(
        "search_files",
        "Search file contents for a Python regular expression (or literal text with fixed_strings) and list "
        "matching lines as path:line: text. Skips binary files, .git, dependency/cache directories and areas "
        "you may not read.",
        object_schema(
            {
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "file or directory to search; default the root"},
                "glob": {"type": "string", "description": 'file filter such as "*.py" or "src/**/*.ts,*.md"'},
                "fixed_strings": {"type": "boolean", "default": False},
                "case_sensitive": {"type": "boolean", "default": True},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_RESULTS,
                    "default": DEFAULT_SEARCH_RESULTS,
                },
            },
            ["pattern"],
        ),
        search_files,
    ),
    READ_PICTURE,
]

