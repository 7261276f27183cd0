"""The ``memory`` and ``team_memory`` toolsets: Markdown notes the driver puts into every context.

Personal memory lives under ``.minds/memory/individual/<member>/`` (loaded for that member only), team
memory under ``.minds/memory/team_shared/`` (loaded for everyone); see ``memory_messages`` in
``dominds/driver/context.py``. A tool names a note by a relative ``.md`` path inside that directory.

Paths are confined twice: the argument itself must be a plain relative ``.md`` path (no ``..``, not
absolute), and the result of ``check_access`` (with the ``.minds`` bypass these tools need) must lie in
the caller's memory directory after symlinks are resolved. The member's ``read_dirs``/``no_*_dirs`` are
not applied: they describe the workspace, while a member's memory is its own (``pangu`` denies itself
``.minds/**`` yet has the memory toolsets).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from dominds.access import AccessDenied, check_access
from dominds.store.atomic import remove_file, write_atomic
from dominds.store.errors import WriteFailedError
from dominds.tools.base import FuncTool, ToolCallContext, ToolError, object_schema

MEMORY_DIR = ".minds/memory"
TEAM_MEMORY_DIR = f"{MEMORY_DIR}/team_shared"
MAX_MEMORY_BYTES = 64 * 1024
"""One note's limit: every note is sent with every generation, so a big one costs on every call."""
_MEMBER_ID_RE = re.compile(r"[\w][\w.-]*")  # the characters team.yaml allows in a member id


def personal_memory_dir(agent_id: str) -> str:
    if not _MEMBER_ID_RE.fullmatch(agent_id) or ".." in agent_id:
        raise ToolError(f"member id {agent_id!r} cannot name a memory directory")
    return f"{MEMORY_DIR}/individual/{agent_id}"


def memory_path(ctx: ToolCallContext, base: str, path: str) -> tuple[Path, str]:
    """The absolute file for ``path`` inside the memory directory ``base``, and its name as shown."""
    note = path.strip().replace("\\", "/")
    pure = PurePosixPath(note)
    if not note or pure.is_absolute() or re.match(r"[A-Za-z]:", note):
        raise ToolError(
            f"memory path {path!r} must be relative to your memory directory, e.g. `notes/api.md`"
        )
    if any(part == ".." for part in pure.parts):
        raise ToolError(f"memory path {path!r} must not contain `..`")
    if pure.suffix != ".md" or pure.name == ".md":
        raise ToolError(f"memory path {path!r} must name a Markdown file ending in `.md`")
    root = ctx.rtws.root
    try:
        base_dir = check_access(root, base, write=True, minds_bypass=True)
        target = check_access(root, f"{base}/{pure.as_posix()}", write=True, minds_bypass=True)
    except AccessDenied as exc:
        raise ToolError(exc.render()) from exc
    # check_access keeps the path inside the workspace; this keeps it inside *this* memory directory,
    # also when a symlink in there points at another member's notes or at the team configuration.
    if base_dir not in target.parents:
        raise ToolError(f"memory path {path!r} leads outside `{base}/`")
    return target, pure.as_posix()


def memory_content(args: dict[str, Any]) -> bytes:
    text = str(args["content"])
    data = (text if text.endswith("\n") else text + "\n").encode("utf-8")
    if len(data) > MAX_MEMORY_BYTES:
        raise ToolError(
            f"memory content is {len(data)} bytes; the limit is {MAX_MEMORY_BYTES} because every note is in "
            "every context. Split it, or keep the detail in a workspace file and remember its path."
        )
    return data


def save(target: Path, data: bytes, shown: str) -> None:
    try:
        write_atomic(target, data)
    except WriteFailedError as exc:
        raise ToolError(f"memory `{shown}`: {exc.problem}; nothing was changed") from exc


def prune_empty_dirs(start: Path, stop: Path) -> None:
    """Remove directories a dropped note leaves empty, up to (not including) ``stop``."""
    directory = start
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:  # not empty (or gone): stop here
            return
        directory = directory.parent


