"""The ``ws_mod`` toolset: ``ws_read`` plus tools that create, change, move and delete workspace files.

Paths go through the same ``PathPolicy`` (``check_access`` with the member's write lists) as the read
tools. Tools that also reveal what a file contains (``replace_in_file`` says whether text occurs,
``overwrite_entire_file`` reports the current size) check read access too, so a write-only area does
not leak. Content is written with ``write_atomic``: a reader or a crash sees the old or the new file,
never half of it.

Moving and deleting act on the entry itself, not on what a final symlink points to: removing a link
removes the link. ``entry_path`` therefore checks the path as written (and its target), the parent
directory's real location, and the entry at that real location, so neither a symlinked parent nor a
symlinked leaf can carry a delete outside the workspace or around a deny pattern. Only files and
symlinks move (there is no ``move_dir``): moving a directory would move whatever it holds, including
areas the member may not touch.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from dominds.store.atomic import write_atomic
from dominds.store.errors import WriteFailedError
from dominds.tools.base import FuncTool, ToolCallContext, ToolError, object_schema
from dominds.tools.fs import WS_READ_TOOLS
from dominds.tools.fs_common import PathPolicy, count_lines, os_error


def with_final_newline(content: str) -> str:
    """Files end with a newline (POSIX text files; diffs stay clean); empty content stays empty."""
    return content if not content or content.endswith("\n") else content + "\n"


def report(action: str, path: str, **fields: Any) -> str:
    """A small YAML result: the model can quote the new totals into the next overwrite."""
    return yaml.safe_dump({"ok": action, "path": path, **fields}, sort_keys=False, allow_unicode=True).strip()


def stats_of(data: bytes) -> dict[str, int]:
    return {"total_lines": count_lines(data), "total_bytes": len(data)}


def write_file(target: Path, data: bytes, shown_path: str) -> None:
    try:
        mode = target.stat().st_mode & 0o7777  # keep an executable script executable
    except FileNotFoundError:
        mode = None
    try:
        write_atomic(target, data, mode=mode)
    except WriteFailedError as exc:
        raise ToolError(f"`{shown_path}`: {exc.problem}; the file was not changed") from exc


def read_existing(target: Path, path: str) -> bytes:
    if target.is_dir():
        raise ToolError(f"`{path}` is a directory")
    try:
        return target.read_bytes()
    except FileNotFoundError as exc:
        raise ToolError(f"`{path}` does not exist; use create_new_file") from exc
    except OSError as exc:
        raise os_error(exc, path) from exc


def checked_for_read_and_write(policy: PathPolicy, path: str) -> Path:
    policy.check(path, write=False)
    return policy.check(path, write=True)


def entry_path(policy: PathPolicy, path: str) -> Path:
    """The directory entry ``path`` names (a final symlink is not followed), checked for writing.

    Checks: ``path`` as written and its target; the parent's real location (containment and areas
    only: a member allowed to write ``src`` must be able to delete ``src`` itself); the entry at that
    real location against the member's lists.
    """
    target = policy.check(path, write=True)
    root = policy.root.resolve()
    if target == root:
        raise ToolError("the workspace root itself cannot be moved or removed")
    lexical = Path(os.path.normpath(os.path.join(policy.root, path)))
    parent = PathPolicy(policy.root).check(str(lexical.parent), write=True)
    entry = parent / lexical.name
    policy.check(policy.rel(entry), write=True)
    return entry


# ----------------------------------------------------------------------------------------- handlers


async def create_new_file(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    path = str(args["path"])
    target = policy.check(path, write=True)
    if target.exists() or target.is_symlink():
        raise ToolError(f"`{path}` already exists; use overwrite_entire_file or replace_in_file to change it")
    data = with_final_newline(str(args.get("content", ""))).encode("utf-8")
    write_file(target, data, path)
    return report("created", policy.rel(target), **stats_of(data))


async def overwrite_entire_file(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    path = str(args["path"])
    target = checked_for_read_and_write(policy, path)
    old = read_existing(target, path)
    known = (args["known_old_total_lines"], args["known_old_total_bytes"])
    actual = (count_lines(old), len(old))
    if known != actual:
        # The model's picture of the file is out of date (someone else edited it, or it guessed):
        # overwriting now would silently drop changes it never saw.
        raise ToolError(
            f"refused: `{path}` now has {actual[0]} lines and {actual[1]} bytes, not {known[0]} and {known[1]}. "
            "read_file it again (its header shows both totals) and redo the change on the current content."
        )
    data = with_final_newline(str(args["content"])).encode("utf-8")
    write_file(target, data, path)
    return report("overwritten", policy.rel(target), **stats_of(data))


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def occurrence_offsets(text: str, old: str) -> list[int]:
    offsets, start = [], text.find(old)
    while start != -1:
        offsets.append(start)
        start = text.find(old, start + len(old))
    return offsets


async def replace_in_file(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    path = str(args["path"])
    old, new, count = str(args["old"]), str(args["new"]), args.get("count")
    if not old:
        raise ToolError("`old` must not be empty; use append_to_file or create_new_file to add text")
    target = checked_for_read_and_write(policy, path)
    try:
        text = read_existing(target, path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"`{path}` is not UTF-8 text; replace_in_file edits text files only") from exc
    offsets = occurrence_offsets(text, old)
    lines = [line_of(text, offset) for offset in offsets]
    if not offsets:
        crlf = " The file uses CRLF (\\r\\n) line endings." if "\r\n" in text and "\r\n" not in old else ""
        raise ToolError(
            f"`old` does not occur in `{path}`. It must match exactly, including indentation and line breaks; "
            f"read_file with show_linenos=false shows the text to copy.{crlf}"
        )
    if count is None and len(offsets) > 1:
        raise ToolError(
            f"`old` occurs {len(offsets)} times in `{path}` (lines {', '.join(map(str, lines[:20]))}); "
            "include more surrounding text to make it unique, or pass `count` to replace the first N."
        )
    wanted = 1 if count is None else int(count)
    if wanted > len(offsets):
        raise ToolError(f"`old` occurs only {len(offsets)} times in `{path}`, fewer than count={wanted}")
    data = text.replace(old, new, wanted).encode("utf-8")
    write_file(target, data, path)
    return report(
        "replaced", policy.rel(target), occurrences=wanted, at_old_lines=lines[:wanted], **stats_of(data)
    )


async def append_to_file(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    path = str(args["path"])
    target = checked_for_read_and_write(policy, path)
    if not target.exists() and args.get("create") is not True:
        raise ToolError(f"`{path}` does not exist; pass create=true or use create_new_file")
    old = read_existing(target, path) if target.exists() else b""
    separator = b"\n" if old and not old.endswith(b"\n") else b""  # never glue onto an unfinished line
    data = old + separator + with_final_newline(str(args["content"])).encode("utf-8")
    write_file(target, data, path)
    return report("appended", policy.rel(target), **stats_of(data))


async def mk_dir(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    path = str(args["path"])
    target = policy.check(path, write=True)
    parents = args.get("parents") is True
    if target.is_dir() and parents:
        return report("exists", policy.rel(target))
    try:
        target.mkdir(parents=parents)
    except FileExistsError as exc:
        raise ToolError(f"`{path}` already exists") from exc
    except FileNotFoundError as exc:
        raise ToolError(f"the parent of `{path}` does not exist; pass parents=true") from exc
    except OSError as exc:
        raise os_error(exc, path) from exc
    return report("created", policy.rel(target))


async def move_file(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    source_path, dest_path = str(args["from"]), str(args["to"])
    source = entry_path(policy, source_path)
    dest = entry_path(policy, dest_path)
    if not source.is_symlink():
        if not source.exists():
            raise ToolError(f"`{source_path}` does not exist")
        if source.is_dir():
            raise ToolError(f"`{source_path}` is a directory; move_file moves files (and symlinks) only")
    if dest.exists() or dest.is_symlink():
        raise ToolError(f"`{dest_path}` already exists; remove it first or pick another name")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rename(
            source, dest
        )  # one filesystem inside the workspace: atomic, and never clobbers (checked above)
    except OSError as exc:
        raise os_error(exc, f"{source_path} -> {dest_path}") from exc
    return report("moved", policy.rel(dest), **{"from": policy.rel(source)})


async def rm_file(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    path = str(args["path"])
    entry = entry_path(policy, path)
    if entry.is_dir() and not entry.is_symlink():
        raise ToolError(f"`{path}` is a directory; use rm_dir")
    try:
        entry.unlink()
    except FileNotFoundError as exc:
        raise ToolError(f"`{path}` does not exist") from exc
    except OSError as exc:
        raise os_error(exc, path) from exc
    return report("removed", policy.rel(entry))


async def rm_dir(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    path = str(args["path"])
    entry = entry_path(policy, path)
    if entry.is_symlink() or not entry.is_dir():
        raise ToolError(f"`{path}` is not a directory" + (" (use rm_file)" if entry.exists() else ""))
    recursive = args.get("recursive") is True
    removed_entries = 0
    if recursive:
        # Everything inside must be deletable by this member: a Taskdoc package, a denied file or a link
        # leading out of the workspace anywhere below refuses the whole removal (nothing is deleted).
        for dirpath, dirnames, filenames in os.walk(entry):
            for name in [*dirnames, *filenames]:
                policy.check(policy.rel(Path(dirpath, name)), write=True)
                removed_entries += 1
    try:
        if recursive:
            shutil.rmtree(entry)
        else:
            entry.rmdir()
    except OSError as exc:
        if not recursive and entry.exists() and any(entry.iterdir()):
            raise ToolError(
                f"`{path}` is not empty; pass recursive=true to remove it with its content"
            ) from exc
        raise os_error(exc, path) from exc
    return report("removed", policy.rel(entry), entries_inside=removed_entries)


_PATH = {"type": "string", "description": "relative to the workspace root"}

WS_MOD_TOOLS = [
    *WS_READ_TOOLS,
    FuncTool(
        "create_new_file",
        "Create a file that does not exist yet (parent directories are created). A final newline is added "
        "to non-empty content.",
        object_schema({"path": _PATH, "content": {"type": "string", "default": ""}}, ["path"]),
        create_new_file,
    ),
    FuncTool(
        "overwrite_entire_file",
        "Replace a whole existing file. Give its current totals from read_file's header; a mismatch means "
        "your view is stale and the write is refused. Prefer replace_in_file for local edits.",
        object_schema(
            {
                "path": _PATH,
                "known_old_total_lines": {"type": "integer", "minimum": 0},
                "known_old_total_bytes": {"type": "integer", "minimum": 0},
                "content": {"type": "string"},
            },
            ["path", "known_old_total_lines", "known_old_total_bytes", "content"],
        ),
        overwrite_entire_file,
    ),
    FuncTool(
        "replace_in_file",
        "Replace exact text in a file. `old` must occur exactly once unless `count` is given (then the first "
        "`count` occurrences are replaced). Include enough surrounding lines to make `old` unique.",
        object_schema(
            {
                "path": _PATH,
                "old": {"type": "string", "minLength": 1},
                "new": {"type": "string"},
                "count": {"type": "integer", "minimum": 1},
            },
            ["path", "old", "new"],
        ),
        replace_in_file,
    ),
    FuncTool(
        "append_to_file",
        "Append text to the end of a file (a newline is inserted first if the file does not end with one).",
        object_schema(
            {
                "path": _PATH,
                "content": {"type": "string"},
                "create": {"type": "boolean", "default": False, "description": "create the file if missing"},
            },
            ["path", "content"],
        ),
        append_to_file,
    ),
    FuncTool(
        "mk_dir",
        "Create a directory; with parents=true also its missing parents (and no error if it exists).",
        object_schema({"path": _PATH, "parents": {"type": "boolean", "default": False}}, ["path"]),
        mk_dir,
    ),
    FuncTool(
        "move_file",
        "Move or rename a file (or symlink). The destination must not exist; its directories are created.",
        object_schema({"from": _PATH, "to": _PATH}, ["from", "to"]),
        move_file,
    ),
    FuncTool(
        "rm_file",
        "Delete a file (a symlink is removed itself, not its target).",
        object_schema({"path": _PATH}, ["path"]),
        rm_file,
    ),
    FuncTool(
        "rm_dir",
        "Delete a directory: an empty one, or with recursive=true everything in it (refused as a whole if "
        "anything inside is not yours to delete).",
        object_schema({"path": _PATH, "recursive": {"type": "boolean", "default": False}}, ["path"]),
        rm_dir,
    ),
]

