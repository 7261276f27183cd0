"""A temp workspace with a three-member team on the scripted provider, and a running engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from dominds.driver.engine import Engine
from dominds.rtws import Rtws

TEAM_YAML = """\
member_defaults:
  provider: scripted
  model: test
  diligence_push_max: 0
  fbr_effort: 2
default_responder: lead
members:
  lead: {name: Lead, gofor: [plans and delegates]}
  coder: {name: Coder, gofor: [writes code]}
  researcher: {name: Researcher, gofor: [finds facts]}
"""

LLM_YAML = """\
providers:
  scripted:
    name: Scripted
    apiType: scripted
    baseUrl: .minds/scripted
    apiKeyEnvVar: null
    models:
      test: {context_length: 200000, pricing: {input: 1.0, output: 2.0}}
"""


def write_workspace(root: Path, responses: list[dict[str, Any]]) -> Rtws:
    rtws = Rtws(root)
    (root / ".minds" / "scripted").mkdir(parents=True, exist_ok=True)
    rtws.team_yaml.write_text(TEAM_YAML)
    rtws.llm_yaml.write_text(LLM_YAML)
    set_responses(rtws, responses)
    (root / "tasks" / "t.tsk").mkdir(parents=True, exist_ok=True)
    (root / "tasks" / "t.tsk" / "goals.md").write_text("Ship the feature.\n")
    rtws.ensure_layout()
    return rtws


def set_responses(rtws: Rtws, responses: list[dict[str, Any]]) -> None:
    path = rtws.minds_dir / "scripted" / "test.yaml"
    path.write_text(yaml.safe_dump({"responses": responses}, allow_unicode=True, sort_keys=False))


EngineFactory = Callable[[list[dict[str, Any]]], Any]


@pytest.fixture
async def make_engine(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    engines: list[Engine] = []

    async def factory(responses: list[dict[str, Any]], *, root: Path | None = None, resume: bool = True) -> Engine:
        ws = root or tmp_path / "ws"
        rtws = write_workspace(ws, responses) if not (ws / ".minds").exists() else Rtws(ws)
        engine = Engine(rtws, resume=resume)
        await engine.start()
        engines.append(engine)
        return engine

    yield factory
    for engine in engines:
        await engine.close()
