"""A started engine on a scripted workspace, served by ``make_app`` through aiohttp's test server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server_kit import TOKEN, Served, ServeFactory, write_workspace

from dominds.driver.engine import Engine
from dominds.server import make_app
from dominds.server.auth import AccessToken
from dominds.server.hub import MAX_OUTBOX_BYTES
from dominds.server.resting import SWEEP_SECONDS


@pytest.fixture
async def serve(tmp_path: Path, aiohttp_client: Any) -> AsyncIterator[ServeFactory]:
    started: list[Served] = []

    async def factory(
        responses: list[dict[str, Any]] | None = None,
        *,
        token: str | AccessToken | None = TOKEN,
        suggestions: list[str] | None = None,
        allowed_origins: tuple[str, ...] = (),
        rest_sweep_interval: float = SWEEP_SECONDS,
        outbox_bytes: int = MAX_OUTBOX_BYTES,
    ) -> Served:
        rtws = write_workspace(tmp_path / "ws", responses, suggestions)
        engine = Engine(rtws)
        await engine.start()
        app = make_app(
            engine,
            token=token,
            allowed_origins=allowed_origins,
            taskdoc_poll_interval=0.05,
            rest_sweep_interval=rest_sweep_interval,
            outbox_bytes=outbox_bytes,
        )
        client = await aiohttp_client(app)
        served = Served(engine, client, token.current() if isinstance(token, AccessToken) else token, [])
        started.append(served)
        return served

    yield factory
    for served in started:
        for sock in served.sockets:
            if not sock.ws.closed:
                await sock.close()
        await served.engine.close()
