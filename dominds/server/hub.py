"""Websocket connections and how pubchan events reach them.

Each connection is one pubchan subscriber. Publishing is synchronous, so delivery only appends the
encoded event to the connection's outbox and a writer task sends it. The outbox is bounded in bytes:
a client whose unsent frames pass ``MAX_OUTBOX_BYTES`` (it stopped reading, or reads slower than its
dialogs speak) is closed with 4008 and reconnects and resumes from its last seq. Replays never come
near that bound: they are sent a page at a time, each page once the outbox is below ``ROOM_BYTES``.

No duplicates per socket: every dialog channel (and the global channel) has a ``SeqTracker`` per
connection, and an event whose ``seq`` that socket already delivered is dropped. This matters
because one socket gets a dialog's events on several paths: as a follower, as broadcasts (run
state, Q4H) while not following, and again from the replay buffer when it resumes ``since`` a seq.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from aiohttp import WSCloseCode, web

from dominds.driver.engine import Engine
from dominds.pubchan import GLOBAL, Event, Subscriber
from dominds.server import wire
from dominds.server.render import enrich
from dominds.server.resting import SWEEP_SECONDS, RestingTrees
from dominds.store.commit import after_durable

log = logging.getLogger("dominds.server")

MAX_OUTBOX_BYTES = 16 * 1024 * 1024
"""Unsent bytes per connection before it is considered stuck and closed (close code 4008)."""
ROOM_BYTES = 1024 * 1024
"""A replay page is built only once the outbox holds less than this (the back-pressure of paging)."""
CLOSE_TOO_SLOW = 4008

_TRACKED_LIMIT = 4096
"""Delivered seqs kept above a tracker's contiguous prefix. The pubchan replay buffer holds 4096
events (all channels together), so a seq this far below its channel's newest can never be served
again and forgetting it cannot cause a duplicate."""


class SeqTracker:
    """Which seqs of one channel a connection has delivered: a contiguous prefix plus stragglers."""

    __slots__ = ("upto", "extra")

    def __init__(self) -> None:
        self.upto = 0
        """Every seq ≤ this was delivered or is covered by a replay the socket received."""
        self.extra: set[int] = set()
        """Delivered seqs above ``upto`` (broadcasts of a dialog the socket did not follow)."""

    def admit(self, seq: int) -> bool:
        """True (and remembered) if ``seq`` was not delivered yet."""
        if seq <= self.upto or seq in self.extra:
            return False
        if seq == self.upto + 1:
            self.upto = seq
            while self.upto + 1 in self.extra:
                self.upto += 1
                self.extra.discard(self.upto)
        else:
            self.extra.add(seq)
            if len(self.extra) > _TRACKED_LIMIT:
                self.extra.discard(min(self.extra))
        return True

    def cover(self, seq: int) -> None:
        """A replay as of ``seq`` was sent: live events up to it must not follow."""
        if seq > self.upto:
            self.upto = seq
            self.extra = {s for s in self.extra if s > seq}


class EventEncoder:
    """JSON text of outgoing events, enriched once and encoded once however many sockets get them.

    pubchan hands the *same* dict to every subscriber in one loop, so a one-entry identity cache
    turns 50 followers into one ``json.dumps``. Finished markdown is rendered here (server-side
    markdown, DESIGN §7) and stored into the event, so the replay buffer serves it too.
    """

    def __init__(self) -> None:
        self._last: Event | None = None
        self._text = ""

    def encode(self, event: Event) -> str:
        if event is self._last:
            return self._text
        enrich(event)
        self._last, self._text = event, json.dumps(event, ensure_ascii=False)
        return self._text


class Connection:
    """One websocket client: what it follows, what it was sent, and its outbox."""

    def __init__(self, hub: Hub, ws: web.WebSocketResponse) -> None:
        self.hub = hub
        self.outbox_limit = hub.outbox_bytes
        self.ws = ws
        self.ui_language = "en"
        self.followed: dict[str, str] = {}
        """selfId of each followed dialog → its Taskdoc path (for live Taskdoc refreshes)."""
        self.trackers: dict[str, SeqTracker] = {}
        self._outbox: deque[str] = deque()
        self._outbox_bytes = 0
        """Characters queued and not sent yet (a close measure of the bytes: events are mostly ASCII)."""
        self._room = asyncio.Event()
        self._room.set()
        self._ready = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._closing = False
        self._closer: asyncio.Task[bool] | None = None
        self.subscriber: Subscriber = hub.engine.pubchan.subscribe(self._deliver, forget=self._forget_channel)
        """Dropping a channel drops its tracker: none of its seqs can be delivered again, and a
        long-lived panel must not keep one per dialog it ever heard of."""
        self._writer = asyncio.create_task(self._write_forever(), name="ws-writer")

    # -- delivery (synchronous: called from pubchan.publish) ---------------------------------------

    def tracker(self, channel: str) -> SeqTracker:
        tracker = self.trackers.get(channel)
        if tracker is None:
            tracker = self.trackers[channel] = SeqTracker()
        return tracker

    def _forget_channel(self, channel: str) -> None:
        self.trackers.pop(channel, None)

    def _deliver(self, event: Event) -> None:
        """From pubchan, which delivers only once the event's writes are durable: straight to the outbox."""
        dialog = event.get("dialog")
        channel = dialog["selfId"] if dialog else GLOBAL
        tracker = self.tracker(channel)
        seq = int(event["seq"])
        if seq > tracker.upto + 1:  # a gap: maybe the channel was dropped and started again above it
            tracker.cover(self.hub.engine.pubchan.seq_floor(channel))
        if tracker.admit(seq):
            self._enqueue(self.hub.encoder.encode(event))

    def deliver_missed(self, channel: str, events: list[Event]) -> None:
        tracker = self.tracker(channel)
        for event in events:
            if tracker.admit(int(event["seq"])):
                self.send_text(self.hub.encoder.encode(event))

    def send(self, message: dict[str, Any]) -> None:
        self.send_text(json.dumps(message, ensure_ascii=False))

    def send_first(self, message: dict[str, Any]) -> None:
        """A message that reports no write (the welcome, the problems snapshot): into the outbox at once.

        Through ``send`` the welcome waited behind the fsync of a write made just before the socket
        connected, and that write's event, delivered to every socket once durable, reached the new
        socket before its welcome, which the protocol promises is the first message."""
        self._enqueue(json.dumps(message, ensure_ascii=False))

    def send_text(self, text: str) -> None:
        """Send a reply once every write made before it is durable (and after the events published before it)."""
        after_durable(lambda: self._enqueue(text))

    def _enqueue(self, text: str) -> None:
        if self._closing:
            return
        if wire.checking():
            wire.check_text(text)
        self._outbox.append(text)
        self._outbox_bytes += len(text)
        self._ready.set()
        self._drained.clear()
        if self._outbox_bytes > ROOM_BYTES:
            self._room.clear()
        if self._outbox_bytes > self.outbox_limit and len(self._outbox) > 1:  # one big frame is sent whole
            log.warning(
                "closing a websocket that fell %d bytes (%d frames) behind", self._outbox_bytes, len(self._outbox)
            )
            self._outbox.clear()
            self._outbox_bytes = 0
            self._closing = True
            self._room.set()
            self._closer = asyncio.get_running_loop().create_task(
                self.ws.close(code=CLOSE_TOO_SLOW, message=b"too slow: reconnect and resume since your last seq")
            )

    def resume_limit(self) -> int:
        """The most bytes of missed events a resume sends; past it the client gets the last page."""
        return min(self.outbox_limit // 2, 4 * ROOM_BYTES)

    async def wait_room(self) -> None:
        """Until the outbox holds less than ``ROOM_BYTES`` (at once on a closing connection)."""
        while not self._room.is_set():
            await self._room.wait()

    # -- following -----------------------------------------------------------------------------

    def follow(self, self_id: str, taskdoc_path: str) -> None:
        self.followed[self_id] = taskdoc_path
        self.subscriber.following.add(self_id)

    def unfollow(self, self_id: str) -> None:
        self.followed.pop(self_id, None)
        self.subscriber.following.discard(self_id)

    # -- writing -------------------------------------------------------------------------------

    async def _write_forever(self) -> None:
        try:
            while True:
                await self._ready.wait()
                self._ready.clear()
                while self._outbox:
                    with _corked(self.ws, len(self._outbox)):
                        while self._outbox:
                            text = self._outbox.popleft()
                            self._outbox_bytes -= len(text)
                            if self._outbox_bytes <= ROOM_BYTES:
                                self._room.set()
                            await self.ws.send_str(text)
                self._drained.set()
        except (ConnectionError, RuntimeError):  # the peer went away; the reader side notices too
            self._closing = True
            self._room.set()
            self._drained.set()
        except Exception:  # anything else ends this client's writing, logged, never the daemon's
            log.exception("writing to a websocket failed")
            self._closing = True
            self._room.set()
            self._drained.set()

    async def flush(self, timeout: float = 2.0) -> None:
        """Wait until the outbox is sent (used before a deliberate close)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._drained.wait(), timeout)

    async def close(self) -> None:
        self._closing = True
        self._room.set()
        self.hub.engine.pubchan.unsubscribe(self.subscriber)
        self._writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._writer
        if self._closer is not None:  # the close of a too-slow client: awaited here, never left running
            with contextlib.suppress(Exception):
                await self._closer


@contextlib.contextmanager
def _corked(ws: web.WebSocketResponse, frames: int) -> Iterator[None]:
    """Send a burst of frames as few TCP segments: a group commit releases a turn's events at once, and
    each frame sent on its own paid the whole send path (the peer woken per frame); corked, the kernel
    sends them together when uncorked. A single frame goes as it is."""
    extra = getattr(ws, "get_extra_info", None)  # aiohttp ≥ 3.11; older ones send frame by frame
    sock = extra("socket") if frames > 1 and extra is not None and hasattr(socket, "TCP_CORK") else None
    if sock is None:
        yield
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)


class Hub:
    """All live connections of one app, the event encoder and the Taskdoc watcher."""

    def __init__(
        self,
        engine: Engine,
        *,
        taskdoc_poll_interval: float = 1.0,
        rest_sweep_interval: float = SWEEP_SECONDS,
        outbox_bytes: int = MAX_OUTBOX_BYTES,
    ) -> None:
        self.engine = engine
        self.outbox_bytes = outbox_bytes
        """A connection with more unsent bytes than this is closed with 4008."""
        self.encoder = EventEncoder()
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self.taskdoc_poll_interval = taskdoc_poll_interval
        self.taskdoc_fingerprints: dict[str, str] = {}
        """Taskdoc path → fingerprint last sent to clients."""
        self._watcher: asyncio.Task[None] | None = None
        self.resting = RestingTrees(engine, self.displayed)
        """Unloads the trees at rest no panel displays (resting.py)."""
        self.rest_sweep_interval = rest_sweep_interval
        self._sweeper: asyncio.Task[None] | None = None

    def displayed(self) -> set[str]:
        """selfIds of the dialogs some connection follows."""
        return {self_id for conn in self.connections for self_id in conn.followed}

    def add(self, conn: Connection) -> None:
        self.connections.add(conn)

    async def remove(self, conn: Connection) -> None:
        self.connections.discard(conn)
        await conn.close()

    def start(self, on_taskdoc_change: Callable[[Hub, str], None]) -> None:
        self._watcher = asyncio.create_task(self._watch_taskdocs(on_taskdoc_change), name="taskdoc-watcher")
        self._sweeper = asyncio.create_task(self.resting.run(self.rest_sweep_interval), name="resting-trees")

    async def stop(self) -> None:
        for task in (self._watcher, self._sweeper):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def close_all(
        self, code: int = WSCloseCode.GOING_AWAY, message: bytes = b"server shutdown"
    ) -> None:
        for conn in list(self.connections):
            await conn.flush(timeout=0.5)
            await conn.ws.close(code=code, message=message)

    async def _watch_taskdocs(self, on_change: Callable[[Hub, str], None]) -> None:
        """Poll the Taskdocs of followed dialogs: hand edits of ``*.tsk`` files refresh the panel live."""
        from dominds.taskdoc_discovery import taskdoc_fingerprint

        while True:
            await asyncio.sleep(self.taskdoc_poll_interval)
            watched = {path for conn in self.connections for path in conn.followed.values() if path}
            for path in watched:
                try:
                    fingerprint = taskdoc_fingerprint(self.engine.rtws.root, path)
                except Exception:  # a bad path must not stop the watcher
                    continue
                known = self.taskdoc_fingerprints.get(path)
                if known is None:
                    self.taskdoc_fingerprints[path] = fingerprint
                elif known != fingerprint:
                    self.taskdoc_fingerprints[path] = fingerprint
                    try:
                        on_change(self, path)
                    except Exception:  # one failed refresh must not stop the watcher
                        log.exception("announcing a change of %s failed", path)
