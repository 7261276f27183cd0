"""Reading a dialog that is not in memory never holds the event loop.

Bug pinned here (issue 31): the first request for a dialog (``GET /api/dialogs/{id}``, the panel's
``display_dialog``, a message to it) read its files on the event loop. A 10,000-turn dialog's course
(11 MB) took 0.6 s, during which ``/api/health``, every websocket and every other dialog's stream
waited (``/api/health`` answered after 593 ms); a dialog of ``done/`` or ``archive/``, never kept in
memory, was read on the loop at every request. Its files are now read in a worker thread.

Held with a gate in the one method that reads a course: while a read waits there, the daemon's other
requests must be answered.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest
from server_kit import Served, ServeFactory

from dominds.driver import usage
from dominds.store.dialog_store import DialogFiles

T = TypeVar("T")


class Gate:
    """Holds every read of a course (in any thread, the event loop's included) until released."""

    def __init__(self, holds: Callable[[], bool] = lambda: True) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.reads = 0
        self.threads: list[str] = []
        self._holds = holds

    @contextmanager
    def installed(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
        real = DialogFiles.read_course

        def gated(files: DialogFiles, course: int) -> Any:
            self.reads += 1
            self.threads.append(threading.current_thread().name)
            if self._holds():
                self.entered.set()
                # on the event loop itself (the bug) this holds the loop, and the test fails
                self.release.wait(10)
            return real(files, course)

        monkeypatch.setattr(DialogFiles, "read_course", gated)
        try:
            yield self
        finally:
            self.release.set()
            monkeypatch.setattr(DialogFiles, "read_course", real)


async def _restarted(serve: ServeFactory, dialogs: int = 2) -> tuple[Served, list[str]]:
    """A daemon started on a workspace whose dialogs are at rest, so none of them is in memory."""
    first = await serve()
    made = []
    for _ in range(dialogs):
        status, body = await first.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
        assert status == 201, body
        made.append(body["rootId"])
    await first.engine.close()
    served = await serve()
    assert not set(made) & set(served.engine.roots), "a dialog at rest is not read at start"
    return served, made


async def _answered_while_held(served: Served, gate: Gate, other: str) -> None:
    """What must be answered while a read is held: a health check, a websocket, another dialog."""
    assert await asyncio.to_thread(gate.entered.wait, 10), "the dialog's course is read"
    health = await asyncio.wait_for(served.client.get("/api/health"), 5)
    assert health.status == 200
    sock = await asyncio.wait_for(served.ws(), 5)
    await sock.close()
    status, body = await asyncio.wait_for(served.get(f"/api/dialogs/{other}/hierarchy"), 5)
    assert status == 200, body


async def _held(served: Served, monkeypatch: pytest.MonkeyPatch, operation: Awaitable[T], other: str) -> tuple[T, Gate]:
    """``operation`` started with every read of a course held: while it waits, the daemon's other requests
    are answered (``_answered_while_held``); its result once the reads go on, and the gate."""
    with Gate().installed(monkeypatch) as gate:
        pending = asyncio.ensure_future(operation)
        await _answered_while_held(served, gate, other)
        assert not pending.done(), "all of that was answered while the read was still held"
        gate.release.set()
        return await pending, gate


async def test_other_requests_are_answered_while_a_dialog_is_read(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    served, (shown, other) = await _restarted(serve)
    (status, body), gate = await _held(served, monkeypatch, served.get(f"/api/dialogs/{shown}"), other)
    assert status == 200 and body["dialog"]["selfId"] == shown, body
    assert gate.reads == 1 and gate.threads[0] != threading.main_thread().name, gate.threads
    assert shown in served.engine.roots, "a tree of run/ is kept once read"
    with Gate().installed(monkeypatch) as again:
        assert (await served.get(f"/api/dialogs/{shown}"))[0] == 200
    assert again.reads == 0, "the next request reads nothing"


async def test_the_panel_opens_a_dialog_while_other_requests_are_answered(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    served, (shown, other) = await _restarted(serve)
    sock = await served.ws()
    display = {"type": "display_dialog", "dialog": {"selfId": shown, "rootId": shown}}
    ready, _ = await _held(served, monkeypatch, sock.request(display, "dialog_ready"), other)
    assert ready["dialog"]["selfId"] == shown


async def test_two_requests_for_one_dialog_share_one_read(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    served, (shown, _) = await _restarted(serve)
    with Gate().installed(monkeypatch) as gate:
        replies = [asyncio.ensure_future(served.get(f"/api/dialogs/{shown}")) for _ in range(3)]
        assert await asyncio.to_thread(gate.entered.wait, 10)
        gate.release.set()
        answers = await asyncio.gather(*replies)
    assert [status for status, _ in answers] == [200, 200, 200], answers
    assert gate.reads == 1, "one read for all three"


async def test_a_dialog_of_done_is_read_off_the_loop_at_every_request(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    served, (shown, other) = await _restarted(serve)
    status, body = await served.post("/api/dialogs/move", {"rootId": shown, "toStatus": "done"})
    assert status == 200, body
    for _ in range(2):
        (status, body), _ = await _held(served, monkeypatch, served.get(f"/api/dialogs/{shown}"), other)
        assert status == 200 and body["status"] == "done", body
    assert shown not in served.engine.roots, "a tree of done/ is not kept"


async def test_a_copy_the_loop_loaded_meanwhile_is_the_one_kept(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a worker thread reads a tree, the loop may need it at once (a drive, recovery) and load it
    itself; that copy may be written to before the read ends, so the one read in the thread is dropped."""
    served, (shown, _) = await _restarted(serve)
    with Gate(holds=lambda: threading.current_thread() is not threading.main_thread()).installed(monkeypatch) as gate:
        reply = asyncio.ensure_future(served.get(f"/api/dialogs/{shown}"))
        assert await asyncio.to_thread(gate.entered.wait, 10)
        loaded = served.engine.load_root(shown)  # on the loop, while the thread's read is held
        gate.release.set()
        status, body = await reply
    assert status == 200, body
    assert served.engine.roots[shown] is loaded


async def test_a_tree_forgotten_during_the_read_is_read_again(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loaded on the loop, written, and unloaded at rest while the thread still read the older files: the
    thread's copy would lack that write, so the tree is read again."""
    served, (shown, _) = await _restarted(serve)
    with Gate(holds=lambda: threading.current_thread() is not threading.main_thread()).installed(monkeypatch) as gate:
        reply = asyncio.ensure_future(served.get(f"/api/dialogs/{shown}"))
        assert await asyncio.to_thread(gate.entered.wait, 10)
        engine = served.engine
        engine.rename_dialog(engine.load_root(shown), "renamed meanwhile")
        assert engine.unload_if_at_rest(shown)
        gate.release.set()
        status, body = await reply
    assert status == 200 and body["title"] == "renamed meanwhile", body
    assert served.engine.roots[shown].latest.title == "renamed meanwhile"


async def test_a_subdialog_is_read_off_the_loop_too(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A teammate's subdialog runs as long as its caller: opening it by its id alone (a deep link) reads
    it, and finds its tree by a search of every tree's directory, off the loop."""
    first = await serve()
    status, made = await first.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = made["rootId"]
    assert (await first.post(f"/api/dialogs/{root_id}/messages", {"content": "delegate"}))[0] == 202
    await first.engine.wait_idle()
    [sub_id] = [d for d in first.engine.roots[root_id].local if d != root_id]
    status, other = await first.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    await first.engine.close()
    served = await serve()
    assert (await served.get(f"/api/dialogs/{root_id}"))[0] == 200  # its tree's root is in memory
    assert sub_id not in served.engine.roots[root_id].local
    (status, body), _ = await _held(served, monkeypatch, served.get(f"/api/dialogs/{sub_id}"), other["rootId"])
    assert status == 200 and body["isRoot"] is False and body["dialog"]["rootId"] == root_id, body
    assert served.engine.roots[root_id].local[sub_id].self_id == sub_id, "kept in its tree"
    assert served.engine.find_loaded(sub_id) is served.engine.roots[root_id].local[sub_id]


async def test_marking_a_tree_done_reads_it_off_the_loop(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Moving a tree out of ``run/`` settles each of its dialogs, so it reads them all first: 0.46 s
    of a 10,000-turn dialog on the event loop."""
    served, (moved, other) = await _restarted(serve)
    move = served.post("/api/dialogs/move", {"rootId": moved, "toStatus": "done"})
    (status, body), _ = await _held(served, monkeypatch, move, other)
    assert status == 200 and body["toStatus"] == "done", body
    assert served.engine.store.locate_root(moved) == "done" and moved not in served.engine.roots


async def test_reviving_a_tree_reads_it_off_the_loop_and_lists_its_question_again(
    serve: ServeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Moving a tree back from ``done/`` to ``run/`` read it whole on the event loop (0.3 s of a
    10,000-turn dialog). It is read in worker threads now, and the move is announced once the tree is
    in memory with its question to the person listed again and ready to be answered."""
    served, (revived, other) = await _restarted(serve)
    await served.post(f"/api/dialogs/{revived}/messages", {"content": "paint"})
    await served.engine.wait_idle()
    [question] = (await served.get("/api/q4h"))[1]["questions"]
    status, _ = await served.post("/api/dialogs/move", {"rootId": revived, "toStatus": "done"})
    assert status == 200 and (await served.get("/api/q4h"))[1]["questions"] == []
    moves = await served.ws()
    move = served.post("/api/dialogs/move", {"rootId": revived, "fromStatus": "done", "toStatus": "run"})
    (status, body), gate = await _held(served, monkeypatch, move, other)
    assert status == 200 and body["fromStatus"] == "done", body
    assert "MainThread" not in gate.threads, "no course read on the event loop"
    assert revived in served.engine.roots and served.engine.store.locate_root(revived) == "run"
    [again] = (await served.get("/api/q4h"))[1]["questions"]
    assert again["id"] == question["id"]
    announced = await moves.wait_for(lambda m: m.get("type") == "dialogs_moved" and m["toStatus"] == "run")
    assert announced["movedRootIds"] == [revived]
    await moves.close()
    status, _ = await served.post(f"/api/q4h/{question['id']}/answer", {"content": "blue"})
    assert status == 202
    await served.engine.wait_idle()


async def test_a_trees_usage_is_counted_off_the_loop(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """``GET /api/dialogs/{root}/usage`` counts the generations of every course of a tree it has not
    counted before: 100-280 ms of a 10,000-turn dialog's, on the event loop."""
    served, (counted, other) = await _restarted(serve)
    entered, release = threading.Event(), threading.Event()
    real = usage.count_finishes

    def gated(data: bytes, catalog: Any) -> Any:
        entered.set()
        release.wait(10)
        return real(data, catalog)

    monkeypatch.setattr(usage, "count_finishes", gated)
    try:
        reply = asyncio.ensure_future(served.get(f"/api/dialogs/{counted}/usage"))
        gate = Gate()
        gate.entered = entered
        await _answered_while_held(served, gate, other)
        assert not reply.done()
    finally:
        release.set()
    status, body = await reply
    assert status == 200 and body["rootId"] == counted and body["total"]["generations"] == 0, body


async def test_a_fork_reads_and_writes_off_the_loop(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork reads the original's course and writes its history, then reads it back: 1.3 s of a
    10,000-turn dialog on the event loop. Held: while the original's course is read for the fork
    (its tree already in memory), the daemon answers; the fork is then whole, with its first message."""
    first = await serve()
    status, made = await first.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = made["rootId"]
    assert (await first.post(f"/api/dialogs/{root_id}/messages", {"content": "hello"}))[0] == 202
    await first.engine.wait_idle()
    status, other = await first.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    await first.engine.close()
    served = await serve()
    assert (await served.get(f"/api/dialogs/{root_id}"))[0] == 200  # in memory: only the fork's own reads are held
    forking = served.post(f"/api/dialogs/{root_id}/fork", {"genseq": 1})
    (status, fork), _ = await _held(served, monkeypatch, forking, other["rootId"])
    assert status == 201 and fork["forkedFrom"]["rootId"] == root_id, fork
    assert fork["rootId"] in served.engine.roots
    await served.engine.wait_idle()
    status, shown = await served.get(f"/api/dialogs/{fork['rootId']}")
    assert status == 200 and [e["content"] for e in shown["events"] if e["type"] == "saying_finish_evt"] == [
        "Hello **there**! <script>alert(1)</script>"
    ], shown


CLEARING = [
    {"agent": "lead", "message": "go", "stream": [{"func_call": {"name": "clear_mind", "arguments": {}}}]},
    {"agent": "lead", "role": "tool", "contains": "new course", "response": "Clearing."},
    {"agent": "lead", "contains": "This is course #2", "response": "Fresh."},
]
"""A reply that starts a new course (``clear_mind``): the dialog then has an older course, on disk only."""


async def test_a_page_of_an_older_course_is_read_off_the_loop(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page of a course before the current one is cut from its file, read whole for each page (0.6 s
    for a 10,000-turn course), on the event loop: paging back through it held the daemon at every page."""
    served = await serve(CLEARING)
    status, made = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = made["rootId"]
    assert (await served.post(f"/api/dialogs/{root_id}/messages", {"content": "go"}))[0] == 202
    await served.engine.wait_idle()
    assert served.engine.roots[root_id].latest.current_course == 2
    status, other = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    sock = await served.ws()
    page = {"type": "display_course", "dialog": {"selfId": root_id, "rootId": root_id}, "course": 1}
    update, _ = await _held(served, monkeypatch, sock.request(page, "course_update"), other["rootId"])
    assert update["course"] == 1, update
    (status, body), _ = await _held(served, monkeypatch, served.get(f"/api/dialogs/{root_id}?course=1"), other["rootId"])
    assert status == 200 and body["course"] == 1 and body["events"], body


async def test_the_first_request_after_a_restart_reads_the_request_log_ahead(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dialog's first request after a restart read its whole request log (every line, each laid out over
    the one before: a long dialog's log is megabytes) on the event loop. A dialog read off the loop now
    reads its log there too, and its first request finds it read."""
    from dominds.store import request_log

    first = await serve()
    status, made = await first.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root_id = made["rootId"]
    assert (await first.post(f"/api/dialogs/{root_id}/messages", {"content": "hello"}))[0] == 202
    await first.engine.wait_idle()
    await first.engine.close()
    served = await serve()
    readers: list[str] = []
    real = request_log._read_or_empty

    def watched(path: Any) -> str:
        readers.append(threading.current_thread().name)
        return real(path)

    monkeypatch.setattr(request_log, "_read_or_empty", watched)
    assert (await served.get(f"/api/dialogs/{root_id}"))[0] == 200
    assert (await served.post(f"/api/dialogs/{root_id}/messages", {"content": "hello"}))[0] == 202
    await served.engine.wait_idle()
    assert len(served.engine.roots[root_id].files.course_numbers()) == 1
    assert readers and threading.main_thread().name not in readers, readers
    records = [json.loads(line) for line in (served.engine.roots[root_id].files.dir / "requests-001.jsonl").read_text().splitlines()]
    assert [r["genseq"] for r in records if r["type"] == "request"] == [1, 2]
