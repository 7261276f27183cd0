"""Pending ``agent.user_confirm`` requests of one run, answered by ``user.response`` (seed §2.1, §2.2).

A request waits for its ``step_id`` to be answered, for the timeout (which counts as declined), or for
the run to take the question back (a replan or cancel_plan during plan confirmation).
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

from dominds.workflows.plan_solve.events import Emit

ConfirmReason = Literal["user", "timeout", "replan", "cancel_plan", "closed"]


@dataclass(frozen=True)
class Confirmation:
    confirmed: bool
    reason: ConfirmReason
    """``user`` = answered by ``user.response``; otherwise why the request ended without an answer."""
    content: dict[str, Any] = field(default_factory=dict)
    """The ``user.response`` content (``confirmed`` and, for a plan, optional edited ``tasks``)."""


def plan_step_id() -> str:
    return f"confirm_plan_{secrets.token_hex(4)}"


def tool_step_id(tool_name: str) -> str:
    return f"confirm_{secrets.token_hex(4)}_{tool_name}"


class Confirmations:
    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._waiting: dict[str, asyncio.Future[Confirmation]] = {}

    async def ask(self, step_id: str, content: str, metadata: dict[str, Any], timeout: float) -> Confirmation:
        """Send ``agent.user_confirm`` and wait for its answer (a timeout counts as declined)."""
        future: asyncio.Future[Confirmation] = asyncio.get_running_loop().create_future()
        self._waiting[step_id] = future
        self._emit("agent.user_confirm", content, {"requires_confirmation": True, **metadata}, step_id)
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return Confirmation(False, "timeout")
        finally:
            self._waiting.pop(step_id, None)

    def answer(self, step_id: str, content: dict[str, Any]) -> bool:
        """Resolve ``step_id`` with a ``user.response``; False when nothing waits for it."""
        future = self._waiting.get(step_id)
        if future is None or future.done():
            return False
        future.set_result(Confirmation(bool(content.get("confirmed")), "user", content))
        return True

    def withdraw(self, step_id: str, reason: ConfirmReason) -> bool:
        """End a waiting request without a user answer (replan, cancel_plan)."""
        future = self._waiting.get(step_id)
        if future is None or future.done():
            return False
        future.set_result(Confirmation(False, reason))
        return True

    def withdraw_all(self) -> None:
        for step_id in list(self._waiting):
            self.withdraw(step_id, "closed")
