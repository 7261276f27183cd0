"""Loop guards: a model repeating itself is told, then stopped, long before the runaway guard.

Probes showed a model calling the same tool with the same arguments after every result for 200
generations (each a full-context request), and one addressing a teammate that does not exist re-prompted
21 times. After each generation the drive asks ``check_loops``:

* **the same tool call with the same result**: the generation's function calls (name and canonical
  arguments) and their results equal the previous generation's — ``TOOL_LOOP_NOTICE_AT`` in a row
  records a notice telling the model to change course; ``TOOL_LOOP_STOP_AT`` in a row stops the dialog
  with the reason;
* **refused tellasks**: ``MAX_REFUSED_TELLASK_ROUNDS`` generations in a row whose tellasks the runtime
  refused (unknown teammate, malformed headline: each answered by a ``[Dominds note]``) stop the dialog;
* **clearing the mind in a loop**: courses in which the agent did nothing but call ``clear_mind`` (each
  call's result names a new course number, so the rounds above never repeat, and each course starts the
  count afresh). Their number is carried in each course's first record (``idle_clears``): at
  ``TOOL_LOOP_NOTICE_AT`` the new course's prompt says so, at ``TOOL_LOOP_STOP_AT`` the dialog stops.
  Seen in a crash-point scenario whose model cleared its mind 200 times, until the runaway guard.

A prompt from someone (a user, an answer, a caller; not the runtime's own notices) ends a streak.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from dominds.dialog.model import Dialog
from dominds.ids import now_iso, short_token
from dominds.store.course_records import (
    AgentWordsRecord,
    CourseRecord,
    CourseStartRecord,
    FuncCallRecord,
    FuncResultRecord,
    GenFinishRecord,
    HumanTextRecord,
    SubdialogCreatedRecord,
    TeammateCallResultRecord,
    TellaskCallRecord,
)

OUTSIDE_ORIGINS = frozenset({"user", "q4h_answer", "assignment", "tellask_back"})
"""Prompts from someone else than the runtime (a person, a caller, an asker): new input, which ends every
loop count here and the drive's runaway count."""
TOOL_LOOP_NOTICE_AT = 3
TOOL_LOOP_STOP_AT = 6
MAX_REFUSED_TELLASK_ROUNDS = 5
LOOP_NOTICE_ID = "loop-notice-"

TOOL_LOOP_NOTICE = (
    "[Loop] You called {calls} with the same arguments {n} times in a row and got the same result each time. "
    "Repeating it will not change the result: change course (other arguments, another tool, or answer with "
    "what you have). If it repeats {left} more times the runtime stops this dialog."
)
TOOL_LOOP_STOP = (
    "stopped: the same tool call ({calls}) with the same arguments returned the same result {n} times in a row; "
    "the model was told after {notice} and did not change course"
)
IDLE_CLEARS_NOTICE = (
    "[Loop] You cleared your mind {n} times in a row without doing anything in between. Clearing again will "
    "not change anything: work on the task with what this prompt, your reminders and the Taskdoc give you. "
    "If it repeats {left} more times the runtime stops this dialog."
)
IDLE_CLEARS_STOP = (
    "stopped: the agent cleared its mind {n} times in a row without doing anything in between; the model was "
    "told after {notice} and did not change course"
)
TELLASK_STOP = (
    "stopped: {n} generations in a row addressed tellasks the runtime refused; the last refusal: {note}"
)


def check_loops(dialog: Dialog) -> str | None:
    """After a generation: record a loop notice when one is due; the reason to stop the dialog, if any."""
    rounds = list(_recent_rounds(dialog.records, TOOL_LOOP_STOP_AT))
    tool_streak = _tool_streak(rounds)
    if tool_streak >= TOOL_LOOP_STOP_AT:
        return TOOL_LOOP_STOP.format(calls=_describe(rounds[0]), n=tool_streak, notice=TOOL_LOOP_NOTICE_AT)
    if tool_streak == TOOL_LOOP_NOTICE_AT:
        _record_notice(dialog, TOOL_LOOP_NOTICE.format(
            calls=_describe(rounds[0]), n=tool_streak, left=TOOL_LOOP_STOP_AT - TOOL_LOOP_NOTICE_AT,
        ))  # fmt: skip
    if dialog.pending_new_course and dialog.new_course_reason == "clear_mind":
        clears = idle_clears(dialog.records)
        if clears >= TOOL_LOOP_STOP_AT:
            return IDLE_CLEARS_STOP.format(n=clears, notice=TOOL_LOOP_NOTICE_AT)
    refused = _refused_tellask_streak(dialog.records)
    if refused[0] >= MAX_REFUSED_TELLASK_ROUNDS:
        return TELLASK_STOP.format(n=refused[0], note=refused[1])
    return None


