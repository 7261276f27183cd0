"""Course records → the events the live stream produced for them, flagged ``replay: true``.

A client that opens a dialog (or reconnects after the replay buffer moved on) gets the transcript
this way, so the panel renders one event vocabulary whether it watched live or not. The mapping
mirrors the live emitters: ``generation.py`` (prompts, gen start/finish, stream errors),
``receiver.py`` (thinking, saying, markdown and tellask events), ``tool_exec.py``,
``tellask_exec.py`` and ``supply.py``. Tellask call ids are re-derived exactly like the live
receiver: each ``agent_words_record`` is parsed with a fresh parser and numbered 1.. per generation.

Events the live stream sends but files do not keep are synthesised where the record says enough:
``stream_error_evt`` from a ``gen_finish_record`` with ``status: error``, ``context_health_evt`` from
its snapshot. The segment being streamed right now (``Dialog.streaming_text``) is appended at the end.
"""

from __future__ import annotations

import json
from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver.receiver import (
    finish_event_fields,
    incomplete_fields,
    parser_event_payloads,
    plain_fields,
)
from dominds.driver.subdialogs import assignment_msg_id, prompt_event_fields
from dominds.driver.tool_form import tool_form_call_events
from dominds.server.render import enrich
from dominds.store.course_records import (
    AgentThoughtRecord,
    AgentWordsRecord,
    CourseRecord,
    CourseStartRecord,
    FuncCallRecord,
    FuncResultRecord,
    GenFinishRecord,
    GenStartRecord,
    HumanTextRecord,
    RunMarkerRecord,
    SubdialogCreatedRecord,
    TeammateCallResultRecord,
    TeammateResponseRecord,
    TellaskCallRecord,
)
from dominds.store.records import Assignment
from dominds.tellask import TellaskParser

Event = dict[str, Any]


