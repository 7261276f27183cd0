"""The conductor API: workflow code asks teammates as subdialogs of a workflow root dialog.

A workflow run (ToT, Plan & Solve, debate) is a root dialog whose ``conductor`` field names the
workflow. Each LLM step is ``await run.ask(agent, request)``: a TYPE C (or, with a session, TYPE B)
subdialog is created exactly as a tellask from the root would create it, so the step is persisted,
visible in the panel, stoppable and costed. The answer is recorded in the root's course as a
teammate response and returned to the waiting code; the root itself never calls an LLM.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from dominds.dialog.model import RootDialog
from dominds.driver.errors import EngineError
from dominds.driver.services import EngineServices
from dominds.driver.subdialogs import CallToRun, dispatch
from dominds.driver.waiters import TeammateAnswer
from dominds.ids import new_dialog_id, now_iso
from dominds.store.course_records import HumanTextRecord
from dominds.store.records import DialogMeta, LatestState
from dominds.taskdoc_discovery import mark_workflow_taskdoc
from dominds.tellask_events import TellaskCall
from dominds.tellask_headline import parse_headline

__all__ = ["ConductorRun", "TeammateAnswer", "start_run"]


class ConductorRun:
    """One workflow run: a root dialog plus the means to ask teammates from it."""

    def __init__(self, engine: EngineServices, root: RootDialog) -> None:
        self.engine = engine
        self.root = root

    @property
    def root_id(self) -> str:
        return self.root.root_id

    def note(self, text: str) -> None:
        """Record a visible progress line in the run's root course (markdown, never parsed)."""
        self.root.append(
            HumanTextRecord(ts=now_iso(), genseq=0, msg_id=f"note-{new_dialog_id()}", content=text, grammar="markdown", origin="system")
        )
        self.root.publish({"type": "workflow_note_evt", "content": text})

    async def ask(
        self,
        agent_id: str,
        request: str,
        *,
        headline: str = "",
        session: str | None = None,
        timeout: float | None = None,
        on_subdialog: Callable[[str], None] | None = None,
    ) -> TeammateAnswer:
        """Give ``agent_id`` a task and wait for its answer (a failed answer when it is declared dead).

        ``on_subdialog`` is told the id of the subdialog doing the step as soon as it exists (workflows
        follow its events, e.g. to report its tool calls)."""
        team = self.engine.config.get().team
        if team.member(agent_id) is None:
            raise EngineError(f"workflow step needs member {agent_id!r}, which is not in .minds/team.yaml")
        head = f"@{agent_id}{' !tellaskSession ' + session if session else ''} {headline or 'workflow step'}\n"
        info = parse_headline(head)
        call_id = f"wf-{new_dialog_id()}"
        call = TellaskCall(
            headline=head,
            body=request,
            first_mention=agent_id,
            mentions=tuple(info.mentions),
            tellask_session=session,
            error=None,
            call_id=call_id,
        )
        await dispatch(self.engine, self.root, CallToRun(call, call_id), agent_id, "B" if session else "C", session, 0)
        entry = next((p for p in self.root.pending if p.call_id == call_id), None)
        if entry is None:  # the subdialog answered before we looked (cannot happen with a real provider)
            raise RuntimeError(f"workflow call {call_id} vanished before it could be awaited")
        if on_subdialog is not None:
            on_subdialog(entry.subdialog_id)
        future = self.engine.conductors.expect(entry.subdialog_id, call_id)
        try:
            return await asyncio.wait_for(future, timeout)
        except (TimeoutError, asyncio.CancelledError):
            self.engine.conductors.forget(entry.subdialog_id, call_id)
            sub = self.engine.try_get_dialog(self.root.root_id, entry.subdialog_id)
            if sub is not None and not sub.is_dead:
                await self.engine.declare_dead(sub, "the workflow step was cancelled or timed out")
            raise


def start_run(engine: EngineServices, workflow: str, agent_id: str, taskdoc_path: str, title: str) -> ConductorRun:
    """Create the root dialog of a workflow run."""
    root_id = new_dialog_id()
    meta = DialogMeta(
        id=root_id,
        root_id=root_id,
        agent_id=agent_id,
        task_doc_path=taskdoc_path,
        created_at=now_iso(),
        conductor=workflow,
        title=title,
    )
    root = engine.add_root(meta, LatestState(last_modified=now_iso()))
    mark_workflow_taskdoc(engine.rtws.root, taskdoc_path, workflow)
    return ConductorRun(engine, root)
