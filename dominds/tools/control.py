"""Intrinsic tools every agent has: reminders, clear_mind, change_mind and append_progress (roots only),
recall_taskdoc.

Handlers find their dialog in ``ctx.services["dialog"]``. Reminders are named by their stable id
(``rem-…``), never by position: a delete no longer shifts the number a parallel update meant. A
``change_mind`` carries the hash of the section text the model last saw (the Taskdoc view and
``recall_taskdoc`` show it); a section changed since is refused with its current text, so a person's
edit made meanwhile is never overwritten unseen. ``clear_mind`` does not switch courses in the
middle of a generation (the call's own result must stay next to the call); it asks the driver to start
the new course when the generation ends, via ``Dialog.pending_new_course`` (persisted in ``latest.yaml``).
"""

from __future__ import annotations

from typing import Any

from dominds.dialog.model import Dialog
from dominds.ids import now_iso
from dominds.store.records import Reminder, new_reminder_id
from dominds.taskdoc import TaskdocError
from dominds.taskdoc_sections import (
    SectionConflict,
    append_section,
    content_hash,
    current_section_text,
    read_section,
    write_section_checked,
)
from dominds.tools.base import FuncTool, ToolCallContext, ToolError, object_schema


def _dialog(ctx: ToolCallContext) -> Dialog:
    dialog = ctx.services.get("dialog")
    if not isinstance(dialog, Dialog):
        raise ToolError("this tool needs a dialog context")
    return dialog


def _reminder_index(dialog: Dialog, reminder_id: Any) -> int:
    for index, reminder in enumerate(dialog.reminders):
        if reminder.id == reminder_id:
            return index
    ids = ", ".join(r.id for r in dialog.reminders)
    raise ToolError(f"no reminder {reminder_id!r}; the reminders are: {ids}" if ids else "there are no reminders")


