"""Tellask tool form (DESIGN §5 "Two forms, one semantics"): a member's Tellask function calls become the
calls the text grammar would have made, so ``tellask_exec.py`` runs both alike.

Each tool-form call is recorded (``TellaskCallRecord``, before it runs) and published as the same
``teammate_call_*`` events a text-form block streams, so the panel and ``dominds show`` draw it the same
way. A call whose arguments are refused is answered at once with a ``[Dominds note]``; every other note,
reply or answer reaches the model as the tool call's result (``messages.py``).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from dominds.dialog.model import Dialog
from dominds.driver.receiver import FuncCallRequest
from dominds.driver.subdialogs import CallToRun, record_note, runtime_call_id
from dominds.ids import now_iso
from dominds.llm.base import ToolSpec
from dominds.store.course_records import TellaskCallRecord
from dominds.tellask_events import TellaskCall, tellask_call_id
from dominds.tellask_tools import TELLASK_TOOL_NAMES, tellask_tool_specs, tool_call_tellask

TellaskForm = Literal["text", "tools", "both"]

INVALID_TOOL_ARGUMENTS = "invalid_tool_arguments"


def takes_tools(form: TellaskForm) -> bool:
    return form in ("tools", "both")


def tellask_tool_specs_for(form: TellaskForm, dialog: Dialog) -> list[ToolSpec]:
    """The Tellask function tools offered to a member in ``tools`` or ``both`` form (none in ``text``)."""
    if not takes_tools(form):
        return []
    return [ToolSpec(s.name, s.description, s.parameters) for s in tellask_tool_specs(in_subdialog=not dialog.is_root)]


def split_tellask_tool_calls(
    calls: list[FuncCallRequest], form: TellaskForm
) -> tuple[list[FuncCallRequest], list[FuncCallRequest]]:
    """(Tellask tool calls, other function calls); in ``text`` form a Tellask tool name is just an unknown tool."""
    if not takes_tools(form):
        return [], calls
    tellasks = [c for c in calls if c.name in TELLASK_TOOL_NAMES]
    return tellasks, [c for c in calls if c.name not in TELLASK_TOOL_NAMES]


def record_tool_form_calls(dialog: Dialog, calls: list[FuncCallRequest], genseq: int) -> tuple[list[CallToRun], bool]:
    """Record and announce each call; returns the calls to run and whether any was refused (a note)."""
    course = dialog.latest.current_course
    to_run: list[CallToRun] = []
    refused = False
    for index, request in enumerate(calls):
        arguments = _arguments(request.arguments_json)
        converted = tool_call_tellask(request.name, arguments, index)
        call = converted if isinstance(converted, TellaskCall) else _refused_call(request, index)
        call_id = runtime_call_id(call.call_id, course, genseq, f"t{index + 1}")
        record = TellaskCallRecord(
            ts=now_iso(),
            genseq=genseq,
            call_id=call_id,
            tool_call_id=request.call_id or call_id,
            tool_name=request.name,
            arguments=arguments,
            tellask_head=call.headline,
            tellask_body=call.body,
        )
        dialog.append(record, sync=False)
        for event in tool_form_call_events(record, course, valid=isinstance(converted, TellaskCall)):
            dialog.publish(event)
        item = CallToRun(call, call_id, form="tools")
        if isinstance(converted, str):
            record_note(dialog, item, genseq, converted)
            refused = True
        else:
            to_run.append(item)
    return to_run, refused


def _arguments(raw: str) -> dict[str, Any] | str:
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return raw
    return parsed if isinstance(parsed, dict) else raw


def _refused_call(request: FuncCallRequest, index: int) -> TellaskCall:
    """A stand-in for a call whose arguments were refused: it is shown and answered, never run."""
    headline = f"{request.name} {request.arguments_json}".strip()
    return TellaskCall(
        headline=headline,
        body="",
        first_mention=None,
        mentions=(),
        tellask_session=None,
        error=INVALID_TOOL_ARGUMENTS,
        call_id=tellask_call_id(None, headline, "", index),
    )


def tool_form_call_events(record: TellaskCallRecord, course: int, *, valid: bool | None = None) -> list[dict[str, Any]]:
    """The ``teammate_call_*`` events of a tool-form call, as a text-form block streams them (live and replay)."""
    gen = {"course": course, "genseq": record.genseq}
    ok = valid if valid is not None else bool(record.tellask_body) and record.tellask_head.startswith("@")
    events: list[dict[str, Any]] = [
        {
            "type": "teammate_call_start_evt",
            "validation": "valid" if ok else INVALID_TOOL_ARGUMENTS,
            "form": "tools",
            "toolName": record.tool_name,
            **gen,
        },
        {"type": "teammate_call_headline_chunk_evt", "chunk": record.tellask_head, **gen},
        {"type": "teammate_call_headline_finish_evt", **gen},
    ]
    if record.tellask_body:
        events += [
            {"type": "teammate_call_body_start_evt", **gen},
            {"type": "teammate_call_body_chunk_evt", "chunk": record.tellask_body, **gen},
            {"type": "teammate_call_body_finish_evt", **gen},
        ]
    events.append({"type": "teammate_call_finish_evt", "callId": record.call_id, **gen})
    return events
