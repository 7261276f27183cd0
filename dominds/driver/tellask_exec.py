"""Execute the tellask calls of one message (DESIGN §5, reference §2.3).

``@human`` → Q4H; ``@tellasker`` (or the caller's agent without a session, in a subdialog) → TYPE A
ask-back; ``@member !tellaskSession s`` → TYPE B (registry ``member!s``); ``@member`` → TYPE C;
``@self`` → tool-less FBR subdialogs; several known members in one headline → the same call to each.
Every refused call becomes a ``[Dominds note]`` the model reads, plus a failed call result.

Crash safety: the caller's pending entry (``subdlg.yaml``) is the commit point of a dispatch; it holds
what recovery needs to finish creating the subdialog if the daemon dies half-way.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from dominds.dialog.model import Dialog, RootDialog, SubDialog
from dominds.driver import questions, texts
from dominds.driver.services import EngineServices
from dominds.ids import new_dialog_id, now_iso
from dominds.store.course_records import SubdialogCreatedRecord, TeammateCallResultRecord
from dominds.store.records import (
    Assignment,
    CallSiteRef,
    DialogMeta,
    HumanQuestion,
    InboundTellaskBack,
    LatestState,
    PendingSubdialog,
    QueuedPrompt,
    RegistryEntry,
)
from dominds.tellask import TellaskCall

SPECIAL_MENTIONS = frozenset({"human", "self", "tellasker", "dominds"})

ERROR_EXPLANATIONS = {
    "missing_mention_prefix": "a tellask line must start with `!?@<member>`",
    "invalid_mention_id": "the mention after `!?@` is not a valid member id",
    "multiple_tellask_sessions": "the headline names several different `!tellaskSession` values; use one",
    "invalid_tellask_session": "the `!tellaskSession` value is not a valid slug (letters, digits, _ - .)",
}


@dataclass(frozen=True)
class CallToRun:
    call: TellaskCall
    call_id: str
    """Runtime call id: the parser's deterministic id qualified by course, generation and segment."""


def runtime_call_id(parser_call_id: str, course: int, genseq: int, segment: int | str) -> str:
    """The parser's id is deterministic per text; the same text in a later message must still be a new call."""
    return f"{parser_call_id}.{course}.{genseq}.{segment}"


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
        note = _refusal(engine, dialog, item.call)
        if note is not None:
            _record_note(dialog, item, genseq, note)
            outcome.had_notes = True
            continue
        jobs.append(_run_call(engine, dialog, item, genseq, outcome))
    if jobs:
        await asyncio.gather(*jobs)
    return outcome


def _refusal(engine: EngineServices, dialog: Dialog, call: TellaskCall) -> str | None:
    """Why this call cannot run, or None."""
    if call.error:
        return f"malformed tellask ({call.error}): {ERROR_EXPLANATIONS.get(call.error, call.error)}."
    first = call.first_mention or ""
    team = engine.config.get().team
    if first == "human":
        return None
    if first == "tellasker":
        if dialog.is_root:
            return "`!?@tellasker` asks back the dialog that gave you your task; a root dialog has none. Ask `!?@human`."
        if call.tellask_session:
            return "`!?@tellasker` cannot carry `!tellaskSession`: it always goes to your current tellasker."
        return None
    if call.is_fbr:
        member = team.member(dialog.agent_id)
        if member is None or member.fbr_effort < 1:
            return "Fresh Boots Reasoning (`!?@self`) is disabled for you (fbr_effort is 0)."
        depth = _self_depth(engine, dialog)
        if depth >= MAX_SELF_DEPTH:
            return (
                f"you are already {depth} levels deep in `!?@self` subdialogs (the limit is {MAX_SELF_DEPTH}); "
                "answer from here instead of asking yourself again."
            )
        return None
    if team.member(first) is None:
        return (
            f"@{first} is not a teammate. Tellask is only for teammates ({', '.join('@' + m for m in team.members)}); "
            "call tools with native function calling."
        )
    unknown = [m for m in call.mentions[1:] if m not in SPECIAL_MENTIONS and team.member(m) is None]
    known_others = [m for m in call.mentions[1:] if team.member(m) is not None and m != first]
    if known_others and unknown:
        return f"this collective tellask names unknown members ({', '.join('@' + u for u in unknown)}); nothing was sent."
    return None


