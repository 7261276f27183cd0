"""`dominds run`: a headless turn — start a root dialog and stream it until it rests.

This module also holds the following machinery shared by ``tell/new/answer --follow`` and
``show --follow``. A followed tree *rests* when its root is idle (done), stopped (interrupted, dead,
error) or waiting for a human answer; the command then prints how to go on and exits 0 (idle),
3 (a question is waiting: ``dominds answer``) or 1 (stopped).

- With a daemon: the websocket (``display_dialog`` gives a replay and then live events) plus
  ``TreeSettle``, which decides from the events alone. Subdialogs show as progress lines.
- Without one: an in-process ``Engine`` — the daemon's scheduler, started for this command
  (``resume=False``: dialogs interrupted by an earlier shutdown stay for ``serve`` to resume). Its
  events come from pubchan, and rest is checked exactly on the engine's dialogs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dominds.cli.common import CliError, workspace
from dominds.cli.outcome import EXIT_QUESTION, Outcome, Where, finish
from dominds.rtws import Rtws

if TYPE_CHECKING:
    from dominds.cli.client import DaemonClient
    from dominds.cli.render import EventRenderer, JsonLinesSink
    from dominds.driver.engine import Engine

__all__ = ["EXIT_QUESTION", "Plan", "drive_in_process", "drive_marker", "follow_via_daemon", "message_text", "new_msg_id", "require_key_here",
           "chosen_taskdoc", "TASKDOC_HELP"]
STALL_SECONDS = 3.0
"""With a daemon: nothing in the tree running and no event for this long means it rests."""
TAKE_UP_SECONDS = 60.0
"""With a daemon: how long a message sent to a tree where nothing stands in its way may wait to be taken up."""
Event = dict[str, Any]
TASKDOC_HELP = (
    "the Taskdoc package, e.g. tasks/demo.tsk (default: the workspace's only one, else the newest dialog's, "
    "else a new tasks/main.tsk)"
)

EPILOG = """\
examples:
  dominds run "Research the demo task"
  dominds run --taskdoc tasks/demo.tsk "Research the demo task"
  dominds run --agent coder --taskdoc tasks/x.tsk "Fix the failing test" --json > events.jsonl
  echo "long prompt" | dominds run --taskdoc tasks/x.tsk -
exit status: 0 idle, 3 waiting for your answer (`dominds answer`), 1 stopped or failed.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "run",
        help="start a root dialog and stream it until it is idle or asks you a question",
        description="Headless: create a root dialog, send MESSAGE and stream the reply (thinking, Tellask calls, "
        "tools, teammates' progress) until the dialog is idle or waits for your answer. Uses the running daemon "
        "when there is one; otherwise drives the dialog in this process.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("message", metavar="MESSAGE", help="the message; `-` reads it from stdin")
    p.add_argument("--taskdoc", metavar="PATH", help=TASKDOC_HELP)
    p.add_argument("--agent", metavar="ID", help="the agent (default: the team's default_responder)")
    p.add_argument("--json", action="store_true", help="print every event as a JSON line, then the outcome")
    p.set_defaults(func=_run)


def message_text(value: str) -> str:
    text = sys.stdin.read() if value == "-" else value
    if not text.strip():
        raise CliError("the message is empty")
    return text


def new_msg_id() -> str:
    from dominds.ids import new_dialog_id

    return f"cli-{new_dialog_id()}"


