"""Plan & Solve runs outlive the daemon: a real `dominds serve` process is killed, stopped and restarted.

The bug: the page's run list came from the service's memory (``service.run_ids``), so after a restart
it was empty although every run's ``plan-solve-run.json`` was on disk; an open page never reconnected
("Reload the page to reconnect"); and a run cut by a kill kept
``status: running`` in its record forever (the list, the API and the page said "running"). A daemon
stopped mid-run recorded ``cancelled``, though nobody cancelled it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from chromium import CHROMIUM, CHROMIUM_PRESENT, launched_chromium
from cli.test_cli_kit import Daemon, cli_env
from ps_kit import PsClient, plan_json, planner, solver, write_workspace

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM_PRESENT, reason=f"{CHROMIUM} is not installed")]

RESPONSES = [
    planner(plan_json([1]), contains="Quick deck"),
    planner(plan_json([1]), contains="Slow deck", seconds=300),  # still planning when the daemon goes
    solver(1),
]


async def runs(daemon: Daemon) -> list[tuple[str, str]]:
    async with aiohttp.ClientSession(headers=daemon.headers()) as http:
        async with http.get(f"{daemon.http}/api/plan-solve/runs") as answer:
            assert answer.status == 200
            return [(r["run_id"], r["status"]) for r in (await answer.json())["runs"]]


def record_status(ws: Path, run_id: str) -> str:
    return str(json.loads((ws / ".dialogs" / "run" / run_id / "plan-solve-run.json").read_text())["status"])


async def test_past_runs_are_listed_after_a_kill_and_a_stop_and_cut_runs_read_interrupted(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, RESPONSES)
    async with launched_chromium() as browser:
        page = await browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        first = Daemon(ws)
        try:
            await page.add_init_script(
                f"sessionStorage.setItem('dominds.authKey', '{first.token}'); localStorage.setItem('dominds.uiLanguage', 'en')"
            )
            async with aiohttp.ClientSession() as http:
                done = await _run(http, first, "Quick deck", finish=True)
                cut = await _run(http, first, "Slow deck", finish=False)  # the socket stays open: the run goes on
                assert await runs(first) == [(cut, "running"), (done, "completed")]
                await page.goto(f"{first.http}/plan-solve")  # a page open on the daemon
                items = page.locator("#runs li")
                await items.first.wait_for(timeout=15_000)
                assert "running" in await items.nth(0).inner_text()
                first.stop(signal.SIGKILL)
        finally:
            first.stop(signal.SIGKILL)
        assert record_status(ws, cut) == "running", "a kill leaves the record as it was"
        await page.wait_for_selector("#conn[data-state=closed]")

        second = Daemon(ws, "--port", str(first.port))
        try:
            assert await runs(second) == [(cut, "interrupted"), (done, "completed")]
            async with aiohttp.ClientSession(headers=second.headers()) as http:
                async with http.get(f"{second.http}/api/plan-solve/runs/{cut}") as answer:
                    assert answer.status == 200 and (await answer.json())["status"] == "interrupted"
            # the open page reconnects by itself and lists the cut run as interrupted, not running
            await page.wait_for_selector("#conn[data-state=open]", timeout=20_000)
            await page.wait_for_function("document.querySelector('#runs li').textContent.includes('interrupted')")
            assert await items.count() == 2 and "Slow deck" in await items.nth(0).inner_text()
            assert "completed" in await items.nth(1).inner_text()
            assert errors == []
            # a daemon stopped mid-run of `dominds plan-solve client`: the run it stops is interrupted, and
            # the client says so (it used to exit 1 without a word)
            stopped, code, err = _client_run_cut_by_a_stop(second)
            assert code == 1 and "closed the connection before the run ended: the run is interrupted" in err
        finally:
            second.stop(signal.SIGKILL)
    assert record_status(ws, stopped) == "interrupted"
    with Daemon(ws) as third:
        assert await runs(third) == [(stopped, "interrupted"), (cut, "interrupted"), (done, "completed")]
    OPEN.clear()


OPEN: list[PsClient] = []
"""Sockets of runs left going (a socket closed, even by the garbage collector, cancels its runs)."""


async def _run(http: aiohttp.ClientSession, daemon: Daemon, question: str, *, finish: bool) -> str:
    """Start a run over the daemon's websocket and return its run id (its root dialog id); with
    ``finish`` wait for its end, else leave the socket open."""
    socket = await http.ws_connect(f"ws://127.0.0.1:{daemon.port}/plan-solve/ws", protocols=[f"dominds-auth.{daemon.token}"])
    sock = PsClient(socket)
    await sock.create_session()
    await sock.ask(question)
    started: dict[str, Any] = await sock.until("plan.start", timeout=30)
    run_id = str(started["metadata"]["dialog_id"])
    if finish:
        await sock.finish(timeout=60)
    else:
        OPEN.append(sock)
    return run_id


def _client_run_cut_by_a_stop(daemon: Daemon) -> tuple[str, int, str]:
    """`dominds plan-solve client` asks the slow question; the daemon is stopped (SIGTERM) once the run
    began: (run id, the client's exit status, its stderr)."""
    client = subprocess.Popen(
        [sys.executable, "-m", "dominds", "plan-solve", "client", "--port", str(daemon.port), "--token", str(daemon.token),
         "--question", "Slow deck"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
    )  # fmt: skip
    try:
        assert client.stdout is not None
        started = next((json.loads(line) for line in client.stdout if '"plan.start"' in line), None)
        if started is None:  # ended before its run began: say why (a bare StopIteration said nothing)
            raise AssertionError(f"the client ended before its run began: {client.communicate(timeout=30)[1]}")
        daemon.stop(signal.SIGTERM)
        _, err = client.communicate(timeout=30)
    finally:
        if client.poll() is None:
            client.kill()
    return str(started["metadata"]["dialog_id"]), client.returncode, err