def _record_note(dialog: Dialog, item: CallToRun, genseq: int, note: str) -> None:
    text = texts.dominds_note(note)
    dialog.append(
        TeammateCallResultRecord(
            ts=now_iso(),
            genseq=genseq,
            call_id=item.call_id,
            responder_id="dominds",
            tellask_head=item.call.headline,
            status="failed",
            result=text,
        )
    )
    dialog.publish(
        {
            "type": "teammate_call_response_evt",
            "course": dialog.latest.current_course,
            "calling_genseq": genseq,
            "responderId": "dominds",
            "tellaskHead": item.call.headline,
            "status": "failed",
            "result": text,
            "callId": item.call_id,
        }
    )


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
        await _tellask_back(engine, dialog, item)
        return
    if call.is_fbr:
        # Seed: `!?@self` is one fresh (TYPE C) or session (TYPE B, key `agent!session`) subdialog of the same
        # agent, fully capable. fbr_effort > 1 is an opt-in fan-out for sessionless calls only.
        if call.tellask_session:
            await dispatch(engine, dialog, item, dialog.agent_id, "B", call.tellask_session, genseq, fbr=True)
            return
        effort = engine.config.get().team.member(dialog.agent_id).fbr_effort  # type: ignore[union-attr]
        jobs = [dispatch(engine, dialog, item, dialog.agent_id, "C", None, genseq, fbr=True) for _ in range(effort)]
        await asyncio.gather(*jobs)
        return
    team = engine.config.get().team
    targets = [first, *(m for m in call.mentions[1:] if team.member(m) is not None and m != first)]
    collective = targets if len(targets) > 1 else None
    if dialog.agent_id in targets:
        _record_note(
            dialog,
            item,
            genseq,
            f"you addressed yourself (@{dialog.agent_id}); it was sent, but use `!?@self` for fresh-boots reasoning.",
        )
    call_type = "B" if call.tellask_session else "C"
    await asyncio.gather(
        *(
            dispatch(engine, dialog, item, target, call_type, call.tellask_session, genseq, collective=collective)
            for target in targets
        )
    )


def waits_on(engine: EngineServices, start: Dialog, target: Dialog) -> bool:
    """Whether ``start`` waits, directly or through other subdialogs, for ``target`` (a delegation cycle)."""
    seen: set[str] = set()
    stack = [start]
    while stack:
        dialog = stack.pop()
        if dialog.self_id == target.self_id:
            return True
        if dialog.self_id in seen:
            continue
        seen.add(dialog.self_id)
        for entry in dialog.pending:
            if entry.call_type == "A":
                continue  # an ask-back is answered as an obligation, even while its asker waits
            callee = engine.try_get_dialog(dialog.root_id, entry.subdialog_id)
            if callee is not None:
                stack.append(callee)
    return False


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


async def _tellask_back(engine: EngineServices, dialog: Dialog, item: CallToRun) -> None:
    assert dialog.meta.assignment_from_sup is not None
    assignment = dialog.meta.assignment_from_sup
    sup = engine.get_dialog(dialog.root_id, assignment.caller_dialog_id)
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
    if any(p.msg_id == msg_id for p in sup.latest.queued_prompts) or msg_id in sup.recorded_msg_ids():
        return
    sup.latest.inbound_tellask_backs.append(inbound)
    sup.latest.queued_prompts.append(
        QueuedPrompt(
            msg_id=msg_id,
            content=texts.tellask_back_text(sup.agent_id, asker.agent_id, assignment_head, headline, body),
            grammar="markdown",
            origin="tellask_back",
            from_dialog_id=asker.self_id,
            call_id=call_id,
            queued_at=now_iso(),
        )
    )
    engine.request_drive(sup)


async def dispatch(
    engine: EngineServices,
    caller: Dialog,
    item: CallToRun,
    target: str,
    call_type: str,
    session: str | None,
    genseq: int,
    *,
    fbr: bool = False,
    collective: list[str] | None = None,
) -> None:
    root = caller.root
    if call_type == "B":
        assert session is not None
        key = f"{target}!{session}"
        async with root.registry_lock:  # one lookup-or-create at a time: identical calls share one subdialog
            entry = root.type_b.get(key)
            existing = engine.try_load_sub(root, entry.subdialog_id) if entry else None
            if existing is not None and not existing.is_dead and waits_on(engine, existing, caller):
                _record_note(
                    caller,
                    item,
                    genseq,
                    f"`@{target}` (session `{session}`) is itself waiting, directly or through teammates, for your "
                    "answer: asking it now would deadlock you both. Answer your own request first, or use a fresh "
                    f"tellask (`!?@{target}` without a session).",
                )
                return
            if existing is not None and not existing.is_dead:
                await _reassign(engine, caller, existing, item, genseq, collective)
                root.type_b[key] = root.type_b[key].model_copy(update={"last_accessed": now_iso()})
                root.save_registry()
                return
            sub = await _create(engine, caller, item, target, "B", session, genseq, fbr, collective)
            root.type_b[key] = RegistryEntry(
                subdialog_id=sub.self_id, agent_id=target, tellask_session=session, created_at=now_iso(), last_accessed=now_iso()
            )
            root.save_registry()
        return
    await _create(engine, caller, item, target, "C", None, genseq, fbr, collective)


def _pending_entry(
    sub_id: str, target: str, call_type: str, session: str | None, item: CallToRun, fbr: bool, collective: list[str] | None
) -> PendingSubdialog:
    return PendingSubdialog(
        subdialog_id=sub_id,
        agent_id=target,
        call_type=call_type,  # type: ignore[arg-type]
        tellask_session=session,
        tellask_head=item.call.headline,
        tellask_body=item.call.body,
        call_id=item.call_id,
        created_at=now_iso(),
        fbr=fbr,
        collective_targets=collective,
    )


