"""``GET /api/dialogs`` never holds the event loop, and lists what the files say right after hand edits.

Bug pinned here (issue 21): the listing checked every dialog against its files on the event loop; at
100,000 dialogs that took 4.7 s during which no other request, websocket message or stream was served.
It now runs in a worker thread on its own index connection. Here the listing is held inside its
reading of a dialog (a gate in the one function that reads dialog files) while the panel's other
requests — a health check, a new websocket, another REST call — must all be answered.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from server_kit import COST_RESPONSES, ServeFactory

from dominds.server import listing
from dominds.server.memory import give_back_memory
from dominds.store import index_refresh


async def _rows(served: Any) -> dict[str, Any]:
    response = await served.client.get("/api/dialogs", headers=served.auth())
    assert response.status == 200, await response.text()
    return {row["selfId"]: row for row in (await response.json())["dialogs"]}


def _edit_in_place(latest: Path) -> None:
    """A hand edit in place, same size and same mtime (within one clock tick): only the bytes tell."""
    before = os.stat(latest)
    text = latest.read_text()
    edited = text.replace('kind: "idle"', 'kind: "dead"')
    assert len(edited) == len(text) and edited != text
    with open(latest, "r+", encoding="utf-8") as handle:
        handle.write(edited)
    os.utime(latest, ns=(before.st_atime_ns, before.st_mtime_ns))


async def _listed_then_edited(serve: ServeFactory, dialogs: int) -> tuple[Any, list[str]]:
    """A daemon with ``dialogs`` roots, listed once (in the index), the first then edited by hand."""
    served = await serve(COST_RESPONSES)
    roots = []
    for _ in range(dialogs):
        response = await served.client.post("/api/dialogs", json={"taskDocPath": "tasks/t.tsk"}, headers=served.auth())
        roots.append((await response.json())["rootId"])
    assert set(await _rows(served)) == set(roots)
    _edit_in_place(served.engine.rtws.run_dir / roots[0] / "latest.yaml")
    return served, roots


def _gate_dialog_reads(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """(entered, release): every read of a dialog's files by the index waits for ``release``."""
    entered, release = threading.Event(), threading.Event()
    real = index_refresh.read_dialog

    def gated(directory: str, *args: Any) -> Any:
        entered.set()
        release.wait(10)  # without a worker thread this holds the event loop itself, and the test fails
        return real(directory, *args)

    monkeypatch.setattr(index_refresh, "read_dialog", gated)
    return entered, release


async def test_other_requests_are_answered_while_a_listing_reads_files(serve: ServeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    served, roots = await _listed_then_edited(serve, 3)
    entered, release = _gate_dialog_reads(monkeypatch)
    listing = asyncio.ensure_future(_rows(served))
    try:
        assert await asyncio.to_thread(entered.wait, 10), "the listing reads the edited dialog again"
        health = await asyncio.wait_for(served.client.get("/api/health"), 5)
        assert health.status == 200
        sock = await asyncio.wait_for(served.ws(), 5)  # welcome and problems snapshot arrive
        status, tree = await asyncio.wait_for(served.get(f"/api/dialogs/{roots[1]}/hierarchy"), 5)
        assert status == 200, tree
        assert not listing.done(), "all of that was answered while the listing was still reading"
        await sock.close()
    finally:
        release.set()
    rows = await listing
    assert set(rows) == set(roots)
    assert rows[roots[0]]["runState"] == {"kind": "dead"}, "the listing shows the hand edit"
    monkeypatch.undo()
    assert await _rows(served) == rows, "and so does the next one"


async def test_a_big_listing_gives_back_the_memory_it_freed_once_done_on_its_own_thread(
    serve: ServeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug pinned here (issue 21): after the first listing of 100,000 dialogs the daemon stayed ~10 MiB
    bigger (65.4 → 76.3 MiB): the listing's short-lived objects were freed, but free lists kept
    pymalloc arenas in use and glibc kept the freed pages. A listing of more than
    ``BIG_WORK_TREES`` trees now ends with a full collection and ``malloc_trim``, once its body is
    complete and on the listing thread (a full collection must not stall the event loop)."""
    served = await serve()
    for _ in range(3):
        await served.client.post("/api/dialogs", json={"taskDocPath": "tasks/t.tsk"}, headers=served.auth())
    calls: list[str] = []

    def give_back() -> None:
        calls.append(threading.current_thread().name)
        give_back_memory()

    monkeypatch.setattr(listing, "give_back_memory", give_back)
    monkeypatch.setattr(listing, "BIG_WORK_TREES", 3)
    assert len(await _rows(served)) == 3 and calls == []  # not a big one
    monkeypatch.setattr(listing, "BIG_WORK_TREES", 2)
    assert len(await _rows(served)) == 3
    assert len(calls) == 1 and calls[0].startswith("dominds-listing")


async def test_a_trees_hierarchy_is_checked_against_its_files_off_the_loop(
    serve: ServeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug pinned here (issue 31): ``GET /api/dialogs/{root}/hierarchy`` checked its tree against the
    files on the event loop, and read again a dialog that changed: 0.15-0.3 s of a 5,000-turn dialog's
    course (its generations are counted for the cost), during which nothing else was served. It runs in
    a worker thread now (not the listing thread, where it would wait behind a listing), on an index
    connection of its own."""
    served, roots = await _listed_then_edited(serve, 2)
    entered, release = _gate_dialog_reads(monkeypatch)
    tree = asyncio.ensure_future(served.get(f"/api/dialogs/{roots[0]}/hierarchy"))
    try:
        assert await asyncio.to_thread(entered.wait, 10), "the edited dialog is read again"
        health = await asyncio.wait_for(served.client.get("/api/health"), 5)
        assert health.status == 200
        sock = await asyncio.wait_for(served.ws(), 5)
        await sock.close()
        assert not tree.done()
    finally:
        release.set()
    status, body = await tree
    assert status == 200 and body["hierarchy"]["runState"] == {"kind": "dead"}, body
    monkeypatch.undo()
    status, missing = await served.get("/api/dialogs/0mx00000000-zzzz/hierarchy")
    assert status == 404, missing
