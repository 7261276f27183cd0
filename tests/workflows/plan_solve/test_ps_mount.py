"""The service mounted in `dominds serve` (token, Origin) and standalone (`dominds plan-solve serve`)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
from ps_kit import PsClient, world, write_workspace

from dominds.driver.engine import Engine
from dominds.server import make_app
from dominds.workflows.plan_solve.settings import PlanSolveSettings
from dominds.workflows.plan_solve.web import WS_PATH, add_routes, serve_standalone

TOKEN = "secret-token-1"


async def test_mounted_in_the_daemon_app_it_needs_the_daemon_token(
    tmp_path: Path, aiohttp_client: Any
) -> None:
    engine = Engine(write_workspace(tmp_path / "ws", world([1])))
    await engine.start()
    try:
        app = make_app(engine, token=TOKEN)
        add_routes(app, PlanSolveSettings(workdir=tmp_path / "out"))
        client = await aiohttp_client(app)
        refused = await client.ws_connect(WS_PATH)
        assert (await refused.receive()).type == aiohttp.WSMsgType.CLOSE and refused.close_code == 4401
        try:
            await client.ws_connect(WS_PATH, headers={"Origin": "https://evil.example"})
            raise AssertionError("a foreign origin must be refused")
        except aiohttp.WSServerHandshakeError as exc:
            assert exc.status == 403
        sock = PsClient(await client.ws_connect(WS_PATH, headers={"Authorization": f"Bearer {TOKEN}"}))
        await sock.create_session()
        await sock.ask()
        assert (await sock.finish())[-1]["event"] == "agent.final_answer"
        await sock.ws.close()
        await client.close()
    finally:
        await engine.close()


async def test_standalone_service_serves_a_run_until_stopped(tmp_path: Path) -> None:
    rtws = write_workspace(tmp_path / "ws", world([1, 2]))
    stop = asyncio.Event()
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    server = asyncio.create_task(
        serve_standalone(
            rtws, "127.0.0.1", 0, PlanSolveSettings(workdir=tmp_path / "out"), ready.set_result, stop
        )
    )
    url = await asyncio.wait_for(ready, 10)
    assert re.fullmatch(r"ws://127\.0\.0\.1:\d+", url)
    async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
        sock = PsClient(ws)
        await sock.create_session()
        await sock.ask()
        assert (await sock.finish())[-1]["event"] == "agent.final_answer"
    stop.set()
    await asyncio.wait_for(server, 10)
    assert len(list((tmp_path / "out" / "ppt").glob("*/presentation.pptx"))) == 1


def test_cli_serve_and_client_run_the_example_offline(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the offline example workspace goes under tmp_path
    command = [sys.executable, "-m", "dominds", "plan-solve"]
    server = subprocess.Popen(
        [*command, "example", "data2ppt", "--serve", "--port", "0", "--workdir", str(tmp_path / "out")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        port = re.search(r"ws://127\.0\.0\.1:(\d+) \(also ws://127\.0\.0\.1:\d+/plan-solve/ws", line)
        assert port, line + (server.stderr.read() if server.stderr else "")
        client = subprocess.run(
            [*command, "client", "--port", port.group(1), "--auto-confirm-plan"],  # the demo question, by default
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert client.returncode == 0, client.stderr
        events = [json.loads(line) for line in client.stdout.splitlines()]
        names = [e["event"] for e in events]
        assert "agent.user_confirm" in names and names[-1] == "agent.final_answer"
        confirm = events[names.index("agent.user_confirm")]
        assert confirm["metadata"]["timeout_seconds"] == 600, "the example service waits 600 s"
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert len(list((tmp_path / "out" / "ppt").glob("*/presentation.pptx"))) == 1


async def test_the_standalone_page_api_checks_the_token_itself_and_serves_only_decks(
    tmp_path: Path, aiohttp_client: Any
) -> None:
    """The standalone app has no daemon guard: its /api/plan-solve routes must not be open with a token set."""
    from dominds.workflows.plan_solve.web import make_standalone_app

    engine = Engine(write_workspace(tmp_path / "ws", world([1])))
    await engine.start()
    try:
        client = await aiohttp_client(make_standalone_app(engine, PlanSolveSettings(workdir=tmp_path / "out", token=TOKEN)))
        assert (await client.get("/api/plan-solve/runs")).status == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert (await client.get("/plan-solve")).status == 200, "the page itself is static"
        sock = PsClient(await client.ws_connect(WS_PATH, headers=auth))
        await sock.create_session()
        await sock.ask("One slide")
        events = await sock.finish()
        run_id = events[0]["metadata"]["dialog_id"]
        listed = await (await client.get("/api/plan-solve/runs", headers=auth)).json()
        assert [r["run_id"] for r in listed["runs"]] == [run_id] and listed["runs"][0]["status"] == "completed"
        deck = await client.get(f"/api/plan-solve/runs/{run_id}/deck.pptx", headers=auth)
        assert deck.status == 200 and (await deck.read())[:2] == b"PK"
        for bad in ("nope", "..%2F..%2Fetc", run_id + "x"):
            assert (await client.get(f"/api/plan-solve/runs/{bad}/deck.pptx", headers=auth)).status == 404
        assert (await client.get(f"/api/plan-solve/runs/{run_id}/deck.exe", headers=auth)).status == 404
        # a run record edited to point elsewhere does not turn the endpoint into a file server
        record_file = engine.get_dialog(run_id).files.dir / "plan-solve-run.json"
        record = json.loads(record_file.read_text())
        record["deck"]["pptx"] = str(tmp_path / "ws" / ".minds" / "llm.yaml")
        record_file.write_text(json.dumps(record))
        assert (await client.get(f"/api/plan-solve/runs/{run_id}/deck.pptx", headers=auth)).status == 404
    finally:
        await engine.close()
