"""The daemon's port while it starts: the front application answers what needs no engine, the rest waits.

Bug pinned here: ``dominds serve`` answered nothing until the engine's modules were imported and the
engine had started (0.46-0.48 s on the development machine, twice the ``import aiohttp.web`` floor),
though a dialog list needs neither: a panel reconnecting to a restarted daemon waited for all of it.
Now the front answers ``GET /api/dialogs`` from the files while the engine starts, when that list is the
one the started daemon would give (no tree of ``run/`` may need recovery, the kept prices are those in
force); every other request waits for the engine and gets the full API's answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from server_kit import TOKEN, write_workspace
from workspace_kit import write_idle_root

from dominds.driver.engine import Engine
from dominds.ids import now_iso
from dominds.rtws import Rtws
from dominds.server.listen import bind_listeners, listening_port
from dominds.server.run import RouteAdder, serve_daemon
from dominds.store.dialog_store import DialogStore
from dominds.store.records import RunState

AUTH = {"Authorization": f"Bearer {TOKEN}"}
PENDING_SECONDS = 0.4
"""How long a request is watched to see that it waits (it would be answered in milliseconds)."""


def _workspace(root: Path, dialogs: int = 2) -> tuple[Rtws, list[str]]:
    """A workspace with dialogs at rest, whose last daemon loaded its configuration (so kept its prices)."""
    rtws = write_workspace(root)
    store = DialogStore(rtws)
    ids = [write_idle_root(store, task_doc_path="tasks/t.tsk") for _ in range(dialogs)]
    engine = Engine(rtws, resume=False, take_lock=False)
    try:
        engine.config.get()
    finally:
        engine.index.close()
    return rtws, ids


@dataclass
class Starting:
    """A daemon served by ``serve_daemon`` whose engine starts only when ``release`` is set."""

    port: int
    release: asyncio.Event
    started: asyncio.Event
    http: aiohttp.ClientSession

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def get_json(self, path: str) -> tuple[int, Any]:
        async with self.http.get(self.url(path), headers=AUTH) as response:
            return response.status, await response.json(content_type=None)


@asynccontextmanager
async def starting(rtws: Rtws, fail: BaseException | None = None) -> AsyncIterator[Starting]:
    sockets = bind_listeners("127.0.0.1", 0)
    release, started, stop = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def start() -> tuple[Engine, list[RouteAdder]]:
        await release.wait()
        if fail is not None:
            raise fail
        engine = Engine(rtws, resume=False)
        await engine.start()
        started.set()
        return engine, []

    server = asyncio.create_task(
        serve_daemon(start, rtws, "127.0.0.1", 0, token=TOKEN, on_ready=lambda url: None, stop=stop, handle_signals=False, sockets=sockets)
    )
    http = aiohttp.ClientSession()
    try:
        yield Starting(listening_port(sockets), release, started, http)
    finally:
        await http.close()
        release.set()
        stop.set()
        if fail is None:
            await asyncio.wait_for(server, 10)
        else:
            with pytest.raises(type(fail)):
                await asyncio.wait_for(server, 10)


async def _waits(request: Awaitable[Any]) -> asyncio.Task[Any]:
    """``request`` started, and still unanswered a while later (the task, to be awaited later)."""
    task = asyncio.ensure_future(request)
    done, _ = await asyncio.wait([task], timeout=PENDING_SECONDS)
    assert not done, f"answered before the engine started: {task.result() if not task.exception() else task.exception()!r}"
    return task


def _listed(body: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(body["dialogs"], key=lambda tree: tree["rootId"])


async def test_the_dialog_list_is_answered_before_the_engine_starts_and_is_the_one_it_then_gives(tmp_path: Path) -> None:
    rtws, ids = _workspace(tmp_path / "ws")
    async with starting(rtws) as daemon:
        status, health = await daemon.get_json("/api/health")
        assert status == 200 and health["ready"] is True
        status, early = await daemon.get_json("/api/dialogs")
        assert status == 200 and sorted(tree["rootId"] for tree in early["dialogs"]) == sorted(ids)
        status, first = await daemon.get_json("/api/dialogs?limit=1")
        assert status == 200 and len(first["dialogs"]) == 1 and first["more"] == 1
        status, refused = await daemon.get_json("/api/dialogs?status=nope")
        assert status == 400 and "nope" in refused["error"], "the front answers bad input like the API"
        async with daemon.http.get(daemon.url("/api/dialogs")) as anonymous:
            assert anonymous.status == 401, "the front's listing needs the token too"
        assert not daemon.started.is_set()

        daemon.release.set()
        await asyncio.wait_for(daemon.started.wait(), 10)
        status, later = await daemon.get_json("/api/dialogs")
        assert status == 200 and _listed(later) == _listed(early), "the early list is the one the engine gives"


async def test_requests_for_the_api_wait_for_the_engine_and_get_its_answers(tmp_path: Path) -> None:
    rtws, ids = _workspace(tmp_path / "ws", dialogs=1)
    async with starting(rtws) as daemon:

        async def create() -> tuple[int, Any]:
            body = {"agentId": "lead", "taskDocPath": "tasks/t.tsk"}
            async with daemon.http.post(daemon.url("/api/dialogs"), headers=AUTH, json=body) as response:
                return response.status, await response.json()

        async def hello() -> Any:
            protocols = ("dominds", f"dominds-auth.{TOKEN}")
            async with daemon.http.ws_connect(daemon.url("/ws"), protocols=protocols) as ws:
                return (await ws.receive_json(timeout=10))["type"]

        created = await _waits(create())
        greeted = await _waits(hello())
        shown = await _waits(daemon.get_json(f"/api/dialogs/{ids[0]}"))
        async with daemon.http.get(daemon.url("/")) as page:
            assert page.status == 200 and "<html" in (await page.text()).lower(), "the panel's page needs no engine"
        daemon.release.set()
        status, dialog = await asyncio.wait_for(created, 10)
        assert status == 201 and dialog["agentId"] == "lead"
        assert await asyncio.wait_for(greeted, 10) == "welcome"
        status, body = await asyncio.wait_for(shown, 10)
        assert status == 200 and body["dialog"]["selfId"] == ids[0]
        status, missing = await daemon.get_json("/api/no-such-thing")
        assert status == 404 and "error" in missing, "an unknown path is still answered as JSON"


async def test_the_dialog_list_waits_for_recovery_when_a_tree_was_mid_flight(tmp_path: Path) -> None:
    """A tree a killed daemon left generating is reconciled at start: listed before, it would show a
    generation that recovery is about to close as interrupted."""
    rtws, ids = _workspace(tmp_path / "ws")
    files = DialogStore(rtws).files("run", ids[0], ids[0])
    latest = files.read_latest()
    files.write_latest(latest.model_copy(update={"generating": True, "run_state": RunState(kind="proceeding"), "last_modified": now_iso()}))
    async with starting(rtws) as daemon:
        listing = await _waits(daemon.get_json("/api/dialogs"))
        daemon.release.set()
        status, body = await asyncio.wait_for(listing, 10)
    assert status == 200
    states = {tree["rootId"]: tree["runState"] for tree in body["dialogs"]}
    assert states[ids[0]]["kind"] == "interrupted", "listed as recovery left it"


@pytest.mark.parametrize("change", ["prices edited", "sheet torn", "sheet missing"])
async def test_the_dialog_list_waits_for_the_configuration_unless_the_kept_prices_are_in_force(tmp_path: Path, change: str) -> None:
    rtws, ids = _workspace(tmp_path / "ws")
    sheet = rtws.cache_dir / "prices.json"
    if change == "prices edited":
        rtws.llm_yaml.write_text(rtws.llm_yaml.read_text().replace("input: 1.0", "input: 3.0"))
    elif change == "sheet torn":
        sheet.write_text(sheet.read_text()[:40])
    else:
        sheet.unlink()
    async with starting(rtws) as daemon:
        listing = await _waits(daemon.get_json("/api/dialogs"))
        daemon.release.set()
        status, body = await asyncio.wait_for(listing, 10)
        assert status == 200 and len(body["dialogs"]) == 2
    assert json.loads(sheet.read_text())["version"] == 1, "the started daemon keeps the prices again"


async def test_a_start_that_fails_answers_the_requests_waiting_for_it(tmp_path: Path) -> None:
    rtws, _ = _workspace(tmp_path / "ws", dialogs=1)
    async with starting(rtws, fail=RuntimeError("the engine did not start")) as daemon:
        waiting = await _waits(daemon.http.post(daemon.url("/api/dialogs"), headers=AUTH, json={"taskDocPath": "tasks/t.tsk"}))
        daemon.release.set()
        response = await asyncio.wait_for(waiting, 10)
        assert response.status == 503, "a clear refusal, not a connection left hanging"
        assert "did not start" in (await response.json())["error"]


def test_the_front_loads_no_engine_records_configuration_or_yaml() -> None:
    """What ``dominds serve`` imports before it answers: the engine, pydantic, the catalog and YAML would
    put 0.2 s back in front of the first listing."""
    import subprocess
    import sys

    code = (
        "import sys, dominds.server.run, dominds.server.import_gate\n"
        "heavy = ('pydantic', 'yaml', 'dominds.driver.engine', 'dominds.store.records', 'dominds.llm.catalog', 'dominds.dialog')\n"
        "print([m for m in sys.modules if m.split('.')[0] in heavy or m in heavy])\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout.strip() == "[]", run.stdout


