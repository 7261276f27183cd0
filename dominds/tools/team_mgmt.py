"""The ``team-mgmt`` toolset: read and validate the team configuration in ``.minds/``, read-only.

The shadow member ``fuxi`` has it (``team.py``), and the access refusal for ``.minds/`` points at these
tools. Writing the configuration stays the human's: a model can show what is there and what is wrong
(the same problems ``dominds check`` and the panel report), and propose a change for a person to make.
Paths are confined to ``.minds/`` after symlinks are resolved (``check_access`` with the ``.minds``
bypass, then a containment check).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path, PurePosixPath
from typing import Any

from dominds.access import AccessDenied, check_access
from dominds.tools.base import FuncTool, ToolCallContext, ToolError, object_schema

MINDS_DIR = ".minds"
MAX_READ_BYTES = 256 * 1024
MAX_LISTED = 500


def _minds_path(ctx: ToolCallContext, path: str) -> Path:
    rel = path.strip().replace("\\", "/").removeprefix("./").removeprefix(f"{MINDS_DIR}/")
    pure = PurePosixPath(rel or ".")
    if pure.is_absolute() or any(part == ".." for part in pure.parts):
        raise ToolError(f"path {path!r} must be relative to `{MINDS_DIR}/` (e.g. `team.yaml`), without `..`")
    try:
        base = check_access(ctx.rtws.root, MINDS_DIR, write=False, minds_bypass=True)
        target = check_access(ctx.rtws.root, f"{MINDS_DIR}/{pure.as_posix()}", write=False, minds_bypass=True)
    except AccessDenied as exc:
        raise ToolError(exc.render()) from exc
    if target != base and base not in target.parents:
        raise ToolError(f"path {path!r} leads outside `{MINDS_DIR}/`")
    return target


async def team_mgmt_list_files(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    return await asyncio.to_thread(_list_files, _minds_path(ctx, ""))


def _list_files(base: Path) -> str:
    if not base.is_dir():
        return f"`{MINDS_DIR}/` does not exist yet (`dominds init` creates it)."
    listed: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath, name)
            listed.append(f"{path.relative_to(base).as_posix()} ({path.stat().st_size} bytes)")
            if len(listed) >= MAX_LISTED:
                return "\n".join([*listed, f"(first {MAX_LISTED} files only)"])
    return "\n".join(listed) if listed else f"`{MINDS_DIR}/` is empty."


async def team_mgmt_read_file(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    return await asyncio.to_thread(_read_file, _minds_path(ctx, str(args["path"])), str(args["path"]))


def _read_file(target: Path, path: str) -> str:
    if not target.is_file():
        raise ToolError(f"`{MINDS_DIR}/{path}` is not a file; team_mgmt_list_files lists them")
    with target.open("rb") as f:
        data = f.read(MAX_READ_BYTES + 1)
    text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    return text + (f"\n(only the first {MAX_READ_BYTES} bytes are shown)" if len(data) > MAX_READ_BYTES else "")


async def team_mgmt_check(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    """The configuration problems the daemon knows now (team.yaml, llm.yaml, mcp.yaml), reloaded if changed."""
    engine = ctx.services.get("engine")
    config = getattr(getattr(engine, "config", None), "get", None)
    if config is None:
        raise ToolError("team_mgmt_check needs the daemon's configuration; run `dominds check` instead")
    problems = config().problems
    if not problems:
        return "No problems: team.yaml, llm.yaml and mcp.yaml are valid (`dominds check` also asks providers and MCP servers)."
    lines = [
        f"- {p.severity}: {p.source}{f':{p.line}' if p.line else ''}: {p.message}"
        for p in sorted(problems, key=lambda p: (p.source, p.line or 0))
    ]
    return f"{len(problems)} problem(s); a person must fix them (these tools do not write `.minds/`):\n" + "\n".join(lines)


TEAM_MGMT_TOOLS = [
    FuncTool(
        "team_mgmt_list_files",
        "List the files of the team configuration (`.minds/`: team.yaml, llm.yaml, mcp.yaml, personas, memory).",
        object_schema({}),
        team_mgmt_list_files,
    ),
    FuncTool(
        "team_mgmt_read_file",
        "Read one file of the team configuration; path relative to `.minds/` (e.g. `team.yaml`). Read-only: "
        "changes are made by a person.",
        object_schema({"path": {"type": "string"}}, ["path"]),
        team_mgmt_read_file,
    ),
    FuncTool(
        "team_mgmt_check",
        "Validate the team configuration: the problems of team.yaml, llm.yaml and mcp.yaml, with file and line.",
        object_schema({}),
        team_mgmt_check,
    ),
]
