"""Driving a dialog tree in this process, when no daemon serves the workspace, until it rests (see ``follow.py``).

An ``Engine`` — the daemon's scheduler — is started for the command with ``resume=False`` (dialogs
interrupted by an earlier shutdown stay for ``serve`` to resume); its events come from pubchan, and
rest is checked exactly on the engine's dialogs.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from dominds.cli.common import CliError
from dominds.cli.follow import Event, Plan, event_sink
from dominds.cli.outcome import Outcome, Where, finish
from dominds.rtws import Rtws

if TYPE_CHECKING:
    from dominds.cli.render import EventRenderer, JsonLinesSink
    from dominds.driver.engine import Engine


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
        sink = event_sink(json_mode, plan)
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