class _CourseReplay:
    """Turns one course's records into events; keeps the per-generation saying-segment counter."""

    def __init__(self, dialog: Dialog, course: int) -> None:
        self.dialog = dialog
        self.course = course
        self.segments: dict[int, int] = {}
        """genseq → saying segments seen so far (the live receiver numbers them 1.. per generation)."""

    def _assignment(self, record: HumanTextRecord) -> Assignment | None:
        """The tellask behind an assignment prompt; records written before they kept it fall back to
        ``dialog.yaml``'s current assignment when the prompt is that one (older ones show as framed)."""
        if record.origin != "assignment":
            return None
        if record.assignment is not None:
            return record.assignment
        current = self.dialog.meta.assignment_from_sup
        if current is not None and record.msg_id == assignment_msg_id(current.call_id, self.dialog.self_id):
            return current
        return None

    def events(self, record: CourseRecord) -> list[Event]:
        course = self.course
        if isinstance(record, CourseStartRecord):
            return []
        if isinstance(record, HumanTextRecord):
            event: Event = {
                "type": "end_of_user_saying_evt",
                "course": course,
                "genseq": record.genseq,
                "msgId": record.msg_id,
                "content": record.content,
                "grammar": record.grammar,
                "origin": record.origin,
            }
            assignment = self._assignment(record)
            if assignment is not None:
                record = record.model_copy(update={"assignment": assignment})
            event.update(prompt_event_fields(record))
            return [event]
        if isinstance(record, GenStartRecord):
            return [{"type": "generating_start_evt", "course": course, "genseq": record.genseq}]
        if isinstance(record, AgentThoughtRecord):
            gen = {"course": course, "genseq": record.genseq}
            return [
                {"type": "thinking_start_evt", **gen},
                {"type": "thinking_chunk_evt", "chunk": record.content, **gen},
                {"type": "thinking_finish_evt", **incomplete_fields(record), **gen},
            ]
        if isinstance(record, AgentWordsRecord):
            return self._saying(record)
        if isinstance(record, FuncCallRecord):
            arguments = record.arguments if isinstance(record.arguments, str) else _json(record.arguments)
            return [
                {
                    "type": "func_call_requested_evt",
                    "course": course,
                    "genseq": record.genseq,
                    "funcId": record.id,
                    "funcName": record.name,
                    "arguments": arguments,
                }
            ]
        if isinstance(record, FuncResultRecord):
            return [
                {
                    "type": "func_result_evt",
                    "course": course,
                    "genseq": record.genseq,
                    "id": record.id,
                    "name": record.name,
                    "content": record.content,
                    "isError": record.is_error,
                }
            ]
        if isinstance(record, TellaskCallRecord):
            return tool_form_call_events(record, course)
        if isinstance(record, TeammateCallResultRecord):
            return [
                {
                    "type": "teammate_call_response_evt",
                    "course": course,
                    "calling_genseq": record.genseq,
                    "responderId": record.responder_id,
                    "tellaskHead": record.tellask_head,
                    "status": record.status,
                    "result": record.result,
                    "callId": record.call_id,
                }
            ]
        if isinstance(record, TeammateResponseRecord):
            return [self._teammate_response(record)]
        if isinstance(record, SubdialogCreatedRecord):
            return [
                {
                    "type": "subdialog_created_evt",
                    "course": course,
                    "genseq": record.genseq,
                    "parentDialog": self.dialog.ident,
                    "subDialog": {"selfId": record.subdialog_id, "rootId": self.dialog.root_id},
                    "targetAgentId": record.target_agent_id,
                    "tellaskHead": record.tellask_head,
                    "tellaskBody": record.tellask_body,
                    "callId": record.call_id,
                    "callType": record.call_type,
                    "reused": record.reused,
                }
            ]
        if isinstance(record, RunMarkerRecord):
            marker: Event = {"type": "dlg_run_state_marker_evt", "kind": record.kind}
            if record.reason is not None:
                marker["reason"] = record.reason
            return [marker]
        if isinstance(record, GenFinishRecord):
            return self._gen_finish(record)
        return []  # pragma: no cover - exhaustive over CourseRecord

    def _saying(self, record: AgentWordsRecord) -> list[Event]:
        segment = self.segments.get(record.genseq, 0) + 1
        self.segments[record.genseq] = segment
        gen = {"course": self.course, "genseq": record.genseq}
        if record.plain:  # tool form: one markdown run, nothing parsed
            body: list[Event] = [
                {"type": "markdown_start_evt", **gen},
                {"type": "markdown_chunk_evt", "chunk": record.content, **gen},
                {"type": "markdown_finish_evt", **gen},
            ]
        else:
            parser = TellaskParser()
            body = parser_event_payloads([*parser.feed(record.content), *parser.finish()], self.course, record.genseq, segment)
        return [
            {"type": "saying_start_evt", **gen},
            *body,
            {
                "type": "saying_finish_evt",
                "content": record.content,
                **plain_fields(record),
                **incomplete_fields(record),
                **gen,
            },
        ]

    def _teammate_response(self, record: TeammateResponseRecord) -> Event:
        return {
            "type": "teammate_response_evt",
            "course": self.course,
            "responderId": record.responder_id,
            "calleeDialogId": record.callee_dialog_id,
            "calleeDialog": {"selfId": record.callee_dialog_id, "rootId": self.dialog.root_id},
            "tellaskHead": record.tellask_head,
            "status": record.status,
            "result": record.result,
            "response": record.response,
            "agentId": record.agent_id,
            "callId": record.call_id,
            "originMemberId": record.origin_member_id,
        }

    def _gen_finish(self, record: GenFinishRecord) -> list[Event]:
        gen = {"course": self.course, "genseq": record.genseq}
        out: list[Event] = []
        if record.status == "error" and record.error:
            out.append({"type": "stream_error_evt", "error": record.error, **gen})
        out.append({"type": "generating_finish_evt", **finish_event_fields(record), **gen})
        if record.context_health:
            out.append({"type": "context_health_evt", "contextHealth": record.context_health, **gen})
        return out

    def streaming_tail(self) -> list[Event]:
        """The segment being streamed now, as the start and chunk events a live client has seen."""
        dialog = self.dialog
        if not dialog.latest.generating or not dialog.streaming_text:
            return []
        genseq = dialog.genseq
        gen = {"course": self.course, "genseq": genseq}
        thinking = dialog.streamed_so_far("thinking")
        if thinking is not None:
            return [
                {"type": "thinking_start_evt", **gen},
                {"type": "thinking_chunk_evt", "chunk": thinking, **gen},
            ]
        saying = dialog.streamed_so_far("saying")
        if saying is None:
            return []
        segment = self.segments.get(genseq, 0) + 1
        return [
            {"type": "saying_start_evt", **gen},
            *parser_event_payloads(TellaskParser().feed(saying), self.course, genseq, segment),
        ]


def replay_course(dialog: Dialog, course: int, *, epoch: str, seq: int) -> list[Event]:
    """Every event of one course of ``dialog``, stamped as replay at ``(epoch, seq)``.

    The current course comes from memory (the same records as the file, plus the segment being
    streamed); an older course is read from its file.
    """
    current = course == dialog.latest.current_course
    records = dialog.records if current else dialog.files.read_course(course)
    replay = _CourseReplay(dialog, course)
    payloads: list[Event] = [
        {"type": "course_update", "course": course, "totalCourses": dialog.latest.current_course}
    ]
    timestamps: list[str | None] = [None]
    for record in records:
        events = replay.events(record)
        payloads.extend(events)
        timestamps.extend([record.ts] * len(events))
    if current:
        tail = replay.streaming_tail()
        payloads.extend(tail)
        timestamps.extend([None] * len(tail))
    payloads[0]["eventCount"] = len(payloads) - 1  # lets a client know when the course is complete
    for payload in payloads:
        enrich(payload)  # the HTML of finished markdown, added as to the live stream's events
    stamp = {"dialog": dialog.ident, "epoch": epoch, "seq": seq, "replay": True}
    return [
        {**payload, **stamp, "timestamp": ts or dialog.latest.last_modified}
        for payload, ts in zip(payloads, timestamps, strict=True)
    ]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
