"""A client written from the seed alone: it connects to ``ws://<host>:<port>`` with no path (seed §1).

Bug pinned here: the standalone service answered only at ``/plan-solve/ws``, so the seed's own
connection string got a 404 on the handshake.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
from ps_kit import PsClient, world, write_workspace

from dominds.workflows.plan_solve.settings import PlanSolveSettings
from dominds.workflows.plan_solve.web import serve_standalone


async def test_the_standalone_service_answers_at_the_root_path_as_the_seed_says(tmp_path: Path) -> None:
    rtws = write_workspace(tmp_path / "ws", world([1]))
    stop = asyncio.Event()
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    server = asyncio.create_task(
        serve_standalone(rtws, "127.0.0.1", 0, PlanSolveSettings(workdir=tmp_path / "out"), ready.set_result, stop)
    )
    try:
        announced = await asyncio.wait_for(ready, 10)
        port = int(announced.split(":")[2].split("/")[0])
        seed_url = f"ws://127.0.0.1:{port}"
        assert announced == seed_url, "the address printed at start is the seed's own form"
        async with aiohttp.ClientSession() as http:
            for url in (seed_url, f"{seed_url}/", f"{seed_url}/plan-solve/ws"):
                async with http.ws_connect(url) as ws:
                    sock = PsClient(ws)
                    await sock.create_session()
                    await sock.ask()
                    assert (await sock.finish())[-1]["event"] == "agent.final_answer"
            async with http.get(f"http://127.0.0.1:{port}/") as plain:
                # a browser (no websocket upgrade) is told what the address is for, not a bare 400/404
                assert plain.status == 200
                assert "websocket" in (await plain.text()).lower()
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)
