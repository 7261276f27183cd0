"""``agent.tool_call`` / ``agent.tool_result`` (seed §2): the run's teammates' tool calls, as the client sees them.

The driver records and publishes every function call of a dialog (``func_call_requested_evt``, then
``func_result_evt``) after persisting it. The relay follows the run's step subdialogs on the engine's
publish channel and turns those two events into the origin's pair: the same ``step_id``
(``step_<n>_<tool>``), ``content`` ``"Calling tool: <name>"`` then the result text, and ``metadata``
``{tool, args, status: running}`` then ``{tool, status: success|failed, error?, data?}``; both also carry
``call_id``, ``dialog_id`` and who called: ``task_id`` for a solver, ``scope: "plan"`` for the planner.

A step subdialog may publish before the conductor has told the relay whose it is (``bind``): such events
wait, a bounded number, until it does.
"""

from __future__ import annotations

import json
from typing import Any

from dominds.pubchan import PubChan
from dominds.workflows.plan_solve.data_tool import TOOL_NAME
from dominds.workflows.plan_solve.events import Emit

RESULT_CHARS = 8_000
"""Result text shown in one ``agent.tool_result`` (the full text stays in the dialog)."""
EARLY_EVENTS = 200
"""Events kept for subdialogs not bound yet (a nested subdialog of a step is never bound)."""
TOOL_EVENT_TYPES = frozenset({"func_call_requested_evt", "func_result_evt"})


class ToolEventRelay:
    def __init__(self, pubchan: PubChan, root_id: str, emit: Emit) -> None:
        self._pubchan = pubchan
        self._root_id = root_id
        self._emit = emit
        self._owners: dict[str, dict[str, Any]] = {}
        self._early: list[dict[str, Any]] = []
        self._steps: dict[str, str] = {}
        """call id → the step_id its tool_call was sent with."""
        self._count = 0
        self._subscriber = pubchan.subscribe(self._deliver, wants_all=True)

    def bind(self, dialog_id: str, owner: dict[str, Any]) -> None:
        """Tool calls of ``dialog_id`` belong to ``owner`` (``{"task_id": n}`` or ``{"scope": "plan"}``)."""
        self._owners[dialog_id] = owner
        waiting = [e for e in self._early if e["dialog"]["selfId"] == dialog_id]
        if waiting:
            self._early = [e for e in self._early if e["dialog"]["selfId"] != dialog_id]
            for event in waiting:
                self._relay(owner, event)

    def close(self) -> None:
        self._pubchan.unsubscribe(self._subscriber)

    def _deliver(self, event: dict[str, Any]) -> None:
        dialog = event.get("dialog")
        if event.get("type") not in TOOL_EVENT_TYPES or not dialog or dialog.get("rootId") != self._root_id:
            return
        owner = self._owners.get(dialog["selfId"])
        if owner is None:
            if len(self._early) < EARLY_EVENTS:
                self._early.append(event)
            return
        self._relay(owner, event)

    def _relay(self, owner: dict[str, Any], event: dict[str, Any]) -> None:
        base = {**owner, "dialog_id": event["dialog"]["selfId"]}
        if event["type"] == "func_call_requested_evt":
            name, call_id = str(event.get("funcName")), str(event.get("funcId"))
            self._count += 1
            step_id = self._steps[call_id] = f"step_{self._count}_{name}"
            self._emit(
                "agent.tool_call",
                f"Calling tool: {name}",
                {**base, "tool": name, "args": _arguments(event.get("arguments")), "status": "running", "call_id": call_id},
                step_id,
            )
            return
        name, call_id = str(event.get("name")), str(event.get("id"))
        content = str(event.get("content") or "")
        failed = bool(event.get("isError"))
        metadata: dict[str, Any] = {**base, "tool": name, "status": "failed" if failed else "success", "call_id": call_id}
        if failed:
            metadata["error"] = content[:RESULT_CHARS]
        elif name == TOOL_NAME:
            data = _json_or_none(content)
            if data is not None:
                metadata["data"] = data
        shown = content if len(content) <= RESULT_CHARS else content[:RESULT_CHARS] + " … (cut)"
        self._emit("agent.tool_result", shown, metadata, self._steps.pop(call_id, f"step_{self._count}_{name}"))


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        parsed = _json_or_none(raw)
        return parsed if parsed is not None else raw
    return raw


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None