async def _create(
    engine: EngineServices,
    caller: Dialog,
    item: CallToRun,
    target: str,
    call_type: str,
    session: str | None,
    genseq: int,
    fbr: bool,
    collective: list[str] | None,
) -> SubDialog:
    sub_id = new_dialog_id()
    entry = _pending_entry(sub_id, target, call_type, session, item, fbr, collective)
    async with caller.suspension_lock:
        caller.pending.append(entry)
    await caller.commit_pending()  # commit point (one write for all calls of this message)
    sub = materialize_subdialog(engine, caller.root, caller, entry)
    _announce(caller, sub, entry, genseq, reused=False)
    return sub


def materialize_subdialog(engine: EngineServices, root: RootDialog, caller: Dialog, entry: PendingSubdialog) -> SubDialog:
    """Create a subdialog's files from its caller's pending entry (also used by recovery)."""
    meta = subdialog_meta(root, caller, entry)
    latest = LatestState(last_modified=now_iso(), queued_prompts=[assignment_prompt(caller, entry)], needs_drive=True)
    sub = engine.create_subdialog(root, meta, latest)
    engine.want(sub)  # needsDrive is already in the latest.yaml just written
    return sub


def subdialog_meta(root: RootDialog, caller: Dialog, entry: PendingSubdialog) -> DialogMeta:
    """The ``dialog.yaml`` of the subdialog a pending entry asked for (it holds everything needed)."""
    return DialogMeta(
        id=entry.subdialog_id,
        root_id=root.self_id,
        agent_id=entry.agent_id,
        task_doc_path=root.meta.task_doc_path,
        created_at=entry.created_at,
        supdialog_id=caller.self_id,
        tellask_session=entry.tellask_session,
        assignment_from_sup=assignment_of(caller, entry),
        fbr=entry.fbr,
    )


def assignment_of(caller: Dialog, entry: PendingSubdialog) -> Assignment:
    return Assignment(
        tellask_head=entry.tellask_head,
        tellask_body=entry.tellask_body,
        origin_member_id=caller.agent_id,
        caller_dialog_id=caller.self_id,
        call_id=entry.call_id,
        call_type=entry.call_type,
        collective_targets=entry.collective_targets,
    )


def assignment_msg_id(call_id: str, subdialog_id: str) -> str:
    """The id of the prompt that gives a subdialog the request of call ``call_id`` (deterministic)."""
    return f"asg-{call_id}-{subdialog_id}"


def assignment_prompt(caller: Dialog, entry: PendingSubdialog) -> QueuedPrompt:
    if entry.fbr:
        content = texts.fbr_assignment_text(caller.agent_id, entry.tellask_head, entry.tellask_body)
    else:
        content = texts.assignment_text(
            entry.agent_id, caller.agent_id, entry.tellask_head, entry.tellask_body, entry.collective_targets
        )
    return QueuedPrompt(
        msg_id=assignment_msg_id(entry.call_id, entry.subdialog_id),
        content=content,
        grammar="markdown",
        origin="assignment",
        queued_at=now_iso(),
    )


async def _reassign(
    engine: EngineServices, caller: Dialog, sub: Dialog, item: CallToRun, genseq: int, collective: list[str] | None
) -> None:
    """TYPE B hit: route the session's next answer to this (latest) caller and give it the new request."""
    entry = _pending_entry(
        sub.self_id, sub.agent_id, "B", sub.meta.tellask_session, item, sub.meta.fbr, collective
    )
    previous = sub.meta.assignment_from_sup
    async with caller.suspension_lock:
        # A repeat call by the same caller keeps the earlier entry: the session's answer goes to every call
        # site of this caller that is still waiting for it (supply_response), so none is left without one.
        caller.pending.append(entry)
        caller.save_pending()  # commit point
    sub.meta = sub.meta.model_copy(update={"assignment_from_sup": assignment_of(caller, entry)})
    sub.files.write_meta(sub.meta)
    sub.latest.queued_prompts.append(assignment_prompt(caller, entry))
    engine.request_drive(sub)
    if previous is not None and previous.caller_dialog_id != caller.self_id:
        await engine.supersede(sub, previous)
    _announce(caller, sub, entry, genseq, reused=True)


def _announce(caller: Dialog, sub: Dialog, entry: PendingSubdialog, genseq: int, *, reused: bool) -> None:
    caller.append(
        SubdialogCreatedRecord(
            ts=now_iso(),
            genseq=genseq,
            call_id=entry.call_id,
            call_type="B" if entry.call_type == "B" else "C",
            subdialog_id=sub.self_id,
            target_agent_id=entry.agent_id,
            tellask_head=entry.tellask_head,
            tellask_body=entry.tellask_body,
            reused=reused,
        )
    )
    caller.publish(
        {
            "type": "subdialog_created_evt",
            "course": caller.latest.current_course,
            "genseq": genseq,
            "parentDialog": caller.ident,
            "subDialog": sub.ident,
            "targetAgentId": entry.agent_id,
            "tellaskHead": entry.tellask_head,
            "tellaskBody": entry.tellask_body,
            "callId": entry.call_id,
            "callType": entry.call_type,
            "reused": reused,
        }
    )
