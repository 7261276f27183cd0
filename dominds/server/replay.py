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

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver.mcp_sampling import sampling_event
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
    McpSamplingRecord,
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
        if isinstance(record, McpSamplingRecord):
            return [sampling_event(record, course)]
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


PAGE_BYTES = 256 * 1024
"""About how much event JSON one page of a replay holds (measured before markdown is rendered to HTML,
which adds its own size). A page is never empty: a record bigger than this is a page of its own."""

_SNAP_RECORDS = 200
"""How far back a page start moves to begin at a prompt or a generation's start (so the panel gets the
generation's frame); past this it starts mid-generation, with the saying segments counted right."""


@dataclass(frozen=True)
class ReplayPage:
    """Records ``start``..``end`` (exclusive) of a course of ``total`` records, as stamped replay events."""

    course: int
    start: int
    end: int
    total: int
    events: list[Event]


def replay_course(dialog: Dialog, course: int, *, epoch: str, seq: int) -> list[Event]:
    """Every event of one course of ``dialog``, stamped as replay at ``(epoch, seq)`` (one page of it all)."""
    records = course_records(dialog, course)
    return _page(dialog, course, records, 0, len(records), epoch=epoch, seq=seq).events


def replay_page(
    dialog: Dialog,
    course: int,
    *,
    epoch: str,
    seq: int,
    before: int | None = None,
    after: int | None = None,
    around: str | None = None,
    page_bytes: int = PAGE_BYTES,
    records: list[CourseRecord] | None = None,
) -> ReplayPage:
    """One page of a course: the last one, the one ending at record ``before``, the one starting at record
    ``after``, or the one around the records of call ``around`` (a tellask call id or a function call id).

    The current course's page also carries the segment being streamed now when it reaches the end.
    A call that the course does not hold gives the last page (the client finds no call and says so).
    ``records``: the course's, when the caller has them (``course_records_off_loop``).
    """
    if records is None:
        records = course_records(dialog, course)
    total = len(records)
    if after is not None:
        start = min(max(after, 0), total)
        end = _span_forward(dialog, course, records, start, page_bytes)
    elif around is not None and (where := _find_call(records, course, around)) is not None:
        start = _snap(records, _span_back(dialog, course, records, where + 1, page_bytes // 2))
        end = max(_span_forward(dialog, course, records, where, page_bytes // 2), where + 1)
    else:
        end = total if before is None else min(max(before, 0), total)
        start = _snap(records, _span_back(dialog, course, records, end, page_bytes))
    return _page(dialog, course, records, start, end, epoch=epoch, seq=seq)


def course_records(dialog: Dialog, course: int) -> list[CourseRecord]:
    """The current course comes from memory (the same records as the file); an older one from its file."""
    return dialog.records if course == dialog.latest.current_course else dialog.files.read_course(course)


async def course_records_off_loop(dialog: Dialog, course: int) -> list[CourseRecord]:
    """``course_records``, an older course read in a worker thread: its file is read whole for every page
    of it (0.6 s for the 11 MB of a 10,000-turn course), which held the event loop."""
    if course == dialog.latest.current_course:
        return dialog.records
    return await asyncio.to_thread(dialog.files.read_course, course)


def _record_bytes(dialog: Dialog, course: int, record: CourseRecord) -> int:
    """The size of a record's events (segment numbers do not change it enough to matter)."""
    return sum(len(_json(e)) for e in _CourseReplay(dialog, course).events(record))


def _span_back(dialog: Dialog, course: int, records: list[CourseRecord], end: int, budget: int) -> int:
    """The first record of the page ending at ``end`` (at least one record when there is one)."""
    start, used = end, 0
    while start > 0:
        used += _record_bytes(dialog, course, records[start - 1])
        if used > budget and start < end:
            break
        start -= 1
    return start


def _span_forward(dialog: Dialog, course: int, records: list[CourseRecord], start: int, budget: int) -> int:
    end, used = start, 0
    while end < len(records):
        used += _record_bytes(dialog, course, records[end])
        if used > budget and end > start:
            break
        end += 1
    return end


def _starts_turn(record: CourseRecord) -> bool:
    return isinstance(record, (CourseStartRecord, HumanTextRecord, GenStartRecord, RunMarkerRecord))


def _snap(records: list[CourseRecord], start: int) -> int:
    """Move a page start back to a prompt or a generation start when one is near."""
    for index in range(start, max(start - _SNAP_RECORDS, 0) - 1, -1):
        if index == 0 or _starts_turn(records[index]):
            return index
    return start


def _find_call(records: list[CourseRecord], course: int, call: str) -> int | None:
    """The index of the record that made call ``call``: a function call's record, or for a tellask call
    (``<parser id>.<course>.<genseq>.<segment>``) the saying that held it."""
    parts = call.rsplit(".", 3)
    tellask = None
    if len(parts) == 4 and all(p.isdigit() for p in parts[1:]) and int(parts[1]) == course:
        tellask = (int(parts[2]), int(parts[3]))
    segments: dict[int, int] = {}
    for index, record in enumerate(records):
        if isinstance(record, FuncCallRecord) and record.id == call:
            return index
        if isinstance(record, (TeammateCallResultRecord, SubdialogCreatedRecord)) and record.call_id == call:
            return index
        if isinstance(record, AgentWordsRecord):
            segment = segments[record.genseq] = segments.get(record.genseq, 0) + 1
            if tellask == (record.genseq, segment):
                return index
    return None


def _page(
    dialog: Dialog, course: int, records: list[CourseRecord], start: int, end: int, *, epoch: str, seq: int
) -> ReplayPage:
    replay = _CourseReplay(dialog, course)
    if start < end:
        genseq = getattr(records[start], "genseq", None)
        index = start
        while index > 0 and not isinstance(records[index - 1], GenStartRecord):  # back to its generation's start
            index -= 1
            record = records[index]
            if getattr(record, "genseq", None) != genseq:
                break
            if isinstance(record, AgentWordsRecord):  # the live receiver numbers segments 1.. per generation
                replay.segments[record.genseq] = replay.segments.get(record.genseq, 0) + 1
    payloads: list[Event] = [
        {
            "type": "course_update",
            "course": course,
            "totalCourses": dialog.latest.current_course,
            "fromRecord": start,
            "toRecord": end,
            "totalRecords": len(records),
        }
    ]
    timestamps: list[str | None] = [None]
    for record in records[start:end]:
        events = replay.events(record)
        payloads.extend(events)
        timestamps.extend([record.ts] * len(events))
    if course == dialog.latest.current_course and end == len(records):
        tail = replay.streaming_tail()
        payloads.extend(tail)
        timestamps.extend([None] * len(tail))
    payloads[0]["eventCount"] = len(payloads) - 1  # lets a client know when the page is complete
    for payload in payloads:
        enrich(payload)  # the HTML of finished markdown, added as to the live stream's events
    stamp = {"dialog": dialog.ident, "epoch": epoch, "seq": seq, "replay": True}
    events = [
        {**payload, **stamp, "timestamp": ts or dialog.latest.last_modified}
        for payload, ts in zip(payloads, timestamps, strict=True)
    ]
    return ReplayPage(course, start, end, len(records), events)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
