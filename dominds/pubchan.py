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
    first_seq: int
    next_seq: int
    dropped_through: int
    """Highest seq of this channel already evicted from the replay buffer (``first_seq - 1`` at first)."""
    held: int = 0
    """Its events in the replay buffer or waiting to be durable."""
    unloaded: bool = False
    """Its dialog was unloaded: the channel goes once it holds no event (``PubChan.forget``)."""


@dataclass(eq=False)
class Subscriber:
    """One receiver (a websocket): follows a set of dialogs and always gets broadcast events."""

    deliver: Callable[[Event], None]
    following: set[str] = field(default_factory=set)
    wants_all: bool = False
    """Receive every dialog's events (a CLI `--follow` on a whole tree, or a bench client)."""
    forget: Callable[[str], None] | None = None
    """Called with a channel's key when the channel is dropped (``PubChan.forget``)."""


class PubChan:
    def __init__(self, buffer_events: int = 4096, buffer_chars: int = 8 * 1024 * 1024) -> None:
        self.epoch = secrets.token_hex(4)
        self._channels: dict[str, _Channel] = {GLOBAL: _Channel(1, 1, 0)}
        self._stamped = 0
        """Events stamped so far, all channels together: every seq handed out is at most this."""
        self._dropped_any = False
        self._subscribers: list[Subscriber] = []
        # One bounded buffer for all channels: memory stays flat however many dialogs exist,
        # while a client that reconnects within seconds still gets an exact catch-up.
        self._buffer: deque[tuple[str, Event, int]] = deque()
        self.buffer_events = buffer_events
        """Capacity of the replay buffer, in events of all channels together."""
        self._buffer_chars_cap = buffer_chars
        """Also bounded by text size: a few huge messages must not keep hundreds of MiB alive."""
        self._buffer_chars = 0
        self._pending: deque[tuple[str, Event]] = deque()
        """Stamped events waiting for their writes to be durable, in order (see ``store/commit.py``)."""

    def publish(self, dialog: tuple[str, str] | None, event: Event) -> Event:
        """Stamp an event and deliver it once durable. ``dialog`` is ``(selfId, rootId)`` or None for global events."""
        key = dialog[0] if dialog else GLOBAL
        channel = self._channels.get(key)
        if channel is None:
            channel = self._channels[key] = self._new_channel()
        channel.unloaded = False
        channel.held += 1
        self._stamped += 1
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
        while len(self._buffer) > self.buffer_events or (self._buffer_chars > self._buffer_chars_cap and len(self._buffer) > 1):
            old_key, old, old_size = self._buffer.popleft()
            self._buffer_chars -= old_size
            old_channel = self._channels[old_key]
            old_channel.dropped_through = old["seq"]
            old_channel.held -= 1
            if old_channel.unloaded and not old_channel.held:
                self._drop(old_key)
        broadcast = key == GLOBAL or event.get("type") in BROADCAST_TYPES
        for sub in list(self._subscribers):
            if broadcast or sub.wants_all or key in sub.following:
                sub.deliver(event)

    def _new_channel(self) -> _Channel:
        """From seq 1; once a channel was dropped, above every seq handed out so far: a dialog whose
        channel was dropped and comes back must never repeat (or go below) a seq of its past."""
        first = self._stamped + 1 if self._dropped_any else 1
        return _Channel(first, first, first - 1)

    def forget(self, self_ids: list[str]) -> None:
        """These dialogs were unloaded: drop their channels, at once or when their last event leaves the
        replay buffer (until then a client resuming ``since`` a seq is still served from it)."""
        for key in self_ids:
            channel = self._channels.get(key)
            if channel is None or key == GLOBAL:
                continue
            if channel.held:
                channel.unloaded = True
            else:
                self._drop(key)

    def _drop(self, key: str) -> None:
        del self._channels[key]
        self._dropped_any = True
        for sub in list(self._subscribers):
            if sub.forget is not None:
                sub.forget(key)

    def seq_floor(self, key: str) -> int:
        """Every seq this channel has handed out since it was created, or will, is above this."""
        channel = self._channels.get(key)
        return channel.first_seq - 1 if channel is not None else self._stamped if self._dropped_any else 0

    def channel_keys(self) -> set[str]:
        """Channels held now: the global one (``""``), and one per dialog published to and not yet forgotten."""
        return set(self._channels)

    def subscribe(
        self,
        deliver: Callable[[Event], None],
        *,
        wants_all: bool = False,
        forget: Callable[[str], None] | None = None,
    ) -> Subscriber:
        sub = Subscriber(deliver=deliver, wants_all=wants_all, forget=forget)
        self._subscribers.append(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        if sub in self._subscribers:
            self._subscribers.remove(sub)

    def last_seq(self, dialog_self_id: str) -> int:
        channel = self._channels.get(dialog_self_id)
        return channel.next_seq - 1 if channel else self.seq_floor(dialog_self_id)

    def events_since(self, dialog_self_id: str, epoch: str, seq: int) -> list[Event] | None:
        """Buffered events after ``seq``; None when they cannot be served exactly (replay from files)."""
        if epoch != self.epoch:
            return None
        channel = self._channels.get(dialog_self_id)
        if channel is None:
            return [] if seq == self.seq_floor(dialog_self_id) else None
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
