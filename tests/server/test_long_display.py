"""Paged display of long dialogs over the websocket, and the outbox bounded in bytes.

The bug these pin: ``display_dialog`` queued the whole replay of a course at once, and past 20,000 frames
in the outbox the server closed the socket ("fell 20001 frames behind"); a dialog past ~1,660 turns could
not be displayed, and the reconnecting panel hit the same wall forever. A client that stopped reading was
closed only by frame count, however large the frames.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
from typing import Any

import pytest
from long_dialog import served_long_dialog
from server_kit import ServeFactory, WsClient

from dominds.server.replay import PAGE_BYTES

TURNS = 3000


async def _page(sock: WsClient, dialog: dict[str, Any], **where: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    head = await sock.request({"type": "display_course", "dialog": dialog, "course": 1, **where}, "course_update")
    events = [await sock.wait_for(lambda m: "seq" in m) for _ in range(head["eventCount"])]
    assert all(e.get("replay") for e in events)
    return head, events


@pytest.mark.slow
async def test_a_3000_turn_dialog_displays_to_its_beginning_without_a_close(serve: ServeFactory) -> None:
    served, dialog, call_ids = await served_long_dialog(serve, TURNS)
    sock = await served.ws()
    assert sock.seen("welcome")[0]["protocol"] == 2, "paged replays are protocol 2"
    ready = await sock.request({"type": "display_dialog", "dialog": dialog}, "dialog_ready", timeout=20)
    assert ready["mode"] == "replay"
    head = await sock.wait_type("course_update")
    assert head["toRecord"] == head["totalRecords"] > TURNS * 4, "the last page reaches the course's end"
    assert 0 < head["fromRecord"], "a long course opens at its last page, not the whole replay"
    assert head["eventCount"] == ready["eventCount"] - 1
    first_bytes = sum(len(str(m)) for m in sock.since_cursor())
    starts = [head["fromRecord"]]
    before = head["fromRecord"]
    genseqs: list[int] = []
    while before > 0:  # what the panel does as the reader scrolls up
        page, events = await _page(sock, dialog, before=before)
        assert page["toRecord"] == before and page["fromRecord"] < before
        genseqs = [e["genseq"] for e in events if e["type"] == "generating_start_evt"] + genseqs
        before = page["fromRecord"]
        starts.append(before)
    assert sock.closed_with is None and not sock.ws.closed, "a healthy connection is never closed"
    assert genseqs[0] == 1, "the beginning is reached"
    assert len(starts) > 5 and first_bytes < 3 * PAGE_BYTES, "paged, each page bounded"
    # a deep link to an old call: the page around it
    call = call_ids[3]
    around, events = await _page(sock, dialog, aroundCall=call)
    assert any(e["type"] == "func_call_requested_evt" and e["funcId"] == call for e in events)
    assert 0 <= around["fromRecord"] < around["toRecord"] < around["totalRecords"]
    later, _ = await _page(sock, dialog, after=around["toRecord"])
    assert later["fromRecord"] == around["toRecord"]


async def test_pages_tile_the_course_and_number_tellask_calls_as_the_whole_replay(serve: ServeFactory) -> None:
    """Pages cut anywhere: a page that starts inside a generation still numbers its saying segments (and
    so its tellask call ids) as the whole course's replay does."""
    served, dialog, _ = await served_long_dialog(serve, 40)
    sock = await served.ws()
    whole, whole_events = await _page(sock, dialog, after=0)
    # the whole course in one page at the default size: now in pages of one record's worth
    from dominds.server.replay import replay_page

    engine_dialog = served.engine.get_dialog(dialog["rootId"])
    paged: list[dict[str, Any]] = []
    start = 0
    while True:
        page = replay_page(engine_dialog, 1, epoch="e", seq=0, after=start, page_bytes=1)
        paged.extend(e for e in page.events if e["type"] != "course_update")
        if page.end >= page.total:
            break
        start = page.end
    strip = ("epoch", "seq", "requestId")
    assert [{k: v for k, v in e.items() if k not in strip} for e in paged] == [
        {k: v for k, v in e.items() if k not in strip} for e in whole_events
    ]
    assert whole["toRecord"] == whole["totalRecords"]


FLOOD = [
    {"agent": "lead", "contains": "flood", "response": "Read."},
    {"agent": "lead", "contains": "This is course #", "response": "Going on."},  # the context filled up
]