async def _add(ctx: ToolCallContext, base: str, args: dict[str, Any], kind: str) -> str:
    target, shown = memory_path(ctx, base, str(args["path"]))
    if target.exists():
        raise ToolError(f"{kind} `{shown}` already exists; use replace_{kind.replace(' ', '_')} to change it")
    data = memory_content(args)
    save(target, data, shown)
    return f"{kind.capitalize()} `{shown}` added ({len(data)} bytes); it is in context from the next generation on."


async def _replace(ctx: ToolCallContext, base: str, args: dict[str, Any], kind: str) -> str:
    target, shown = memory_path(ctx, base, str(args["path"]))
    if not target.is_file():
        raise ToolError(f"{kind} `{shown}` does not exist; use add_{kind.replace(' ', '_')} to create it")
    data = memory_content(args)
    save(target, data, shown)
    return f"{kind.capitalize()} `{shown}` replaced ({len(data)} bytes)."


async def _drop(ctx: ToolCallContext, base: str, args: dict[str, Any], kind: str) -> str:
    target, shown = memory_path(ctx, base, str(args["path"]))
    if not target.is_file():
        raise ToolError(f"{kind} `{shown}` does not exist")
    try:
        remove_file(target)
    except WriteFailedError as exc:
        raise ToolError(f"{kind} `{shown}`: {exc.problem}") from exc
    prune_empty_dirs(target.parent, ctx.rtws.root.resolve() / MEMORY_DIR)
    return f"{kind.capitalize()} `{shown}` dropped."


async def add_memory(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    return await _add(ctx, personal_memory_dir(ctx.agent_id), args, "memory")


async def replace_memory(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    return await _replace(ctx, personal_memory_dir(ctx.agent_id), args, "memory")


async def drop_memory(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    return await _drop(ctx, personal_memory_dir(ctx.agent_id), args, "memory")


async def list_memory(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    base = personal_memory_dir(ctx.agent_id)
    try:
        base_dir = check_access(ctx.rtws.root, base, write=False, minds_bypass=True)
    except AccessDenied as exc:
        raise ToolError(exc.render()) from exc
    notes = sorted(p for p in base_dir.rglob("*.md") if p.is_file()) if base_dir.is_dir() else []
    if not notes:
        return "You have no personal memory yet (add_memory creates a note)."
    lines = [f"Your personal memory ({len(notes)} notes, all already in your context):"]
    for note in notes:
        lines.append(f"- {note.relative_to(base_dir).as_posix()} ({note.stat().st_size} bytes)")
    return "\n".join(lines)


async def add_team_memory(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    return await _add(ctx, TEAM_MEMORY_DIR, args, "team memory")


async def replace_team_memory(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    return await _replace(ctx, TEAM_MEMORY_DIR, args, "team memory")


async def drop_team_memory(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    return await _drop(ctx, TEAM_MEMORY_DIR, args, "team memory")


_NOTE_PATH = {"type": "string", "description": "relative .md path, e.g. `project/conventions.md`"}
_PATH_SCHEMA = object_schema({"path": _NOTE_PATH}, ["path"])
_NOTE_SCHEMA = object_schema({"path": _NOTE_PATH, "content": {"type": "string"}}, ["path", "content"])

MEMORY_TOOLS = [
    FuncTool(
        "add_memory",
        "Save a new personal memory note (Markdown). Your notes are in your context in every dialog, "
        "so keep them short and durable: conventions, decisions, where things are.",
        _NOTE_SCHEMA,
        add_memory,
    ),
    FuncTool(
        "replace_memory", "Replace the content of one of your memory notes.", _NOTE_SCHEMA, replace_memory
    ),
    FuncTool("drop_memory", "Delete one of your memory notes.", _PATH_SCHEMA, drop_memory),
    FuncTool("list_memory", "List your memory notes with their sizes.", object_schema({}), list_memory),
]

TEAM_MEMORY_TOOLS = [
    FuncTool(
        "add_team_memory",
        "Save a new team memory note (Markdown) that every teammate sees in every dialog. Only for facts "
        "the whole team needs.",
        _NOTE_SCHEMA,
        add_team_memory,
    ),
    FuncTool(
        "replace_team_memory", "Replace the content of a team memory note.", _NOTE_SCHEMA, replace_team_memory
    ),
    FuncTool("drop_team_memory", "Delete a team memory note.", _PATH_SCHEMA, drop_team_memory),
]