async def add_reminder(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    reminder = Reminder(id=new_reminder_id(), content=str(args["content"]), created_at=now_iso())
    position = args.get("position")
    if isinstance(position, int) and 1 <= position <= len(dialog.reminders) + 1:
        dialog.reminders.insert(position - 1, reminder)
    else:
        dialog.reminders.append(reminder)
    dialog.save_reminders()
    position = dialog.reminders.index(reminder) + 1
    return f"Reminder #{position} added, id {reminder.id} ({len(dialog.reminders)} in total; name it by its id)."


async def update_reminder(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    index = _reminder_index(dialog, args["reminder_id"])
    dialog.reminders[index] = dialog.reminders[index].model_copy(update={"content": str(args["content"])})
    dialog.save_reminders()
    return f"Reminder {dialog.reminders[index].id} updated."


async def delete_reminder(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    index = _reminder_index(dialog, args["reminder_id"])
    removed = dialog.reminders.pop(index)
    dialog.save_reminders()
    return f"Reminder {removed.id} deleted ({len(dialog.reminders)} left)."


async def clear_mind(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    content = args.get("reminder_content")
    if content:
        await add_reminder(ctx, {"content": content})
    dialog.pending_new_course = True
    dialog.save_latest()  # durable before the tool's result says so
    return (
        f"A new course (#{dialog.latest.current_course + 1}) starts after this generation: messages and pending "
        "questions for the human are cleared; reminders, the Taskdoc and the registry are kept."
    )


async def change_mind(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    if not dialog.is_root:
        raise ToolError("change_mind is for root dialogs only; ask your tellasker with `!?@tellasker` to change the Taskdoc")
    selector, category = str(args["selector"]), args.get("category") or None
    base_hash = args.get("base_hash")
    try:
        current = current_section_text(ctx.rtws.root, dialog.meta.task_doc_path, selector, category)
        if base_hash is None and current.strip():
            raise SectionConflict("base_hash is missing: this section has text, and replacing it unseen could lose an edit", current)
        path = write_section_checked(
            ctx.rtws.root, dialog.meta.task_doc_path, selector, str(args["content"]), category,
            None if base_hash is None else str(base_hash),
        )  # fmt: skip
    except SectionConflict as exc:
        raise ToolError(
            f"change_mind refused: {exc}. Nothing was written. The section's current text "
            f"(base_hash `{exc.current_hash}`) is below; redo your edit on it and call change_mind again with "
            f"that base_hash (or use append_progress to add a progress entry).\n\n{exc.current}"
        ) from exc
    except TaskdocError as exc:
        raise ToolError(str(exc)) from exc
    dialog.publish({"type": "taskdoc_updated", "taskDocPath": dialog.meta.task_doc_path, "file": path.name})
    now = current_section_text(ctx.rtws.root, dialog.meta.task_doc_path, selector, category)
    return (
        f"Taskdoc section {path.relative_to(ctx.rtws.root).as_posix()} replaced (its base_hash is now "
        f"`{content_hash(now)}`); every dialog of the tree sees it now."
    )


async def append_progress(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    if not dialog.is_root:
        raise ToolError("append_progress is for root dialogs only; tell your tellasker what to record")
    entry = str(args["entry"]).strip()
    if not entry:
        raise ToolError("entry is empty: write the progress entry to add")
    try:
        path = append_section(ctx.rtws.root, dialog.meta.task_doc_path, "progress", entry)
    except TaskdocError as exc:
        raise ToolError(str(exc)) from exc
    dialog.publish({"type": "taskdoc_updated", "taskDocPath": dialog.meta.task_doc_path, "file": path.name})
    return f"Progress entry added to {path.relative_to(ctx.rtws.root).as_posix()} (nothing else was changed)."


async def recall_taskdoc(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    try:
        text = read_section(ctx.rtws.root, dialog.meta.task_doc_path, str(args["category"]), str(args["selector"]))
    except TaskdocError as exc:
        raise ToolError(str(exc)) from exc
    return f"{text}\n\n(section hash: `{content_hash(text)}`; pass it as base_hash to change_mind to replace this section)"


CONTROL_TOOLS = [
    FuncTool(
        "add_reminder",
        "Add a reminder: a note that stays in front of you across courses (survives clear_mind).",
        object_schema(
            {"content": {"type": "string"}, "position": {"type": "integer", "description": "1-based position"}},
            ["content"],
        ),
        add_reminder,
    ),
    FuncTool(
        "update_reminder",
        "Replace the text of the reminder with this id (`rem-…`, as your reminders list shows it).",
        object_schema({"reminder_id": {"type": "string"}, "content": {"type": "string"}}, ["reminder_id", "content"]),
        update_reminder,
    ),
    FuncTool(
        "delete_reminder",
        "Delete the reminder with this id (`rem-…`, as your reminders list shows it).",
        object_schema({"reminder_id": {"type": "string"}}, ["reminder_id"]),
        delete_reminder,
    ),
    FuncTool(
        "clear_mind",
        "Start a new course with a clear mind: messages and pending Q4H are cleared; reminders, the Taskdoc and "
        "the subdialog registry are kept. Optionally add a reminder first.",
        object_schema({"reminder_content": {"type": "string"}}),
        clear_mind,
    ),
    FuncTool(
        "change_mind",
        "Replace one whole section of the shared Taskdoc (goals, constraints, progress; or category/selector). "
        "base_hash: the section hash of the text you last saw (the Taskdoc view or recall_taskdoc shows it); "
        "required when the section has text. If the section changed since, nothing is written and you get "
        "its current text to redo your edit on.",
        object_schema(
            {
                "selector": {"type": "string"},
                "content": {"type": "string"},
                "base_hash": {"type": "string"},
                "category": {"type": "string"},
            },
            ["selector", "content"],
        ),
        change_mind,
        root_only=True,
    ),
    FuncTool(
        "append_progress",
        "Add one entry to the Taskdoc's progress section, after what is there (never rewrites it).",
        object_schema({"entry": {"type": "string"}}, ["entry"]),
        append_progress,
        root_only=True,
    ),
    FuncTool(
        "recall_taskdoc",
        "Read a Taskdoc section that is not injected into context (bearinmind/* or an extra category), with "
        "its section hash.",
        object_schema({"category": {"type": "string"}, "selector": {"type": "string"}}, ["category", "selector"]),
        recall_taskdoc,
    ),
]

