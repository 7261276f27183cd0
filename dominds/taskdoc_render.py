"""The effective Taskdoc: the text injected into every generation of a dialog tree.

Order (fixed, so the model always finds things in the same place): goals, constraints, the non-empty
``bearinmind/`` files, progress, then status and layout notes, then an index of extra sections whose
bodies are *not* injected. Section bodies are opaque Markdown; only the framing is generated here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # runtime import would be circular: dominds.taskdoc re-exports this module's function
    from dominds.taskdoc import Taskdoc, TaskdocNote

Lang = Literal["en", "zh"]

_TOP_SECTIONS = ("goals", "constraints", "progress")

# (en, zh) templates per note kind; {where} is the package-relative path, {detail} extra information.
_NOTE_TEXT: dict[str, tuple[str, str]] = {
    "top_section_misplaced": (
        "`{where}`: goals.md / constraints.md / progress.md belong at the top level only; this file is ignored",
        "`{where}`：goals.md / constraints.md / progress.md 只能位于顶层；此文件被忽略",
    ),
    "bearinmind_name_misplaced": (
        "`{where}`: this name is reserved for `bearinmind/`; this file is ignored",
        "`{where}`：该文件名保留给 `bearinmind/`；此文件被忽略",
    ),
    "bearinmind_unknown_entry": (
        "`{where}`: `bearinmind/` may only hold contracts, acceptance, grants, runbook, decisions, risks (.md)",
        "`{where}`：`bearinmind/` 只能包含 contracts、acceptance、grants、runbook、decisions、risks（.md）",
    ),
    "bearinmind_not_directory": (
        "`{where}`: `bearinmind` must be a directory",
        "`{where}`：`bearinmind` 必须是目录",
    ),
    "bad_name": (
        "`{where}`: not a valid category/selector name (letter first, then letters, digits, _ or -, dotted)",
        "`{where}`：不是合法的类别/选择器名（字母开头，之后为字母、数字、_ 或 -，可用点分段）",
    ),
    "unexpected_entry": (
        "`{where}`: not part of the Taskdoc layout; it is ignored",
        "`{where}`：不属于差遣牒结构；已忽略",
    ),
    "not_a_file": (
        "`{where}`: should be a regular file; it is ignored",
        "`{where}`：应为普通文件；已忽略",
    ),
    "symlink_ignored": (
        "`{where}`: symlinks are not followed inside a Taskdoc; it is ignored",
        "`{where}`：差遣牒内不跟随符号链接；已忽略",
    ),
    "unreadable": (
        "`{where}`: cannot be read ({detail}); shown as empty",
        "`{where}`：无法读取（{detail}）；按空内容处理",
    ),
    "not_utf8": (
        "`{where}`: not valid UTF-8; undecodable bytes are shown as U+FFFD",
        "`{where}`：不是合法的 UTF-8；无法解码的字节显示为 U+FFFD",
    ),
    "too_large": (
        "`{where}`: {detail}, too large to show whole; only its first 256 KiB are used",
        "`{where}`：{detail}，过大无法完整显示；只使用前 256 KiB",
    ),
    "scan_limit": (
        "the package has more than {detail} entries; the rest were not scanned",
        "差遣牒包条目超过 {detail} 个；其余条目未扫描",
    ),
    "not_a_directory": (
        "the Taskdoc path exists but is not a directory; all sections are empty",
        "差遣牒路径存在但不是目录；所有章节为空",
    ),
    "outside_rtws": (
        "the Taskdoc path cannot be used ({detail}); all sections are empty",
        "差遣牒路径不可用（{detail}）；所有章节为空",
    ),
}

_TEXT: dict[str, tuple[str, str]] = {
    "heading": ("# Taskdoc (Dialog Tree)", "# 差遣牒（对话树）"),
    "empty": ("(empty)", "（空）"),
    "status": ("**Status:**", "**状态：**"),
    "no_package": (
        "- `{path}` does not exist yet; `change_mind` creates it.",
        "- `{path}` 尚不存在；`change_mind` 会创建它。",
    ),
    "missing": (
        "- `{file}` is missing or empty; set it with `change_mind`.",
        "- `{file}` 缺失或为空；请用 `change_mind` 设置。",
    ),
    "violations": ("**Layout violations (fix manually):**", "**结构违规（需要人工修复）：**"),
    "extra": ("**Extra sections (index only; bodies not injected):**", "**额外章节索引（不会自动注入）：**"),
    "no_extra": ("- none", "- 无"),
    "hashes": (
        "**Section hashes** (pass the one of the text you last saw as `base_hash` to `change_mind`; "
        "a section changed since is refused with its current text): {hashes}",
        "**章节哈希**（调用 `change_mind` 时把你最后看到的文本的哈希作为 `base_hash` 传入；"
        "若该章节此后被改过，写入会被拒绝并返回当前文本）：{hashes}",
    ),
    "usage": (
        "Read an extra section (or a `bearinmind/` file) with `recall_taskdoc({category, selector})`; "
        "replace one whole section with `change_mind({selector, content, base_hash, category?})` "
        "(no category: goals/constraints/progress; category `bearinmind`: the six fixed names); "
        "add one progress entry with `append_progress({entry})` (nothing is rewritten). "
        "General file tools cannot access `*.tsk/`.",
        "用 `recall_taskdoc({category, selector})` 读取额外章节（或 `bearinmind/` 文件）；"
        "用 `change_mind({selector, content, base_hash, category?})` 整段替换一个章节"
        "（不带 category：goals/constraints/progress；category 为 `bearinmind`：六个固定名称）；"
        "用 `append_progress({entry})` 追加一条进展（不改写已有内容）。"
        "通用文件工具不能访问 `*.tsk/`。",
    ),
}


def _text(key: str, lang: Lang) -> str:
    en, zh = _TEXT[key]
    return zh if lang == "zh" else en


def describe_note(note: TaskdocNote, lang: Lang = "en") -> str:
    """One note as a sentence in the work language."""
    en, zh = _NOTE_TEXT.get(note.kind, ("`{where}`: {detail}", "`{where}`：{detail}"))
    template = zh if lang == "zh" else en
    return template.format(where=note.where, detail=note.detail or note.kind)


def _body(text: str | None, lang: Lang) -> str:
    # Blank lines at the edges would blur the framing; the body itself is left untouched.
    trimmed = (text or "").strip("\r\n").rstrip()
    return trimmed if trimmed.strip() else _text("empty", lang)


def render_effective_taskdoc(taskdoc: Taskdoc, lang: Lang = "en") -> str:
    """The effective Taskdoc text (see the module docstring for the order)."""
    lines = [_text("heading", lang), ""]
    lines += ["## Goals", _body(taskdoc.goals, lang), ""]
    lines += ["## Constraints", _body(taskdoc.constraints, lang), ""]
    bear_blocks = [(name, body) for name, body in taskdoc.bearinmind.items() if body.strip()]
    if bear_blocks:
        lines += ["## Bear In Mind"]
        for name, body in bear_blocks:
            lines += [f"### {name}.md", _body(body, lang), ""]
    lines += ["## Progress", _body(taskdoc.progress, lang), ""]
    # A runtime import: taskdoc_sections imports dominds.taskdoc, which re-exports this module.
    from dominds.taskdoc_sections import content_hash

    hashes = [(name, taskdoc.top_section(name) or "") for name in _TOP_SECTIONS]
    hashes += [(f"bearinmind/{name}", body) for name, body in taskdoc.bearinmind.items()]
    lines += [_text("hashes", lang).format(hashes=", ".join(f"{k} `{content_hash(v)}`" for k, v in hashes)), ""]
    lines += ["---", ""]

    status: list[str] = []
    if not taskdoc.exists:
        status.append(_text("no_package", lang).format(path=taskdoc.rel_path))
    else:
        for name in _TOP_SECTIONS:
            value = taskdoc.top_section(name)
            if value is None or not value.strip():
                status.append(_text("missing", lang).format(file=f"{name}.md"))
    if status:
        lines += [_text("status", lang), *status, ""]

    if taskdoc.notes:
        lines += [_text("violations", lang)]
        lines += [f"- {describe_note(note, lang)}" for note in taskdoc.notes]
        lines += [""]

    lines += [_text("extra", lang)]
    if taskdoc.extra:
        for category, selectors in taskdoc.extra.items():
            for selector in selectors:
                call = json.dumps({"category": category, "selector": selector})
                lines.append(f"- `{category}/{selector}.md` — `recall_taskdoc({call})`")
    else:
        lines.append(_text("no_extra", lang))
    lines += ["", _text("usage", lang)]
    return "\n".join(lines)
