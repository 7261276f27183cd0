"""Publish/subscribe channels: one per dialog plus a global one.

Every event gets ``seq`` (per dialog, or per the global channel) and ``epoch`` (per daemon run), so a
client that reconnects with its last ``(epoch, seq)`` can be sent exactly what it missed from the
replay buffer, or a full replay from the files when the buffer no longer covers it. An event is
published only after the state it describes was written (DESIGN §4.1); it is stamped at once, and
delivered (and kept for replay) once those writes are durable: at once without a group committer, after
the group's fsyncs with one (``store/commit.py``), always in the order published.
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dominds.ids import now_iso
from dominds.store.commit import after_durable

Event = dict[str, Any]
GLOBAL = ""
"""Channel key of events that belong to no dialog (dialog lists, problems, team config)."""

BROADCAST_TYPES = frozenset(
    {
        "new_q4h_asked",
        "q4h_answered",
        "questions_count_update",
        "dlg_run_state_evt",
        "dlg_run_state_marker_evt",
        "subdialog_created_evt",
    }
)
"""Dialog events every subscriber receives whatever it follows (the Q4H panel and tree badges)."""


@dataclass
class _Channel:
    next_seq: int = 1
    dropped_through: int = 0
    """Highest seq of this channel already evicted from the replay buffer."""


@dataclass(eq=False)
class Subscriber:
    """One receiver (a websocket): follows a set of dialogs and always gets broadcast events."""

    deliver: Callable[[Event], None]
    following: set[str] = field(default_factory=set)
    wants_all: bool = False
    """Receive every dialog's events (a CLI `--follow` on a whole tree, or a bench client)."""


class PubChan:
    def __init__(self, buffer_events: int = 4096, buffer_chars: int = 8 * 1024 * 1024) -> None:
        self.epoch = secrets.token_hex(4)
        self._channels: dict[str, _Channel] = {}
        self._subscribers: list[Subscriber] = []
        # One bounded buffer for all channels: memory stays flat however many dialogs exist,
        # while a client that reconnects within seconds still gets an exact catch-up.
        self._buffer: deque[tuple[str, Event, int]] = deque()
        self._buffer_cap = buffer_events
        self._buffer_chars_cap = buffer_chars
        """Also bounded by text size: a few huge messages must not keep hundreds of MiB alive."""
        self._buffer_chars = 0
        self._pending: deque[tuple[str, Event]] = deque()
        """Stamped events waiting for their writes to be durable, in order (see ``store/commit.py``)."""

    def publish(self, dialog: tuple[str, str] | None, event: Event) -> Event:
        """Stamp an event and deliver it once durable. ``dialog`` is ``(selfId, rootId)`` or None for global events."""
        key = dialog[0] if dialog else GLOBAL
        channel = self._channels.setdefault(key, _Channel())
        event["seq"] = channel.next_seq
        event["epoch"] = self.epoch
        channel.next_seq += 1
        if dialog is not None:
            event["dialog"] = {"selfId": dialog[0], "rootId": dialog[1]}
        event.setdefault("timestamp", now_iso())
        self._pending.append((key, event))
        after_durable(self._deliver_next)
        return event

    def _deliver_next(self) -> None:
        key, event = self._pending.popleft()
        size = _text_size(event)
        self._buffer.append((key, event, size))
        self._buffer_chars += size
        while len(self._buffer) > self._buffer_cap or (self._buffer_chars > self._buffer_chars_cap and len(self._buffer) > 1):
            old_key, old, old_size = self._buffer.popleft()
            self._buffer_chars -= old_size
            self._channels[old_key].dropped_through = old["seq"]
        broadcast = key == GLOBAL or event.get("type") in BROADCAST_TYPES
        for sub in list(self._subscribers):
            if broadcast or sub.wants_all or key in sub.following:
                sub.deliver(event)

    def subscribe(self, deliver: Callable[[Event], None], *, wants_all: bool = False) -> Subscriber:
        sub = Subscriber(deliver=deliver, wants_all=wants_all)
        self._subscribers.append(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        if sub in self._subscribers:
            self._subscribers.remove(sub)

    def last_seq(self, dialog_self_id: str) -> int:
        channel = self._channels.get(dialog_self_id)
        return channel.next_seq - 1 if channel else 0

    def events_since(self, dialog_self_id: str, epoch: str, seq: int) -> list[Event] | None:
        """Buffered events after ``seq``; None when they cannot be served exactly (replay from files)."""
        if epoch != self.epoch:
            return None
        channel = self._channels.get(dialog_self_id)
        if channel is None:
            return [] if seq == 0 else None
        if seq >= channel.next_seq - 1:
            return []
        if channel.dropped_through > seq:
            return None
        # delivered ones from the buffer, then those still waiting to be durable (a caller sends them
        # through ``after_durable`` too, so they still reach nobody before their writes are durable)
        return [e for k, e, _ in self._buffer if k == dialog_self_id and e["seq"] > seq] + [
            e for k, e in self._pending if k == dialog_self_id and e["seq"] > seq
        ]

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)


def _text_size(event: Event) -> int:
    """Characters of the event's text fields (content, chunks, answers): what makes an event big."""
    return 64 + sum(len(value) for value in event.values() if isinstance(value, str))