class RawSocket:
    """A websocket client on a socket whose receive buffer is small and fixed (8 KiB), so that a client
    that stops reading is felt by the server at once, not after the kernel buffered megabytes for it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.close_code: int | None = None

    @classmethod
    async def connect(cls, host: str, port: int, token: str) -> RawSocket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (host, port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 24)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Protocol: dominds, dominds-auth.{token}\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        return cls(reader, writer)

    def send(self, message: dict[str, Any]) -> None:
        payload = json.dumps(message).encode()
        mask = os.urandom(4)
        assert len(payload) < 65536
        header = bytes([0x81, 0x80 | 126]) + struct.pack("!H", len(payload)) + mask
        self.writer.write(header + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    async def receive(self) -> dict[str, Any] | None:
        """The next text message; None once the server closed (``close_code`` says how)."""
        while True:
            first, second = await self.reader.readexactly(2)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
            payload = await self.reader.readexactly(length)
            opcode = first & 0x0F
            if opcode == 0x8:
                self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                self.writer.close()
                return None
            if opcode == 0x1:
                message: dict[str, Any] = json.loads(payload)
                return message


@pytest.mark.slow
async def test_a_reader_that_stops_reading_is_closed_by_bytes_and_resumes_from_its_last_seq(
    serve: ServeFactory,
) -> None:
    """A client that stops reading is closed with 4008 once its unsent frames pass the byte bound (the
    bound was 20,000 frames, whatever their size), and a new socket resumes from the last seq it saw."""
    served = await serve(FLOOD, outbox_bytes=1024 * 1024)
    sender = await served.ws()
    ready = await sender.request(
        {"type": "create_dialog", "agentId": "lead", "taskDocPath": "tasks/t.tsk"}, "dialog_ready"
    )
    dialog = ready["dialog"]
    await sender.request({"type": "unfollow_dialog", "dialog": dialog}, "ack")  # it gets acks and broadcasts
    assert served.token is not None
    slow = await RawSocket.connect(str(served.client.server.host), int(served.client.server.port or 0), served.token)
    slow.send({"type": "display_dialog", "dialog": dialog, "follow": "replace", "requestId": "d"})
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1]["type"] != "dialog_ready":  # it follows the dialog; from here it reads nothing
        message = await slow.receive()
        assert message is not None
        seen.append(message)
    # each is published twice (queued, then read): ~10 MB for 12, more than the outbox and the kernel's
    # socket buffers hold
    big = "flood " + "y" * 400_000
    for _ in range(12):
        await sender.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": big}, "ack", timeout=30)
    await sender.wait_for(lambda m: m["type"] == "dlg_run_state_evt" and m["runState"]["kind"] == "idle", timeout=60)
    while (message := await asyncio.wait_for(slow.receive(), 30)) is not None:  # what it was sent, then the close
        seen.append(message)
    assert slow.close_code == 4008
    epoch = next(m["epoch"] for m in seen if m["type"] == "dialog_ready")
    mine = [m for m in seen if (m.get("dialog") or {}).get("selfId") == dialog["selfId"] and not m.get("replay")]
    last_seq = max(m["seq"] for m in mine if "seq" in m)
    # it resumes from its last seq: what it missed is more than a resume sends at once, so it gets the
    # course's last page (the events since are in the files), and the new socket is not closed
    resumed = await served.ws()
    again = await resumed.request(
        {"type": "display_dialog", "dialog": dialog, "since": {"epoch": epoch, "seq": last_seq}}, "dialog_ready"
    )
    assert again["mode"] == "replay" and again["seq"] > last_seq
    page = await resumed.wait_type("course_update")
    assert page["toRecord"] == page["totalRecords"]
    await resumed.request({"type": "get_problems"}, "problems_snapshot")
    # a reader a few events behind resumes exactly
    behind = await served.ws()
    exact = await behind.request(
        {"type": "display_dialog", "dialog": dialog, "since": {"epoch": epoch, "seq": again["seq"] - 3}}, "dialog_ready"
    )
    assert exact["mode"] == "resume" and exact["eventCount"] == 3
    assert [(await behind.wait_for(lambda m: "seq" in m))["seq"] for _ in range(3)] == [
        again["seq"] - 2,
        again["seq"] - 1,
        again["seq"],
    ]
