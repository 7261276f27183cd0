"""The workspace access check every general file tool goes through before touching a path.

``check_access`` applies, in order:

1. resolve the path against the rtws (absolute paths only if inside it; ``..`` may not climb out;
   symlinks are resolved and the real target must also be inside the rtws);
2. any segment ending in ``.tsk`` is denied: Taskdoc packages are encapsulated (``change_mind`` and
   ``recall_taskdoc`` are the only way in);
3. ``.dialogs`` and ``.dominds`` at the rtws root are denied (a nested ``sub/.dialogs`` is ordinary
   data): the dialogs, and the daemon's own state: its access token, the last good copy of the team
   configuration it falls back to (``.dominds/last-good/.minds/``: an agent that rewrote it would choose
   the next fallback's toolsets, providers and MCP commands), its caches, workflow sessions;
4. ``.minds`` at the rtws root is denied unless the caller is a team-mgmt tool (``minds_bypass``);
5. a deny pattern matching the path denies;
6. an empty allow list allows everything; otherwise an allow pattern must match.

Steps 2-5 are applied both to the path as written and to its symlink-resolved target, so a link can
neither smuggle a tool into a forbidden area nor around a deny pattern. The area names are compared
case-insensitively because ``FOO.TSK`` is the same directory as ``foo.tsk`` on macOS and Windows.

Pattern semantics (team.yaml ``read_dirs``/``write_dirs``/``no_*_dirs``): a pattern names a directory
scope, so ``src`` matches ``src`` and everything below it but not ``src-old``; a trailing ``/**`` adds
nothing; ``*`` (and ``?``, ``[..]``) match within one segment; ``**`` matches any number of segments,
so ``**/*secret*`` matches any path with a segment containing ``secret``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

ACCESS_DENIED = "ACCESS_DENIED"

# reason -> (en message, zh message, en hint, zh hint). Fields: path, operation, pattern, scope, detail.
_REASONS: dict[str, tuple[str, str, str, str]] = {
    "invalid_path": (
        "`{path}` is not a valid path",
        "`{path}` 不是合法路径",
        "Give a path relative to the workspace root.",
        "请提供相对于工作区根目录的路径。",
    ),
    "outside_rtws": (
        "`{path}` is outside the workspace",
        "`{path}` 位于工作区之外",
        "Use a path inside the workspace, relative to its root; `..` may not climb out of it.",
        "请使用工作区内、相对于其根目录的路径；`..` 不能越出工作区。",
    ),
    "symlink_outside": (
        "`{path}` leads outside the workspace through a symlink",
        "`{path}` 经符号链接指向工作区之外",
        "Symlinks that point outside the workspace cannot be followed by file tools.",
        "文件工具不能跟随指向工作区之外的符号链接。",
    ),
    "unresolvable": (
        "`{path}` cannot be resolved ({detail})",
        "`{path}` 无法解析（{detail}）",
        "Check for a symlink loop.",
        "请检查是否存在符号链接循环。",
    ),
    "taskdoc": (
        "`{path}` is inside a Taskdoc package (`*.tsk/`), which general file tools must not "
        "read, write, list, move or delete",
        "`{path}` 位于差遣牒包（`*.tsk/`）内；通用文件工具不得读取、写入、列出、移动或删除其中内容",
        "Use `change_mind` to replace a Taskdoc section and `recall_taskdoc` to read one that is not "
        "already in your context.",
        "用 `change_mind` 整段替换差遣牒章节，用 `recall_taskdoc` 读取未注入上下文的章节。",
    ),
    "dialogs": (
        "`{path}` is under `.dialogs/`, the runtime's dialog storage",
        "`{path}` 位于 `.dialogs/`（运行时的对话存储）之下",
        "Dialog state is managed by the runtime; no file tool may touch it.",
        "对话状态由运行时管理；任何文件工具都不得访问。",
    ),
    "secret": (
        "`{path}` is the daemon's access token",
        "`{path}` 是守护进程的访问令牌",
        "No tool may read or change it; the user manages it with `dominds url`.",
        "任何工具都不得读取或修改它；用户用 `dominds url` 管理。",
    ),
    "daemon_state": (
        "`{path}` is under `.dominds/`, the daemon's own state (the last good team configuration, caches)",
        "`{path}` 位于 `.dominds/`（守护进程自身的状态：上次可用的团队配置、缓存）之下",
        "The runtime manages it; no file tool may read or change it.",
        "它由运行时管理；任何文件工具都不得读取或修改。",
    ),
    "minds": (
        "`{path}` is under `.minds/`, the team configuration",
        "`{path}` 位于 `.minds/`（团队配置）之下",
        "The team-mgmt tools (`team_mgmt_list_files`, `team_mgmt_read_file`, `team_mgmt_check`) read and "
        "validate the team configuration; changing it is a person's job.",
        "team-mgmt 工具（`team_mgmt_list_files`、`team_mgmt_read_file`、`team_mgmt_check`）可读取并校验团队配置；"
        "修改配置由人来完成。",
    ),
    "denied_by_pattern": (
        "`{path}`: {operation} access is denied by pattern `{pattern}` (no_{operation}_dirs)",
        "`{path}`：{operation} 访问被模式 `{pattern}`（no_{operation}_dirs）拒绝",
        "Your team configuration forbids this path; ask a teammate who has access, or the human.",
        "团队配置禁止你访问此路径；请询问有权限的队友或人类。",
    ),
    "not_allowed": (
        "`{path}` is outside your {operation} scope ({operation}_dirs)",
        "`{path}` 不在你的 {operation} 范围（{operation}_dirs）内",
        "Your {operation} scope is: {scope}.",
        "你的 {operation} 范围是：{scope}。",
    ),
}


class AccessDenied(Exception):
    """A file tool may not touch this path. ``message`` says why, ``hint`` what to do instead."""

    code = ACCESS_DENIED

    def __init__(self, path: str, operation: str, reason: str, **fields: str) -> None:
        self.path = path
        self.operation = operation
        self.reason = reason
        self._fields = {"path": path, "operation": operation, **fields}
        self.message = self._pick(0)
        self.hint = self._pick(2)
        super().__init__(f"{self.message}. {self.hint}")

    def _pick(self, index: int) -> str:
        return _REASONS[self.reason][index].format(**self._fields)

    def render(self, lang: str = "en") -> str:
        """The denial as shown to the model, in the work language."""
        if lang == "zh":
            labels = ("访问被拒绝", "操作", "路径", "代码", "原因", "提示")
            message, hint = self._pick(1), self._pick(3)
        else:
            labels = ("Access Denied", "Operation", "Path", "Code", "Reason", "Hint")
            message, hint = self.message, self.hint
        return "\n".join(
            [
                f"❌ **{labels[0]}**",
                "",
                f"- {labels[1]}: `{self.operation}`",
                f"- {labels[2]}: `{self.path}`",
                f"- {labels[3]}: `{self.code}`",
                f"- {labels[4]}: {message}",
                f"- {labels[5]}: {hint}",
            ]
        )


def _segments(path: str) -> list[str]:
    return [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]


def is_taskdoc_path(path: str) -> bool:
    """True if any segment ends in ``.tsk`` (also true for patterns such as ``**/*.tsk/**``)."""
    return any(segment.lower().endswith(".tsk") for segment in _segments(path))


def _match_prefix(pattern: tuple[str, ...], target: tuple[str, ...]) -> bool:
    """Does ``pattern`` match ``target`` or one of its ancestors (directory-scope semantics)?"""
    if not pattern:
        return True
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match_prefix(rest, target[skip:]) for skip in range(len(target) + 1))
    return bool(target) and fnmatchcase(target[0], head) and _match_prefix(rest, target[1:])


def matches_pattern(rel_path: str, pattern: str) -> bool:
    """Does a team.yaml directory pattern cover this rtws-relative path? (semantics: module docstring)"""
    parts = _segments(pattern)
    while parts and parts[-1] == "**":
        parts.pop()  # `dir/**` is the same scope as `dir`
    return _match_prefix(tuple(parts), tuple(_segments(rel_path)))


def _forbidden_area(parts: Sequence[str], minds_bypass: bool) -> str | None:
    if any(part.lower().endswith(".tsk") for part in parts):
        return "taskdoc"
    first = parts[0].lower() if parts else ""
    if first == ".dialogs":
        return "dialogs"
    if first == ".dominds":
        return "secret" if len(parts) > 1 and parts[1].lower() == "auth-token" else "daemon_state"
    if first == ".minds" and not minds_bypass:
        return "minds"
    return None


def _within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _resolve(path: Path) -> Path:
    """``path.resolve()``, raising on a symlink loop on every Python: 3.11 and 3.12 raise
    ``RuntimeError``, 3.13 returns the path with the loop left in it, which then passed the checks."""
    resolved = path.resolve()
    try:
        os.stat(resolved)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise
    return resolved


def check_access(
    rtws_root: Path,
    path: str,
    *,
    write: bool,
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    minds_bypass: bool = False,
) -> Path:
    """Return the resolved absolute path a file tool may use, or raise ``AccessDenied``.

    ``allow``/``deny`` are the member's ``read_dirs``/``no_read_dirs`` (or the ``write`` pair when
    ``write``); ``minds_bypass`` is for team-mgmt tools only, which restrict themselves to ``.minds``.
    """
    operation = "write" if write else "read"

    def denied(reason: str, **fields: str) -> AccessDenied:
        return AccessDenied(path, operation, reason, **fields)

    if "\0" in path:
        raise denied("invalid_path")
    try:
        root = _resolve(rtws_root)
    except (OSError, RuntimeError) as exc:
        raise denied("unresolvable", detail=str(exc)) from exc
    # The root as given may itself sit behind a symlink (/tmp on macOS); absolute paths may use either.
    root_as_given = Path(os.path.abspath(rtws_root))
    lexical = Path(os.path.normpath(path if os.path.isabs(path) else os.path.join(root_as_given, path)))
    base = next((b for b in (root, root_as_given) if _within(lexical, b)), None)
    if base is None:
        raise denied("outside_rtws")
    written_parts = lexical.relative_to(base).parts

    try:
        resolved = _resolve(lexical)
    except (OSError, RuntimeError) as exc:
        raise denied("unresolvable", detail=str(exc)) from exc
    if not _within(resolved, root):
        raise denied("symlink_outside")
    real_parts = resolved.relative_to(root).parts

    for parts in (written_parts, real_parts):
        area = _forbidden_area(parts, minds_bypass)
        if area is not None:
            raise denied(area)

    written_rel = PurePosixPath(*written_parts).as_posix() if written_parts else "."
    real_rel = PurePosixPath(*real_parts).as_posix() if real_parts else "."
    for pattern in deny:
        if matches_pattern(written_rel, pattern) or matches_pattern(real_rel, pattern):
            raise denied("denied_by_pattern", pattern=pattern)
    # The allow list is judged on the real target: that is the file the tool will actually touch.
    if allow and not any(matches_pattern(real_rel, pattern) for pattern in allow):
        raise denied("not_allowed", scope=", ".join(f"`{pattern}`" for pattern in allow))
    return resolved
