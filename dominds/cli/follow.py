"""Following a dialog tree until it *rests*, shared by ``run``, ``tell/new/answer/resume --follow`` and ``show --follow``.

A followed tree rests when its root is idle (done), stopped (interrupted, dead, error) or waiting for a
human answer; the command then prints how to go on and exits 0 (idle), 3 (a question is waiting:
``dominds answer``) or 1 (stopped).

- With a daemon: ``follow_daemon.py`` — the websocket (``display_dialog`` gives a replay and then live
  events) plus ``TreeSettle``, which decides from the events alone. Subdialogs show as progress lines.
- Without one: ``drive_here.py`` — an in-process ``Engine``, the daemon's scheduler started for this
  command (``resume=False``: dialogs interrupted by an earlier shutdown stay for ``serve`` to resume).
  Its events come from pubchan, and rest is checked exactly on the engine's dialogs.

This module holds what both ways share: what was started (``Plan``), how events are shown, and the
message a command sends.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dominds.cli.client import DaemonClient
    from dominds.cli.render import EventRenderer, JsonLinesSink

Event = dict[str, Any]


@dataclass
class Plan:
    """What a command started: the tree, the dialogs rendered in full, their agents."""

    root_id: str
    followed: set[str]
    agents: dict[str, str]


def event_sink(json_mode: bool, plan: Plan) -> EventRenderer | JsonLinesSink:
    """Where a followed tree's events go: JSON lines, or the transcript for a terminal."""
    from dominds.cli.render import EventRenderer, JsonLinesSink, Style, TranscriptWriter

    if json_mode:
        return JsonLinesSink(sys.stdout)
    writer = TranscriptWriter(sys.stdout, Style.for_stream(sys.stdout))
    return EventRenderer(writer, followed=plan.followed, root_id=plan.root_id, agents=plan.agents)


def new_msg_id() -> str:
    from dominds.ids import new_dialog_id

    return f"cli-{new_dialog_id()}"


def message_sender(client: DaemonClient, self_id: str, text: str) -> Callable[[], Awaitable[str]]:
    async def send() -> str:
        reply = await client.post(f"/api/dialogs/{self_id}/messages", {"content": text, "msgId": new_msg_id()})
        return str(reply["msgId"])

    return send


def drive_marker(self_id: str) -> str:
    """What a ``send`` that resumes (rather than sends a message) returns: wait for this dialog's drive."""
    return f"drive:{self_id}"
