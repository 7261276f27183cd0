"""A running engine on a temp workspace with a three-member team on the scripted provider."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from workspace_kit import write_workspace

from dominds.driver.engine import Engine
from dominds.rtws import Rtws

EngineFactory = Callable[[list[dict[str, Any]]], Any]


@pytest.fixture
async def make_engine(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    engines: list[Engine] = []

    async def factory(
        responses: list[dict[str, Any]], *, root: Path | None = None, resume: bool = True, fbr_effort: int | None = None
    ) -> Engine:
        ws = root or tmp_path / "ws"
        rtws = write_workspace(ws, responses) if not (ws / ".minds").exists() else Rtws(ws)
        if fbr_effort is not None:
            team = rtws.team_yaml.read_text()
            rtws.team_yaml.write_text(team.replace("fbr_effort: 2", f"fbr_effort: {fbr_effort}"))
        engine = Engine(rtws, resume=resume)
        await engine.start()
        engines.append(engine)
        return engine

    yield factory
    for engine in engines:
        await engine.close()
