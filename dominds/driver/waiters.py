"""Workflow code waiting for teammate answers: the futures of in-flight ``ConductorRun.ask`` calls.

Below the steps that resolve them (supply) and the conductor API that creates them, so neither has to
import the other.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from dominds.dialog.model import Dialog


@dataclass(frozen=True)
class TeammateAnswer:
    """What a teammate answered one ``ask``."""

    text: str
    status: Literal["completed", "failed"]
    subdialog_id: str
    call_id: str
    failure_reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "completed"


class ConductorWaiters:
    """Futures of in-flight ``ask`` calls, keyed by (subdialogId, callId)."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, str], asyncio.Future[TeammateAnswer]] = {}

    def expect(self, sub_id: str, call_id: str) -> asyncio.Future[TeammateAnswer]:
        future: asyncio.Future[TeammateAnswer] = asyncio.get_running_loop().create_future()
        self._waiting[(sub_id, call_id)] = future
        return future

    def resolve(self, sub: Dialog, call_id: str, text: str, status: str, reason: str) -> None:
        future = self._waiting.pop((sub.self_id, call_id), None)
        if future is not None and not future.done():
            future.set_result(
                TeammateAnswer(text, "failed" if status == "failed" else "completed", sub.self_id, call_id, reason)
            )

    def forget(self, sub_id: str, call_id: str) -> None:
        self._waiting.pop((sub_id, call_id), None)
