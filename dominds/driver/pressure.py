"""Context pressure, told to the model: notices recorded in the course when its context fills up.

``health.py`` measures each generation's prompt against the model's thresholds (the catalog's
``optimal_max_tokens`` / ``critical_max_tokens``, else 100K or 80 % and 90 % of the window) and starts a new
course itself after ``CRITICAL_COUNTDOWN`` critical generations in a row. Without a word to the model it
learned that afterwards, too late to save its progress. Now, after a generation:

* **caution**: a notice once, and again every ``CAUTION_EVERY`` generations while it stays there;
* **critical**: a notice after every generation, counting down the generations left before the
  runtime's new course.

A notice is a ``system`` prompt record of the course (``msg_id`` ``ctx-caution-…`` / ``ctx-critical-…``),
so the model reads it with its next generation and the panel, ``show`` and replay show it where it was
given. Main dialogs are told to write the Taskdoc first (they own it); subdialogs, which cannot change
it, to write detailed reminders. The exact texts are in ``docs/context-health.md``.
"""

from __future__ import annotations

from typing import Any

from dominds.dialog.model import Dialog
from dominds.ids import now_iso, short_token
from dominds.store.course_records import GenFinishRecord, HumanTextRecord

CAUTION_EVERY = 10
"""Generations between two caution notices while the context stays at the caution level."""
CAUTION_ID, CRITICAL_ID = "ctx-caution-", "ctx-critical-"

CAUTION_MAIN = (
    "[Context caution] Your context is {pct}% full ({prompt} of {limit} tokens; caution above {optimal}). "
    "Before it fills up, write what you have done and what comes next into the Taskdoc: `append_progress` "
    "for a progress entry, `change_mind` for goals or constraints. Then go on concisely, and ask tools for "
    "small results (parts of files, narrow searches)."
)
CAUTION_SUB = (
    "[Context caution] Your context is {pct}% full ({prompt} of {limit} tokens; caution above {optimal}). "
    "Before it fills up, keep detailed reminders (`add_reminder`, `update_reminder`) of what you were asked, "
    "what you found and what comes next: reminders survive a new course (you cannot change the Taskdoc). "
    "Then go on concisely, and ask tools for small results (parts of files, narrow searches)."
)
CRITICAL_MAIN = (
    "[Context critical: {left} generation(s) left] Your context is {pct}% full ({prompt} of {limit} tokens; "
    "critical above {critical}). After {left} more generation(s) at this size the runtime starts a new "
    "course and this conversation is cleared. Now: write your progress, decisions and next steps into the "
    "Taskdoc (`append_progress`, `change_mind`), then call `clear_mind` yourself with a reminder of the next step."
)
CRITICAL_SUB = (
    "[Context critical: {left} generation(s) left] Your context is {pct}% full ({prompt} of {limit} tokens; "
    "critical above {critical}). After {left} more generation(s) at this size the runtime starts a new "
    "course and this conversation is cleared; only your reminders and the Taskdoc stay. Now: write detailed "
    "reminders (`add_reminder`) of your assignment, what you found and what comes next, then call "
    "`clear_mind` yourself."
)


RESULT_BUDGET_UNDER_PRESSURE = 8_000
"""Characters of a tool result the model gets while its context is at caution or critical; a larger
result is replaced by ``OVERSIZED_RESULT_NOTE`` (the whole result stays in the course for the panel)."""
OVERSIZED_RESULT_NOTE = (
    "[Result not shown: {size} characters, and your context is at its {level} level ({pct}% full). The whole "
    "result is kept in the dialog for the user. Ask for a smaller part (a line range, a narrower search, "
    "`head`/`grep` of the output) instead.]"
)


def oversized_result_note(dialog: Dialog, content: str) -> str | None:
    """The note replacing ``content`` for the model, if the context is under pressure and it is too large.

    The pressure is the last measured one: the latest generation of this course with a context health."""
    if len(content) <= RESULT_BUDGET_UNDER_PRESSURE:
        return None
    for record in reversed(dialog.records):
        if isinstance(record, GenFinishRecord) and record.context_health:
            health = record.context_health
            if health.get("kind") != "available" or health.get("level") not in ("caution", "critical"):
                return None
            pct = round(100 * float(health["hardUtil"]))
            return OVERSIZED_RESULT_NOTE.format(size=len(content), level=health["level"], pct=pct)
    return None


def pressure_notice(dialog: Dialog, health: dict[str, Any] | None) -> str | None:
    """The notice due after a generation whose context health is ``health``, if any."""
    if not health or health.get("kind") != "available":
        return None
    level = health.get("level")
    fields = {
        "pct": round(100 * float(health["hardUtil"])),
        "prompt": health["promptTokens"],
        "limit": health["modelContextLimitTokens"],
        "optimal": health["effectiveOptimalMaxTokens"],
        "critical": health["effectiveCriticalMaxTokens"],
    }
    if level == "critical":
        left = health.get("criticalCountdown") or 0
        if left <= 0:
            return None  # the new course starts now; its own first prompt says why
        return (CRITICAL_MAIN if dialog.is_root else CRITICAL_SUB).format(left=left, **fields)
    if level == "caution" and _generations_since_notice(dialog) >= CAUTION_EVERY:
        return (CAUTION_MAIN if dialog.is_root else CAUTION_SUB).format(**fields)
    return None


def _generations_since_notice(dialog: Dialog) -> int:
    """Generations finished in this course since its last pressure notice, counted up to ``CAUTION_EVERY``
    (all a caller asks is whether that many have passed): walking back to the course's start when no notice
    was given cost a turn of a long dialog in caution time that grew with the course."""
    generations = 0
    for record in reversed(dialog.records):
        if isinstance(record, HumanTextRecord) and record.msg_id.startswith((CAUTION_ID, CRITICAL_ID)):
            return generations
        if isinstance(record, GenFinishRecord):
            generations += 1
            if generations >= CAUTION_EVERY:
                return generations
    return CAUTION_EVERY


def tell_context_pressure(dialog: Dialog, finish: GenFinishRecord) -> None:
    """Record (and publish) the notice due after ``finish``, if any: the model reads it next generation."""
    health = finish.context_health
    text = pressure_notice(dialog, health)
    if text is None or health is None:
        return
    prefix = CRITICAL_ID if health.get("level") == "critical" else CAUTION_ID
    msg_id = f"{prefix}{finish.genseq}-{short_token(3)}"
    dialog.append(
        HumanTextRecord(
            ts=now_iso(), genseq=finish.genseq, msg_id=msg_id, content=text, grammar="markdown", origin="system"
        )
    )
    dialog.publish(
        {
            "type": "end_of_user_saying_evt",
            "course": dialog.latest.current_course,
            "genseq": finish.genseq,
            "msgId": msg_id,
            "content": text,
            "grammar": "markdown",
            "origin": "system",
        }
    )
