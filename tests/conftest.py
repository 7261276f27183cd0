"""Shared fixtures. No test may reach a real LLM: the guard below is autouse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dominds.rtws import Rtws

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_real_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Forbid real model requests, hide real API keys, and drop the scripted pace in every test."""
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DOMINDS_FORBID_REAL_LLM", "1")
    # Scripted databases (the demo's) stream at a watchable pace; tests take their replies at once.
    monkeypatch.setenv("DOMINDS_SCRIPTED_PACE", "0")
    yield


@pytest.fixture(autouse=True)
def _outgoing_messages_match_their_models(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every frame the daemon sends on /ws must match its model in dominds/events/ (issue 18: typed
    events; docs/protocol.md is generated from those models)."""
    from dominds.server import wire

    monkeypatch.setenv("DOMINDS_CHECK_EVENTS", "1")
    wire.VIOLATIONS.clear()
    yield
    problems, wire.VIOLATIONS[:] = list(wire.VIOLATIONS), []
    assert not problems, "the daemon sent messages that do not match dominds/events/:\n" + "\n".join(problems)


@pytest.fixture
def tmp_rtws(tmp_path: Path) -> Rtws:
    """An empty workspace with the dialog layout created."""
    rtws = Rtws(tmp_path / "ws")
    rtws.root.mkdir()
    rtws.minds_dir.mkdir()
    rtws.ensure_layout()
    return rtws
