"""A Plan & Solve service on a scripted temp workspace, reached through a real websocket."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from ps_kit import PsClient, write_workspace

from dominds.driver.engine import Engine
from dominds.workflows.plan_solve.settings import PlanSolveSettings
from dominds.workflows.plan_solve.web import WS_PATH, make_standalone_app


@dataclass
class Served:
    engine: Engine
    client: TestClient[Any, Any]
    root: Path

    async def connect(self) -> PsClient:
        return PsClient(await self.client.ws_connect(WS_PATH))

    async def session(self) -> PsClient:
        sock = await self.connect()
        await sock.create_session()
        return sock


ServeFactory = Callable[..., Awaitable[Served]]


@pytest.fixture
async def serve(tmp_path: Path, aiohttp_client: Any) -> AsyncIterator[ServeFactory]:
    started: list[Served] = []

    async def factory(responses: list[dict[str, Any]], **settings: Any) -> Served:
        root = tmp_path / ("ws" if not started else f"ws{len(started) + 1}")  # one workspace per service
        rtws = write_workspace(root, responses)
        engine = Engine(rtws)
        await engine.start()
        settings.setdefault("workdir", tmp_path / "out")
        settings.setdefault("step_timeout", 20.0)
        app = make_standalone_app(engine, PlanSolveSettings(**settings))
        served = Served(engine, await aiohttp_client(app), root)
        started.append(served)
        return served

    yield factory
    for served in started:  # the server first (it cancels live runs), then the engine under it
        await served.client.close()
        await served.engine.close()