def _run(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient, find_daemon
    from dominds.cli.render import at

    rtws = workspace()
    text = message_text(args.message)
    taskdoc = chosen_taskdoc(rtws, args.taskdoc, quiet=args.json)
    daemon = find_daemon(rtws)
    if daemon is None:

        def start(engine: Engine) -> Plan:
            require_key_here(engine, args.agent)
            root = engine.create_dialog(args.agent, taskdoc)
            engine.submit_user_message(root, text, new_msg_id())
            return Plan(root.root_id, {root.self_id}, {root.self_id: root.agent_id})

        return asyncio.run(drive_in_process(rtws, start, json_mode=args.json))

    async def via_daemon() -> int:
        async with DaemonClient(daemon) as client:
            body = {"taskDocPath": taskdoc, **({"agentId": args.agent} if args.agent else {})}
            root = await client.post("/api/dialogs", body)
            root_id = root["rootId"]
            if not args.json:
                print(f"(dialog {root_id}, {at(root.get('agentId'))}, on the daemon {daemon.describe()})", flush=True)
            return await follow_via_daemon(
                client, [root_id], root_id, send=message_sender(client, root_id, text), json_mode=args.json
            )

    return asyncio.run(via_daemon())


def chosen_taskdoc(rtws: Rtws, named: str | None, *, quiet: bool) -> str:
    """``--taskdoc`` or the default one; a default is announced, so nobody wonders where progress went."""
    from dominds.cli.resolve import default_taskdoc

    if named:
        return named
    path, why = default_taskdoc(rtws)
    if not quiet:
        print(f"(Taskdoc {path}: {why}; --taskdoc chooses another)", flush=True)
    return path


def require_key_here(engine: Engine, agent_id: str | None) -> None:
    """Driven in this process: refuse before anything is written when the agent's API key is not set here."""
    from dominds.cli.keys import require_key

    config = engine.config.get()
    require_key(config.team, config.catalog, agent_id)


def message_sender(client: DaemonClient, self_id: str, text: str) -> Callable[[], Awaitable[str]]:
    async def send() -> str:
        reply = await client.post(f"/api/dialogs/{self_id}/messages", {"content": text, "msgId": new_msg_id()})
        return str(reply["msgId"])

    return send


# ---------------------------------------------------------------- outcome


@dataclass
class Plan:
    """What an in-process command started: the tree, the dialogs rendered in full, their agents."""

    root_id: str
    followed: set[str]
    agents: dict[str, str]


def _sink(json_mode: bool, plan: Plan) -> EventRenderer | JsonLinesSink:
    from dominds.cli.render import EventRenderer, JsonLinesSink, Style, TranscriptWriter

    if json_mode:
        return JsonLinesSink(sys.stdout)
    writer = TranscriptWriter(sys.stdout, Style.for_stream(sys.stdout))
    return EventRenderer(writer, followed=plan.followed, root_id=plan.root_id, agents=plan.agents)


# ---------------------------------------------------------------- with a daemon


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


def drive_marker(self_id: str) -> str:
    """What a ``send`` that resumes (rather than sends a message) returns: wait for this dialog's drive."""
    return f"drive:{self_id}"


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
    sink = _sink(json_mode, plan)
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


# ---------------------------------------------------------------- in this process


async def drive_in_process(rtws: Rtws, start: Callable[[Engine], Plan], *, json_mode: bool) -> int:
    """Start an engine here, let ``start`` create/queue the work, stream until the tree rests, close."""
    from dominds.cli.client import find_daemon, locked_message
    from dominds.cli.offline import engine_errors
    from dominds.cli.render import EventRenderer
    from dominds.driver.engine import Engine, WorkspaceLocked

    engine = Engine(rtws, resume=False)
    try:
        await engine.start()
    except WorkspaceLocked:
        daemon = find_daemon(rtws)
        raise CliError(
            f"a daemon started meanwhile ({daemon.describe()}); run the command again" if daemon else locked_message(rtws)
        ) from None
    events: deque[Event] = deque()
    arrived = asyncio.Event()

    def deliver(event: Event) -> None:
        events.append(event)
        arrived.set()

    subscriber = engine.pubchan.subscribe(deliver)
    sink: EventRenderer | JsonLinesSink | None = None
    try:
        try:
            plan = start(engine)
        except engine_errors() as exc:
            raise CliError(str(exc)) from exc
        subscriber.following.update(plan.followed)
        sink = _sink(json_mode, plan)
        if not json_mode:
            sys.stdout.write(f"(no daemon running: driving dialog {plan.root_id} in this process)\n")
        quiet_checks = 0
        while quiet_checks < 2:  # twice in a row: a finishing drive may still hand work on
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), 0.05)
            arrived.clear()
            while events:
                event = events.popleft()
                if "dialog" in event:  # like the daemon path: dialog events, not global snapshots
                    sink.feed(event)
            quiet_checks = quiet_checks + 1 if _tree_quiet(engine, plan.root_id) else 0
        outcome = _classify(engine, plan.root_id)
        if outcome.kind == "question":
            from dominds.cli.offline import pending_questions

            outcome.only_question = len(pending_questions(rtws)) == 1
    finally:
        engine.pubchan.unsubscribe(subscriber)
        if isinstance(sink, EventRenderer):
            sink.w.end_line()  # Ctrl-C mid-line: the shell prompt starts on a line of its own
        await engine.close()
    return finish(outcome, json_mode, Where(plan.root_id, in_process=True))


def _tree_quiet(engine: Engine, root_id: str) -> bool:
    root = engine.roots.get(root_id)
    if root is None:
        return True
    return not any(d.is_driving or (d.latest.needs_drive and d.can_drive()) for d in root.local.values())


def _classify(engine: Engine, root_id: str) -> Outcome:
    from dominds.cli.render import run_state_label

    root = engine.load_root(root_id)
    questions = [engine.question_payload(d, q) for d in root.local.values() for q in d.q4h]
    if questions:
        return Outcome("question", questions=questions)
    state = root.latest.run_state.to_disk()
    if state.get("kind") == "idle":
        return Outcome("idle")
    if state.get("kind") in ("interrupted", "dead", "error", "terminal"):
        return Outcome(str(state["kind"]), run_state_label(state), state=state)
    stuck = [f"{d.self_id}: {d.latest.run_state.kind}" for d in root.local.values() if d.latest.run_state.kind != "idle"]
    return Outcome("waiting", f"nothing can run in this tree now ({', '.join(stuck)})")
