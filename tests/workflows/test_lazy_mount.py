"""The workflows' routes in the daemon's app are mounted lazily (workflows/mount.py).

Bug pinned here: ``dominds serve`` imported the ToT, Debate and Plan & Solve web modules (with their
orchestrators, prompts and models) before its port opened, a fifth of the start-up. Now each is loaded
on the first request under one of its prefixes, and the routes answer exactly as when mounted eagerly:
pages, static files, JSON API, 404 and 405 answers, shutdown.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import make_app
from dominds.workflows.mount import WORKFLOW_ROUTES, route_adders, workflow_extensions

TOKEN = "lazy-mount-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

LOADED_ON_FIRST_USE = """
import asyncio, json, sys
from pathlib import Path
from aiohttp.test_utils import TestClient, TestServer
from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import make_app
from dominds.workflows.mount import WORKFLOW_ROUTES, route_adders, workflow_extensions

async def main():
    engine = Engine(Rtws(Path(sys.argv[1])), extensions=workflow_extensions())
    await engine.start()
    loaded = lambda: [m for m, _ in WORKFLOW_ROUTES if m in sys.modules]
    seen = {}
    async with TestClient(TestServer(make_app(engine, token="t" * 20, extra_routes=route_adders()))) as client:
        seen["at start"] = loaded()
        seen["/tot"] = (await client.get("/tot")).status
        seen["after /tot"] = loaded()
    await engine.close()
    print(json.dumps(seen))

asyncio.run(main())
"""


def test_no_workflow_web_module_is_imported_before_its_first_request(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    run = subprocess.run(
        [sys.executable, "-c", LOADED_ON_FIRST_USE, str(tmp_path / "ws")], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen == {"at start": [], "/tot": 200, "after /tot": ["dominds.workflows.tot.web"]}


async def _client(tmp_path: Path, aiohttp_client: Any) -> tuple[TestClient[Any, Any], Engine]:
    (tmp_path / "ws").mkdir()
    engine = Engine(Rtws(tmp_path / "ws"), extensions=workflow_extensions())
    await engine.start()
    return await aiohttp_client(make_app(engine, token=TOKEN, extra_routes=route_adders())), engine


async def test_lazily_mounted_routes_answer_as_before(tmp_path: Path, aiohttp_client: Any) -> None:
    client, engine = await _client(tmp_path, aiohttp_client)
    try:
        # the first requests of three workflows at once: each module is loaded once, every request answered
        pages = await asyncio.gather(*(client.get(path) for path in ("/tot", "/debate", "/plan-solve", "/tot", "/debate")))
        assert [p.status for p in pages] == [200] * 5
        assert "text/html" in pages[0].headers["Content-Type"]
        static = await client.get("/debate/static/debate.js")
        assert static.status == 200 and "javascript" in static.headers["Content-Type"]

        runs = await client.get("/api/tot/runs", headers=AUTH)
        assert runs.status == 200 and "runs" in await runs.json()
        assert (await client.get("/api/tot/runs")).status == 401, "the daemon's guard still stands in front"
        assert (await client.get("/api/plan-solve/runs", headers=AUTH)).status == 200

        wrong_method = await client.delete("/api/tot/runs", headers=AUTH)
        assert wrong_method.status == 405 and "error" in await wrong_method.json()
        unknown = await client.get("/api/tot/nothing/here", headers=AUTH)
        assert unknown.status == 404 and "error" in await unknown.json()
        assert (await client.get("/totally-else")).status == 404, "a prefix is a whole path segment"
        assert (await client.get("/api/health")).status == 200, "the daemon's own routes are untouched"
    finally:
        await engine.close()


def test_every_prefix_belongs_to_one_workflow() -> None:
    prefixes = [prefix for _module, owned in WORKFLOW_ROUTES for prefix in owned]
    assert len(prefixes) == len(set(prefixes))
    assert not any(a != b and b.startswith(a + "/") for a in prefixes for b in prefixes)
