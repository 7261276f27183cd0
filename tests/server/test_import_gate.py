"""While ``dominds serve`` imports the engine's modules, the front's requests go first (server/import_gate.py).

Bug pinned here: with the front answering while a worker thread imported the engine, an early dialog
list took 60-100 ms instead of 5 ms: the importing thread held the GIL in long stretches, and the
request's work waited for it at each of its file and SQLite calls. Now the importer waits at each of
its ``import`` statements while a request is answered, for at most ``MAX_HOLD_SECONDS``.
"""

from __future__ import annotations

import asyncio
import builtins
import sys
import time
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from dominds.server.import_gate import ImportGate


def _modules(tmp_path: Path, names: list[str]) -> None:
    for name in names:
        (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    sys.path.insert(0, str(tmp_path))


async def test_the_importer_waits_while_a_request_is_answered_and_others_never_do(tmp_path: Path) -> None:
    _modules(tmp_path, ["gate_first", "gate_other"])
    gate = ImportGate()
    gate.MAX_HOLD_SECONDS = 5.0  # long: the request's end must be what lets the importer go on
    imported: list[tuple[str, float]] = []
    in_request, end_request = asyncio.Event(), asyncio.Event()

    def importer() -> None:
        import gate_first  # noqa: F401

        imported.append(("first", time.monotonic()))

    async def handler(request: web.Request) -> web.StreamResponse:
        in_request.set()
        await end_request.wait()
        return web.Response(text="ok")

    original = builtins.__import__
    request = asyncio.ensure_future(gate.middleware(make_mocked_request("GET", "/api/dialogs"), handler))
    await in_request.wait()
    importing = asyncio.ensure_future(asyncio.to_thread(gate.importing(importer)))
    await asyncio.sleep(0.3)
    assert imported == [], "the import waits for the request (which began before the importer did)"

    other = await asyncio.to_thread(lambda: __import__("gate_other").VALUE)
    assert other == 1, "a thread that is not the importer never waits"

    ended = time.monotonic()
    end_request.set()
    await request
    await asyncio.wait_for(importing, 5)
    assert [name for name, _ in imported] == ["first"] and imported[0][1] >= ended
    assert builtins.__import__ is original, "restored once the importer is done"


async def _import_during_an_endless_request(gate: ImportGate, module: str) -> float:
    """Seconds the importer took to import ``module`` while a request the front answers never ended."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await asyncio.Event().wait()
        return web.Response()

    request = asyncio.ensure_future(gate.middleware(make_mocked_request("GET", "/api/dialogs"), handler))
    await asyncio.sleep(0)
    started = time.monotonic()
    try:
        await asyncio.wait_for(asyncio.to_thread(gate.importing(lambda: __import__(module) and None)), 5)
        return time.monotonic() - started
    finally:
        request.cancel()


async def test_a_request_holds_the_importer_back_for_a_bounded_time(tmp_path: Path) -> None:
    """A request that needs a module the importer is in the middle of would wait for the importer,
    and the importer for the request: the hold ends on its own."""
    _modules(tmp_path, ["gate_bounded"])
    gate = ImportGate()
    gate.MAX_HOLD_SECONDS = 0.2
    assert 0.1 <= await _import_during_an_endless_request(gate, "gate_bounded") < 2


async def test_once_the_start_is_over_requests_hold_nothing_back(tmp_path: Path) -> None:
    _modules(tmp_path, ["gate_after"])
    gate = ImportGate()
    gate.MAX_HOLD_SECONDS = 5.0
    gate.started()
    assert await _import_during_an_endless_request(gate, "gate_after") < 1
