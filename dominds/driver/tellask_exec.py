"""Execute the tellask calls of one message (DESIGN §5, reference §2.3).

``@human`` → Q4H; ``@tellasker`` (or the caller's agent without a session, in a subdialog) → TYPE A
ask-back; ``@member !tellaskSession s`` → TYPE B (registry ``member!s``); ``@member`` → TYPE C;
``@self`` → one fresh, fully capable subdialog of the same agent (TYPE C, or TYPE B ``agent!session``;
``fbr_effort > 1`` fans a sessionless one out), at most ``MAX_SELF_DEPTH`` deep; several known members
in one headline → the same call to each. Every refused call becomes a ``[Dominds note]`` the model
reads, plus a failed call result. Creating and reusing subdialogs is ``subdialogs.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from dominds.dialog.model import Dialog
from dominds.driver import questions, texts
from dominds.driver.drive_scope import run_together
from dominds.driver.services import EngineServices
from dominds.driver.subdialogs import CallToRun, dispatch, record_note
from dominds.ids import now_iso
from dominds.store.records import (
    AskedBack,
    CallSiteRef,
    HumanQuestion,
    InboundTellaskBack,
    PendingSubdialog,
    QueuedPrompt,
)
from dominds.tellask_events import TellaskCall

SPECIAL_MENTIONS = frozenset({"human", "self", "tellasker", "dominds"})

ERROR_EXPLANATIONS = {
    "missing_mention_prefix": "a tellask line must start with `!?@<member>`",
    "invalid_mention_id": "the mention after `!?@` is not a valid member id",
    "multiple_tellask_sessions": "the headline names several different `!tellaskSession` values; use one",
    "invalid_tellask_session": "the `!tellaskSession` value is not a valid slug (letters, digits, _ - .)",
}


@dataclass
class TellaskOutcome:
    had_notes: bool = False
    dispatched: bool = False


async def execute_tellasks(
    engine: EngineServices, dialog: Dialog, calls: list[CallToRun], genseq: int, *, from_human: bool
) -> TellaskOutcome:
    outcome = TellaskOutcome()
    jobs = []
    for item in calls:
        note = _refusal(engine, dialog, item.call, tools=item.form == "tools")
        if note is not None:
            record_note(dialog, item, genseq, note)
            outcome.had_notes = True
            continue
        jobs.append(_run_call(engine, dialog, item, genseq, outcome))
    if jobs:
        await run_together(jobs)  # siblings in the drive's scope (driver/drive_scope.py)
    return outcome


def _refusal(engine: EngineServices, dialog: Dialog, call: TellaskCall, *, tools: bool = False) -> str | None:
    """Why this call cannot run, or None (``tools``: worded for a Tellask function call)."""
    if call.error:
        return f"malformed tellask ({call.error}): {ERROR_EXPLANATIONS.get(call.error, call.error)}."
    first = call.first_mention or ""
    team = engine.config.get().team
    self_call = "`freshBootsReasoning`" if tools else "`!?@self`"
    if first == "human":
        return None
    if first == "tellasker":
        if dialog.is_root:
            if tools:
                return "`tellaskBack` asks back the dialog that gave you your task; a root dialog has none. Use `askHuman`."
            return "`!?@tellasker` asks back the dialog that gave you your task; a root dialog has none. Ask `!?@human`."
        if call.tellask_session:
            return "`!?@tellasker` cannot carry `!tellaskSession`: it always goes to your current tellasker."
        return None
    if call.is_fbr:
        member = team.member(dialog.agent_id)
        if member is None or member.fbr_effort < 1:
            return f"Fresh Boots Reasoning ({self_call}) is disabled for you (fbr_effort is 0)."
        depth = _self_depth(engine, dialog)
        if depth >= MAX_SELF_DEPTH:
            return (
                f"you are already {depth} levels deep in {self_call} subdialogs (the limit is {MAX_SELF_DEPTH}); "
                "answer from here instead of asking yourself again."
            )
        return None
    if team.member(first) is None:
        how = "`targetAgentId` must be one of" if tools else "Tellask is only for teammates"
        return (
            f"@{first} is not a teammate. {how} ({', '.join('@' + m for m in team.members)}); "
            "call tools with native function calling."
        )
    unknown = [m for m in call.mentions[1:] if m not in SPECIAL_MENTIONS and team.member(m) is None]
    known_others = [m for m in call.mentions[1:] if team.member(m) is not None and m != first]
    if known_others and unknown:
        return f"this collective tellask names unknown members ({', '.join('@' + u for u in unknown)}); nothing was sent."
    return None


async def _run_call(engine: EngineServices, dialog: Dialog, item: CallToRun, genseq: int, outcome: TellaskOutcome) -> None:
    call = item.call
    first = call.first_mention or ""
    if first == "human":
        _ask_human(engine, dialog, item)
        return
    outcome.dispatched = True
    caller_agent = _caller_agent(engine, dialog)
    if first == "tellasker" or (
        not dialog.is_root and len(call.mentions) == 1 and first == caller_agent and not call.tellask_session
    ):
        await _tellask_back(engine, dialog, item, genseq)
        return
    if call.is_fbr:
        # Seed: `!?@self` is one fresh (TYPE C) or session (TYPE B, key `agent!session`) subdialog of the same
        # agent, fully capable. fbr_effort > 1 is an opt-in fan-out for sessionless calls only.
        if call.tellask_session:
            await dispatch(engine, dialog, item, dialog.agent_id, "B", call.tellask_session, genseq, fbr=True)
            return
        effort = engine.config.get().team.member(dialog.agent_id).fbr_effort  # type: ignore[union-attr]
        await run_together(dispatch(engine, dialog, item, dialog.agent_id, "C", None, genseq, fbr=True) for _ in range(effort))
        return
    team = engine.config.get().team
    targets = [first, *(m for m in call.mentions[1:] if team.member(m) is not None and m != first)]
    collective = targets if len(targets) > 1 else None
    if dialog.agent_id in targets and item.form == "text":  # a tool-form call has one result: the reply
        record_note(
            dialog,
            item,
            genseq,
            f"you addressed yourself (@{dialog.agent_id}); it was sent, but use `!?@self` for fresh-boots reasoning.",
        )
    call_type = "B" if call.tellask_session else "C"
    await run_together(
        dispatch(engine, dialog, item, target, call_type, call.tellask_session, genseq, collective=collective)
        for target in targets
    )


MAX_SELF_DEPTH = 3
"""How many `!?@self` subdialogs may nest; a deeper call gets a note instead of a subdialog."""


def _self_depth(engine: EngineServices, dialog: Dialog) -> int:
    """How many `!?@self` subdialogs ``dialog`` is nested in (itself included)."""
    depth = 0
    current: Dialog | None = dialog
    while current is not None and current.meta.fbr:
        depth += 1
        assignment = current.meta.assignment_from_sup
        current = engine.try_get_dialog(current.root_id, assignment.caller_dialog_id) if assignment else None
    return depth


def _caller_agent(engine: EngineServices, dialog: Dialog) -> str | None:
    assignment = dialog.meta.assignment_from_sup
    if assignment is None:
        return None
    caller = engine.find_loaded(assignment.caller_dialog_id)
    return caller.agent_id if caller is not None else assignment.origin_member_id


def _ask_human(engine: EngineServices, dialog: Dialog, item: CallToRun) -> None:
    question = HumanQuestion(
        id=f"q4h-{dialog.self_id}-{item.call_id}",
        tellask_head=item.call.headline.strip(),
        body_content=item.call.body.strip(),
        asked_at=now_iso(),
        call_id=item.call_id,
        call_site_ref=CallSiteRef(course=dialog.latest.current_course, message_index=max(len(dialog.records) - 1, 0)),
    )
    questions.ask(engine, dialog, question)


async def _tellask_back(engine: EngineServices, dialog: Dialog, item: CallToRun, genseq: int) -> None:
    assert dialog.meta.assignment_from_sup is not None
    assignment = dialog.meta.assignment_from_sup
    sup = engine.get_dialog(dialog.root_id, assignment.caller_dialog_id)
    if sup.is_dead:  # never driven again: the ask-back would wait forever
        record_note(dialog, item, genseq, texts.ASK_BACK_TO_THE_DEAD)
        return
    async with dialog.suspension_lock:
        dialog.pending.append(
            PendingSubdialog(
                subdialog_id=sup.self_id,
                agent_id=sup.agent_id,
                call_type="A",
                tellask_head=item.call.headline,
                tellask_body=item.call.body,
                call_id=item.call_id,
                created_at=now_iso(),
            )
        )
        dialog.save_pending()  # commit point
    queue_tellask_back(engine, sup, dialog, item.call.headline, item.call.body, item.call_id)


def queue_tellask_back(engine: EngineServices, sup: Dialog, asker: Dialog, headline: str, body: str, call_id: str) -> None:
    """Ask ``sup`` the ask-back question; also used by recovery when the daemon died after the commit point."""
    assignment_head = asker.meta.assignment_from_sup.tellask_head if asker.meta.assignment_from_sup else ""
    inbound = InboundTellaskBack(from_dialog_id=asker.self_id, call_id=call_id, tellask_head=headline)
    msg_id = inbound.msg_id
    if msg_id in sup.queue or msg_id in sup.recorded_msg_ids():
        return
    sup.latest.inbound_tellask_backs.append(inbound)
    sup.queue.put(
        QueuedPrompt(
            msg_id=msg_id,
            content=texts.tellask_back_text(sup.agent_id, asker.agent_id, assignment_head, headline, body),
            grammar="markdown",
            origin="tellask_back",
            from_dialog_id=asker.self_id,
            call_id=call_id,
            ask_back=AskedBack(from_agent_id=asker.agent_id, tellask_head=headline, tellask_body=body),
            queued_at=now_iso(),
        ),
        # One write with the obligation it opens: a prompt logged alone, and a crash before latest.yaml's
        # write, leaves the asked dialog a question with no obligation to answer it, and the asker never
        # hears back (tests/driver/test_crashpoints.py, scenario ask_back, kills ``False`` here).
        with_latest=True,
    )
    engine.request_drive(sup)


