"""Intrinsic tools every agent has: reminders, clear_mind, change_mind (roots only), recall_taskdoc.

Handlers find their dialog in ``ctx.services["dialog"]``. ``clear_mind`` does not switch courses in the
middle of a generation (the call's own result must stay next to the call); it asks the driver to start
the new course when the generation ends, via ``Dialog.pending_new_course`` (persisted in ``latest.yaml``).
"""

from __future__ import annotations

import secrets
from typing import Any

from dominds.dialog.model import Dialog
from dominds.ids import now_iso
from dominds.store.records import Reminder
from dominds.taskdoc import TaskdocError
from dominds.taskdoc_sections import read_section, write_section
from dominds.tools.base import FuncTool, ToolCallContext, ToolError, object_schema


def _dialog(ctx: ToolCallContext) -> Dialog:
    dialog = ctx.services.get("dialog")
    if not isinstance(dialog, Dialog):
        raise ToolError("this tool needs a dialog context")
    return dialog


def _reminder_index(dialog: Dialog, number: Any) -> int:
    if not isinstance(number, int) or not 1 <= number <= len(dialog.reminders):
        count = len(dialog.reminders)
        raise ToolError(f"reminder_no must be between 1 and {count}" if count else "there are no reminders")
    return number - 1


async def add_reminder(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    reminder = Reminder(id=f"rem-{secrets.token_hex(4)}", content=str(args["content"]), created_at=now_iso())
    position = args.get("position")
    if isinstance(position, int) and 1 <= position <= len(dialog.reminders) + 1:
        dialog.reminders.insert(position - 1, reminder)
    else:
        dialog.reminders.append(reminder)
    dialog.save_reminders()
    return f"Reminder #{dialog.reminders.index(reminder) + 1} added ({len(dialog.reminders)} in total)."


async def update_reminder(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    index = _reminder_index(dialog, args["reminder_no"])
    dialog.reminders[index] = dialog.reminders[index].model_copy(update={"content": str(args["content"])})
    dialog.save_reminders()
    return f"Reminder #{index + 1} updated."


async def delete_reminder(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    index = _reminder_index(dialog, args["reminder_no"])
    del dialog.reminders[index]
    dialog.save_reminders()
    return f"Reminder #{index + 1} deleted ({len(dialog.reminders)} left)."


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
    try:
        path = write_section(
            ctx.rtws.root, dialog.meta.task_doc_path, str(args["selector"]), str(args["content"]), args.get("category")
        )
    except TaskdocError as exc:
        raise ToolError(str(exc)) from exc
    dialog.publish({"type": "taskdoc_updated", "taskDocPath": dialog.meta.task_doc_path, "file": path.name})
    return f"Taskdoc section {path.relative_to(ctx.rtws.root).as_posix()} replaced; every dialog of the tree sees it now."


async def recall_taskdoc(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    dialog = _dialog(ctx)
    try:
        return read_section(ctx.rtws.root, dialog.meta.task_doc_path, str(args["category"]), str(args["selector"]))
    except TaskdocError as exc:
        raise ToolError(str(exc)) from exc


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
        "Replace the text of reminder #reminder_no (1-based).",
        object_schema({"reminder_no": {"type": "integer"}, "content": {"type": "string"}}, ["reminder_no", "content"]),
        update_reminder,
    ),
    FuncTool(
        "delete_reminder",
        "Delete reminder #reminder_no (1-based).",
        object_schema({"reminder_no": {"type": "integer"}}, ["reminder_no"]),
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
        "Replace one whole section of the shared Taskdoc (goals, constraints, progress; or category/selector).",
        object_schema(
            {"selector": {"type": "string"}, "content": {"type": "string"}, "category": {"type": "string"}},
            ["selector", "content"],
        ),
        change_mind,
        root_only=True,
    ),
    FuncTool(
        "recall_taskdoc",
        "Read a Taskdoc section that is not injected into context (bearinmind/* or an extra category).",
        object_schema({"category": {"type": "string"}, "selector": {"type": "string"}}, ["category", "selector"]),
        recall_taskdoc,
    ),
]

