"""The LLM role backend: every request is a teammate subdialog of the run's root dialog.

``run.ask`` creates the subdialog exactly as a tellask would, so each step is persisted, visible
in the panel, stoppable and costed. The request goes out as the seed's JSON message; the answer
text is read back with ``reply_from_text``. A teammate that times out or whose subdialog dies is
reported with the seed's codes (``EVALUATION_TIMEOUT`` for the evaluator, ``GENERATION_FAILED`` for
the others) instead of an exception; a cancelled run still cancels.
"""

from __future__ import annotations

import json

from dominds.driver.conductor import ConductorRun
from dominds.workflows.tot.channel import RoleAnswer
from dominds.workflows.tot.protocol import Message, error_reply, reply_from_text
from dominds.workflows.tot.roles import ROLE_MEMBERS, ensure_role_members
from dominds.workflows.tot.schemas import EVALUATION_TIMEOUT, GENERATION_FAILED, RESPONSE_TYPES

DEFAULT_STEP_TIMEOUT = 300.0
"""Seconds one role call may take before it is given up (its subdialog is declared dead)."""


class TeammateBackend:
    def __init__(
        self,
        run: ConductorRun,
        *,
        members: dict[str, str] | None = None,
        step_timeout: float | None = DEFAULT_STEP_TIMEOUT,
    ) -> None:
        self.run = run
        self.members = {**ROLE_MEMBERS, **(members or {})}
        ensure_role_members(run.engine)
        self.step_timeout = step_timeout

    async def answer(self, request: Message, correction: str | None) -> RoleAnswer:
        agent = request["to"]
        member = self.members[agent]
        failure_code = EVALUATION_TIMEOUT if agent == "evaluator" else GENERATION_FAILED
        try:
            answer = await self.run.ask(member, request_text(request, correction), headline=request["type"], timeout=self.step_timeout)
        except TimeoutError:
            reason = f"{member} gave no answer within {self.step_timeout:g} s"
            return RoleAnswer(error_reply(request, failure_code, reason))
        if not answer.ok:
            reason = f"{member} stopped without an answer: {answer.failure_reason or 'its subdialog failed'}"
            return RoleAnswer(error_reply(request, failure_code, reason), subdialog_id=answer.subdialog_id)
        return RoleAnswer(reply_from_text(request, answer.text), subdialog_id=answer.subdialog_id)


def request_text(request: Message, correction: str | None) -> str:
    """What the teammate reads: the request message, the reply type it owes, and what to fix on a retry."""
    expected = RESPONSE_TYPES[request["type"]]
    lines = []
    if correction:
        lines += [f"Your previous reply could not be used: {correction}", "Answer again, correctly this time.", ""]
    lines += [
        f"Reply with one JSON object: the `{expected}` message to this `{request['type']}` request, no other text.",
        "",
        "```json",
        json.dumps(request, ensure_ascii=False, indent=2),
        "```",
    ]
    return "\n".join(lines)
