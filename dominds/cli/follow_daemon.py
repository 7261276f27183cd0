"""Following a dialog tree on the running daemon until it rests (see ``follow.py``).

The websocket's ``display_dialog`` gives each followed dialog's history and then its live events;
``TreeSettle`` decides from the events alone when the tree rests (the daemon's view).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from dominds.cli.common import CliError
from dominds.cli.follow import Event, Plan, drive_marker, event_sink
from dominds.cli.outcome import Outcome, Where, finish

if TYPE_CHECKING:
    from dominds.cli.client import DaemonClient

STALL_SECONDS = 3.0
"""Nothing in the tree running and no event for this long means it rests."""
TAKE_UP_SECONDS = 60.0
"""How long a message sent to a tree where nothing stands in its way may wait to be taken up."""


class TreeSettle:
    """Decides from the event stream alone when a followed tree rests (the daemon's view)."""

    def __init__(self, root_id: str, awaited_msg_id: str | None, states: dict[str, dict[str, Any]]) -> None:
        self.root_id = root_id
        self.awaited = awaited_msg_id
        self.consumed = awaited_msg_id is None
        """The message sent has been taken up by a generation (nothing to wait for in `show --follow`)."""
        self.states = states
        self.questions: dict[str, dict[str, Any]] = {}
        self.last_event = self.sent_at = time.monotonic()

    def feed(self, event: Event) -> Outcome | None:
        dialog = event.get("dialog") or {}
        if dialog.get("rootId") != self.root_id or event.get("replay"):
            return None
        self.last_event = time.monotonic()
        kind = event.get("type")
        if kind == "new_q4h_asked":
            question = event.get("question") or {}
            self.questions[str(question.get("id"))] = question
            return Outcome("question", questions=list(self.questions.values()))
        if kind == "q4h_answered":
            self.questions.pop(str(event.get("questionId")), None)
        elif kind == "end_of_user_saying_evt" and event.get("msgId") == self.awaited:
            self.consumed = True
        elif kind == "dlg_run_state_evt":
            state = event.get("runState") or {}
            self.states[str(dialog.get("selfId"))] = state
            if self.awaited == drive_marker(str(dialog.get("selfId"))) and state.get("kind") == "proceeding":
                self.consumed = True  # a resume has no message: its drive starting is the sign
        return self.settled()

    def _active(self) -> bool:
        return any(state.get("kind") in ("proceeding", "stop_requested") for state in self.states.values())

    def settled(self) -> Outcome | None:
        from dominds.cli.render import run_state_label

        if not self.consumed or self._active():
            return None
        root = self.states.get(self.root_id) or {}
        kind = root.get("kind")
        if kind == "idle":
            return Outcome("idle")
        if kind in ("interrupted", "dead", "error", "terminal"):
            return Outcome(str(kind), run_state_label(root), state=root)
        if kind == "blocked" and "human" in str(root.get("reason")):
            return Outcome("question")
        return None  # blocked on subdialogs: the root is revived when they answer

    def stalled(self) -> Outcome | None:
        from dominds.cli.render import run_state_label

        if self._active() or time.monotonic() - self.last_event < STALL_SECONDS:
            return None
        if any(s.get("kind") == "blocked" and "human" in str(s.get("reason")) for s in self.states.values()):
            return Outcome("question")
        waiting = ", ".join(f"{sid}: {run_state_label(s)}" for sid, s in self.states.items() if s.get("kind") != "idle")
        if not self.consumed:
            blocked = any(state.get("kind") == "blocked" for state in self.states.values())
            if not blocked and time.monotonic() - self.sent_at < TAKE_UP_SECONDS:
                return None  # nothing stands in the way: the daemon takes it up (its first request may load an SDK)
            return Outcome("waiting", f"the message is queued; the dialog cannot take it yet ({waiting or 'idle'})")
        return self.settled() or Outcome("waiting", f"nothing is running; the tree waits ({waiting})")


def _tree_states(node: dict[str, Any], out: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out[str(node["selfId"])] = node.get("runState") or {}
    for child in node.get("subdialogs", ()):
        _tree_states(child, out)
    return out


async def follow_via_daemon(
    client: DaemonClient,
    followed: list[str],
    root_id: str,
    *,
    send: Callable[[], Awaitable[str | None]] | None,
    json_mode: bool,
    show_history: bool = False,
) -> int:
    """Follow ``followed`` (self ids of one tree) on the daemon, ``send`` the change, stream until rest."""
    import aiohttp

    from dominds.cli.render import EventRenderer

    plan = Plan(root_id, set(followed), {})
    sink = event_sink(json_mode, plan)
    async with client.websocket() as ws:
        for self_id in followed:  # join first, act second: no event of the reply can be missed
            await ws.send_json({"type": "display_dialog", "dialog": {"selfId": self_id, "rootId": root_id}, "follow": "add", "requestId": self_id})
        ready, history = 0, 0
        while ready < len(followed) or history > 0:  # each dialog_ready is followed by its `eventCount` events
            event = await _receive(ws)
            if event.get("type") == "error":
                raise CliError(str(event.get("message")))
            if event.get("type") == "dialog_ready":
                ready += 1
                history += int(event.get("eventCount") or 0)
                plan.agents[event["dialog"]["selfId"]] = str(event.get("agentId"))
                if isinstance(sink, EventRenderer):
                    sink.agents.update(plan.agents)
                continue
            if event.get("replay"):
                history -= 1
                if show_history:
                    sink.feed(event)
            elif "dialog" in event:  # a live broadcast that came before the replays were through
                sink.feed(event)
        hierarchy = await client.get(f"/api/dialogs/{root_id}/hierarchy")
        settle = TreeSettle(root_id, None, _tree_states(hierarchy["hierarchy"], {}))
        if send is not None:
            settle.awaited, settle.consumed, settle.sent_at = await send(), False, time.monotonic()
        outcome = settle.settled() if send is None else None
        while outcome is None:
            try:
                event = await _receive(ws, timeout=0.5)
            except TimeoutError:
                outcome = settle.stalled()
                continue
            except aiohttp.ClientError as exc:
                outcome = Outcome("closed", f"the daemon closed the connection ({exc})")
                break
            if "dialog" in event and not event.get("replay"):  # not acks, global snapshots or old history
                sink.feed(event)
            outcome = settle.feed(event)
    if outcome.kind == "question":
        pending = (await client.get("/api/q4h"))["questions"]
        outcome.questions = outcome.questions or [q for q in pending if q.get("rootId") == root_id]
        outcome.only_question = len(pending) == 1
    return finish(outcome, json_mode, Where(root_id, in_process=False))


async def _receive(ws: Any, timeout: float | None = None) -> Event:
    import aiohttp

    message = await ws.receive(timeout=timeout)
    if message.type == aiohttp.WSMsgType.TEXT:
        event: Event = json.loads(message.data)
        return event
    if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
        code = ws.close_code
        if code == 4401:
            raise CliError("the daemon refused the token in daemon.json (unauthorized)")
        raise aiohttp.ClientConnectionError(f"websocket closed with code {code}")
    if message.type == aiohttp.WSMsgType.ERROR:
        raise aiohttp.ClientConnectionError(str(ws.exception()))
    return {}
