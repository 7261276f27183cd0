"""What every general file tool shares: the calling member's path policy (``check_access`` with its
allow/deny lists; a refusal is a ``ToolError`` carrying the Access Denied text) and small helpers for
bounded, readable output."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dominds.access import AccessDenied, check_access
from dominds.team import Member
from dominds.tools.base import ToolCallContext, ToolError

BINARY_SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes marks a file as binary (the heuristic git and ripgrep use)."""


@dataclass(frozen=True)
class PathPolicy:
    """The calling member's view of the workspace: ``check_access`` with its read and write lists."""

    root: Path
    read_allow: tuple[str, ...] = ()
    read_deny: tuple[str, ...] = ()
    write_allow: tuple[str, ...] = ()
    write_deny: tuple[str, ...] = ()

    @classmethod
    def for_call(cls, ctx: ToolCallContext) -> PathPolicy:
        member = calling_member(ctx)
        if member is None:  # no engine (unit tests) or an unknown member: the area rules still apply
            return cls(ctx.rtws.root)
        return cls(
            ctx.rtws.root, member.read_dirs, member.no_read_dirs, member.write_dirs, member.no_write_dirs
        )

    def check(self, path: str, *, write: bool) -> Path:
        """The resolved absolute path, or ``ToolError`` with the Access Denied text."""
        allow, deny = (self.write_allow, self.write_deny) if write else (self.read_allow, self.read_deny)
        try:
            resolved = check_access(self.root, path, write=write, allow=allow, deny=deny)
        except AccessDenied as exc:
            raise ToolError(exc.render()) from exc
        links = hard_link_count(resolved)
        if links > 1:
            raise ToolError(
                f"`{path}` is a hard-linked file ({links} names for the same data); another name may be outside the "
                "files you may use (a Taskdoc, or outside the workspace), so file tools do not use it"
            )
        return resolved

    def allows(self, path: str, *, write: bool) -> bool:
        try:
            self.check(path, write=write)
        except ToolError:
            return False
        return True

    def rel(self, resolved: Path) -> str:
        """How a checked path is shown to the model: relative to the workspace root, POSIX style."""
        try:
            rel = resolved.relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return resolved.as_posix()
        return rel or "."


def hard_link_count(path: Path) -> int:
    """Links of a regular file (1 for a plain file; 0 when it does not exist or is not a regular file)."""
    try:
        info = path.stat()
    except OSError:
        return 0
    return info.st_nlink if stat.S_ISREG(info.st_mode) else 0


def calling_member(ctx: ToolCallContext) -> Member | None:
    """The calling member as configured now (team.yaml is re-read when it changes), if an engine runs."""
    engine = ctx.services.get("engine")
    if engine is None:
        return None
    member = engine.config.get().team.member(ctx.agent_id)
    return member if isinstance(member, Member) else None


def count_lines(data: bytes) -> int:
    """Lines as ``read_file`` numbers them: a last line without a newline still counts."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def looks_binary(head: bytes) -> bool:
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more chars]"


def int_arg(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    """An optional integer argument clamped into range (the schema says the range; models overshoot)."""
    value = args.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ToolError(f"`{name}` must be an integer")
    return max(low, min(high, value))


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def os_error(exc: OSError, path: str) -> ToolError:
    """An OS failure the model can act on (missing file, permission), without a traceback."""
    return ToolError(f"`{path}`: {exc.strerror or exc}")
