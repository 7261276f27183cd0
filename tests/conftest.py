"""Shared fixtures. No test may reach a real LLM: the guard below is autouse."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dominds.rtws import Rtws

REPO_ROOT = Path(__file__).resolve().parent.parent


SLOW_MODULES = frozenset(
    {
        # real daemons killed and restarted many times, or sweeps over every durable step
        "tests/driver/test_crashpoints.py",
        "tests/driver/test_power_cut.py",
        "tests/driver/test_turn_crash_retry.py",
        "tests/driver/test_crash_recovery.py",
        "tests/driver/test_settled_restart.py",
        "tests/soak/test_soak.py",
        # the README's quick start on a fresh copy (a venv of its own)
        "tests/test_fresh_clone.py",
        # workflow runs through a real daemon restart
        "tests/workflows/tot/test_tot_wf_cli_restart.py",
        "tests/workflows/plan_solve/test_ps_restart.py",
        # a long stateful model of the driver (hypothesis), and in-process runs of every provider's SDK
        # against fake servers: 30 to 150 s each in the quick subset's durations
        "tests/driver/test_driver_model.py",
        "tests/server/test_generation_requests.py",
        "tests/server/test_reply_obligations_api.py",
        "tests/driver/test_provider_clients.py",
    }
)
"""Modules whose every test is a long functional run: marked ``slow`` here (one list, no marker line to
keep in each file); a single long test elsewhere carries ``@pytest.mark.slow`` itself. ``bin/test
--quick`` leaves them out (docs/testing.md)."""


PROCESS_DIRS = ("tests/cli/", "tests/mcp/", "tests/workflows/")
"""Tests that start real processes (``dominds`` commands and daemons, MCP servers, workflow runs through
a daemon): marked ``process``. ``bin/test --quick`` (the inner loop, ≤ 3 min) leaves them out; CI's other
Pythons (``bin/test-python``) run them (they are where an interpreter's difference shows)."""
PROCESS_MODULES = frozenset(
    {
        # modules elsewhere with tests that spawn processes (a daemon, a killed writer, a fresh interpreter)
        "tests/server/test_aiohttp_import.py",
        "tests/server/test_cost_one_figure.py",
        "tests/server/test_listing_imports.py",
        "tests/server/test_ws_fuzz.py",
        "tests/driver/test_extensions.py",
        "tests/driver/test_images.py",
        "tests/store/test_atomic_writes.py",
    }
)
BROWSER_DIRS = ("tests/server/browser/",)
"""Every test here drives real Chromium: marked ``browser`` by its place, so a module cannot forget its
``pytestmark`` (four did, and ran in the quick subset and on every other Python)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.relative_to(REPO_ROOT).as_posix()
        if path in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if path.startswith(PROCESS_DIRS) or path in PROCESS_MODULES:
            item.add_marker(pytest.mark.process)
        if path.startswith(BROWSER_DIRS):
            item.add_marker(pytest.mark.browser)


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


@pytest.fixture
async def stray_task_errors() -> AsyncIterator[list[dict[str, Any]]]:
    """What the event loop reports as unhandled during the test ("Task exception was never retrieved",
    "Future exception was never retrieved", a callback that raised): DESIGN §4.9, no task runs that
    nothing awaits, and a failure in one is logged and contained. Ask for it *first* among the fixtures:
    it is checked after the others were torn down (servers closed, engines drained), once a garbage
    collection has finalized the tasks that nothing holds any more."""
    loop = asyncio.get_running_loop()
    reports: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reports.append(context))
    try:
        yield reports
        gc.collect()
    finally:
        loop.set_exception_handler(previous)
    described = [f"{c.get('message')}: {c.get('exception')!r} ({c.get('task') or c.get('future') or ''})" for c in reports]
    assert not reports, "the event loop reported failures nothing handled:\n" + "\n".join(described)