Round = tuple[tuple[str, str, str], ...]
"""One generation's function calls as (name, canonical arguments, result), sorted."""


def _recent_rounds(records: list[CourseRecord], limit: int) -> Iterator[Round]:
    """The latest generations' rounds, newest first, back to a prompt from someone (at most ``limit``)."""
    calls: dict[str, tuple[str, str]] = {}
    results: dict[str, str] = {}
    genseq: int | None = None
    produced = 0
    for record in reversed(records):
        if isinstance(record, HumanTextRecord) and record.origin not in ("system", "diligence"):
            break
        if isinstance(record, GenFinishRecord) and record.genseq != genseq:
            if genseq is not None:
                yield _round(calls, results)
                produced += 1
                if produced >= limit:
                    return
            genseq, calls, results = record.genseq, {}, {}
        elif isinstance(record, FuncCallRecord) and record.genseq == genseq:
            calls[record.id] = (record.name, json.dumps(record.arguments, sort_keys=True, ensure_ascii=False))
        elif isinstance(record, FuncResultRecord) and record.genseq == genseq:
            results[record.id] = record.content
    if genseq is not None:
        yield _round(calls, results)


def _round(calls: dict[str, tuple[str, str]], results: dict[str, str]) -> Round:
    return tuple(sorted((name, args, results.get(call_id, "")) for call_id, (name, args) in calls.items()))


def _tool_streak(rounds: list[Round]) -> int:
    if not rounds or not rounds[0]:
        return 0
    streak = 1
    while streak < len(rounds) and rounds[streak] == rounds[0]:
        streak += 1
    return streak


def _describe(round_: Round) -> str:
    names = sorted({name for name, _, _ in round_})
    return ", ".join(f"`{n}`" for n in names)


def _refused_tellask_streak(records: list[CourseRecord]) -> tuple[int, str]:
    """Generations in a row (newest first) with a tellask the runtime refused, and the last refusal."""
    streak, last_note, genseq, refused = 0, "", None, False
    for record in reversed(records):
        if isinstance(record, HumanTextRecord) and record.origin not in ("system", "diligence"):
            break
        if isinstance(record, GenFinishRecord):
            if genseq is not None:
                if not refused:
                    return streak, last_note
                streak += 1
            genseq, refused = record.genseq, False
        elif isinstance(record, TeammateCallResultRecord) and record.genseq == genseq and record.responder_id == "dominds":
            refused = True
            last_note = last_note or " ".join(record.result.split())[:300]
    if genseq is not None and refused:
        streak += 1
    return streak, last_note


def _record_notice(dialog: Dialog, text: str) -> None:
    msg_id = f"{LOOP_NOTICE_ID}{short_token(3)}"
    genseq = dialog.genseq
    dialog.append(HumanTextRecord(ts=now_iso(), genseq=genseq, msg_id=msg_id, content=text, grammar="markdown", origin="system"))
    dialog.publish({
        "type": "end_of_user_saying_evt", "course": dialog.latest.current_course, "genseq": genseq,
        "msgId": msg_id, "content": text, "grammar": "markdown", "origin": "system",
    })  # fmt: skip


def idle_clears(records: list[CourseRecord]) -> int:
    """The courses in a row, this one (about to end by ``clear_mind``) included, in which the agent only
    cleared its mind; 0 when this one had anything else."""
    start = records[0] if records and isinstance(records[0], CourseStartRecord) else None
    for record in records:
        if isinstance(record, AgentWordsRecord) and record.content.strip():
            return 0
        if isinstance(record, FuncCallRecord) and record.name != "clear_mind":
            return 0
        if isinstance(record, TellaskCallRecord | SubdialogCreatedRecord):
            return 0
        if isinstance(record, HumanTextRecord) and record.origin in OUTSIDE_ORIGINS:
            return 0
    return (start.idle_clears if start is not None else 0) + 1


def idle_clears_notice(count: int) -> str | None:
    """The loop notice a new course's prompt carries after ``count`` idle clears, if one is due."""
    if count != TOOL_LOOP_NOTICE_AT:
        return None
    return IDLE_CLEARS_NOTICE.format(n=count, left=TOOL_LOOP_STOP_AT - TOOL_LOOP_NOTICE_AT)
