"""Diligence Push (reference §3.11): when a root would stop, push it to keep going, within a budget.

Off when the member's ``diligence_push_max`` is below 1 (the template sets 0) or the root disabled it.
When the budget is spent, the runtime asks the human whether to continue (a system Q4H) instead.
"""

from __future__ import annotations

from dominds.dialog.model import Dialog
from dominds.driver import questions
from dominds.driver.services import EngineServices
from dominds.ids import new_dialog_id, now_iso
from dominds.store.records import CallSiteRef, HumanQuestion, QueuedPrompt

BUILTIN_TEXT = (
    "Diligence push: before you stop, check the Taskdoc goals and progress. If anything is left that you can "
    "do now, continue. If you are truly done or blocked, say so clearly and stop."
)


def diligence_text(engine: EngineServices) -> str | None:
    for name in ("diligence.en.md", "diligence.md"):
        text = engine.config.text(engine.rtws.minds_dir / name)
        if text is not None:
            return text.strip() or None  # an existing empty file disables the push
    return BUILTIN_TEXT


def diligence_push(engine: EngineServices, dialog: Dialog) -> bool:
    """True when a push prompt was queued and the drive should continue."""
    member = engine.config.get().team.member(dialog.agent_id)
    if member is None or member.diligence_push_max < 1 or dialog.latest.disable_diligence_push:
        return False
    if not dialog.can_drive():
        return False
    text = diligence_text(engine)
    if text is None:
        return False
    budget = min(dialog.latest.diligence_push_remaining_budget, member.diligence_push_max)
    if budget >= 1:
        dialog.latest.diligence_push_remaining_budget = budget - 1
        dialog.queue.put(
            QueuedPrompt(msg_id=f"dil-{new_dialog_id()}", content=text, grammar="markdown", origin="diligence", queued_at=now_iso()),
            with_latest=True,  # one write with the budget it spends
        )
        dialog.save_latest()
        dialog.publish(
            {
                "type": "diligence_budget_evt",
                "maxInjectCount": member.diligence_push_max,
                "injectedCount": member.diligence_push_max - budget + 1,
                "remainingCount": budget - 1,
                "disableDiligencePush": False,
            }
        )
        return True
    question = HumanQuestion(
        id=f"q4h-{dialog.self_id}-diligence-{new_dialog_id()}",
        tellask_head="@human Diligence budget used up",
        body_content="The agent was pushed to keep going several times. Should it continue? Answer to continue.",
        asked_at=now_iso(),
        call_id="diligence",
        call_site_ref=CallSiteRef(course=dialog.latest.current_course, message_index=max(len(dialog.records) - 1, 0)),
    )
    dialog.latest.diligence_push_remaining_budget = member.diligence_push_max
    dialog.save_latest()
    questions.ask(engine, dialog, question)
    return False
