"""Workflow commands through the running daemon: `dominds tot`, `dominds debate`, `plan-solve example data2ppt`.

A daemon holds the workspace lock, so these commands cannot start an engine of their own while it
runs. They ask the daemon instead, through the API its workflow pages use, and print what a local
run prints: the same progress lines, the same result, the same exit status. Ctrl-C stops the run on
the daemon as it stops a local one. Options that only a local run has are refused by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from dominds.cli.common import CliError

if TYPE_CHECKING:
    from dominds.cli.client import DaemonClient, DaemonInfo
    from dominds.driver.engine import Engine
    from dominds.rtws import Rtws

POLL_SECONDS = 0.3
"""How often a ToT run's snapshot is fetched (the page polls it the same way)."""


def locked_now(rtws: Rtws) -> str:
    """Why a local run could not take the lock after all: a daemon that started meanwhile, or another process."""
    from dominds.cli.client import find_daemon, locked_message

    daemon = find_daemon(rtws)
    if daemon is not None:
        return f"a daemon started meanwhile ({daemon.describe()}); run the command again to run it there"
    return locked_message(rtws)


@contextlib.asynccontextmanager
async def workflow_engine(rtws: Rtws) -> AsyncIterator[Engine]:
    """An engine with the workflows mounted, started here (no daemon runs), closed on the way out; a
    lock another process took meanwhile is the one-line ``locked_now`` error."""
    from dominds.driver.engine import Engine, WorkspaceLocked
    from dominds.workflows.mount import workflow_extensions

    engine = Engine(rtws, extensions=workflow_extensions())
    try:
        await engine.start()
    except WorkspaceLocked:
        raise CliError(locked_now(rtws)) from None
    try:
        yield engine
    finally:
        await engine.close()


def refuse_local_options(given: dict[str, bool], daemon: DaemonInfo) -> None:
    """Options a daemon's run cannot take: named, with the way out."""
    names = [name for name, is_given in given.items() if is_given]
    if names:
        raise CliError(
            f"{', '.join(names)} only work(s) for a run in this process, and a daemon serves this workspace "
            f"({daemon.describe()}); leave {'them' if len(names) > 1 else 'it'} out to run on the daemon, or stop the daemon"
        )


# ---------------------------------------------------------------- Tree of Thoughts


async def tot_on_daemon(daemon: DaemonInfo, body: dict[str, Any], *, quiet: bool, resume: str | None = None) -> dict[str, Any]:
    """Start a ToT run on the daemon (or, with ``resume``, go on with that interrupted run), print its
    layers as they come, return the result `dominds tot` prints."""
    from dominds.cli.client import DaemonClient

    started_at = time.monotonic()
    async with DaemonClient(daemon) as client:
        if resume is not None:
            started = await client.post(f"/api/tot/runs/{resume}/resume", {})
        else:
            started = await client.post("/api/tot/runs", {k: v for k, v in body.items() if v is not None})
        run_id = str(started["runId"])
        printer = SnapshotPrinter(quiet=quiet)
        if not quiet:
            print(f"(run {run_id} on the daemon {daemon.describe()}; dialog {started.get('rootId')})", flush=True)
        try:
            while True:
                try:
                    snapshot = await client.get(f"/api/tot/runs/{run_id}")
                except CliError as exc:
                    raise CliError(
                        f"{exc}\nThe daemon went away while run {run_id} ran: the run is interrupted. What it had "
                        f"reached is kept; once the daemon runs again, `dominds tot --resume {run_id}` goes on from it "
                        f"(and /tot?run={run_id} shows it)."
                    ) from exc
                printer.feed(snapshot)
                if snapshot.get("status") != "running":
                    break
                await asyncio.sleep(POLL_SECONDS)
        except (KeyboardInterrupt, asyncio.CancelledError):
            with contextlib.suppress(CliError):
                await client.post(f"/api/tot/runs/{run_id}/cancel")
            raise
    stats = snapshot.get("stats") or {}
    return {
        "task_id": run_id,
        "status": snapshot.get("status"),
        "root_dialog": snapshot.get("rootId"),
        "solution": snapshot.get("solution"),
        "stats": snapshot.get("stats"),
        "solved": bool(snapshot.get("solved")),
        "unsolved_code": snapshot.get("unsolvedCode"),
        "unsolved_reason": snapshot.get("unsolvedReason") or snapshot.get("failure"),
        "errors": snapshot.get("errors") or [],
        "llm_calls": stats.get("llm_calls", 0),
        "duration_ms": int((time.monotonic() - started_at) * 1000),
        "usage": snapshot.get("usage"),
        "log_dir": snapshot.get("logDir"),
    }


class SnapshotPrinter:
    """The local run's progress lines, from the daemon's snapshots: settings once, then each new layer."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        self.layers = 0
        self.backtracks = 0
        self.started = False

    def feed(self, snapshot: dict[str, Any]) -> None:
        if self.quiet:
            return
        settings = snapshot.get("settings")
        if settings and not self.started:
            self.started = True
            print(f"ToT {snapshot.get('runId')}: {settings['strategy']}, keep b={settings['branching_factor']}, "
                  f"generate k={settings['num_candidates']}, depth {settings['max_depth']}, "
                  f"prune below {settings['pruning_threshold']}", flush=True)  # fmt: skip
        nodes = ((snapshot.get("tree") or {}).get("nodes")) or {}
        for layer in (snapshot.get("layers") or [])[self.layers :]:
            self.layers += 1

            def score(node_id: str) -> float:
                evaluation = (nodes.get(node_id) or {}).get("evaluation") or {}
                return float(evaluation.get("score") or 0.0)

            best = max(layer.get("kept") or [], key=score, default=None)
            best_text = f"best {score(best):.2f}: {(nodes.get(best) or {}).get('content')}" if best else "nothing kept"
            print(f"  depth {layer.get('depth')}: {len(layer.get('expanded') or [])} expanded, "
                  f"{len(layer.get('candidates') or [])} candidates, kept {len(layer.get('kept') or [])}, "
                  f"pruned {len(layer.get('pruned') or [])}; {best_text}", flush=True)  # fmt: skip
        backtracks = int(snapshot.get("backtracks") or 0)
        if backtracks > self.backtracks:
            print(f"  backtracks so far: {backtracks}", flush=True)
            self.backtracks = backtracks


# ---------------------------------------------------------------- Debate


async def debate_on_daemon(
    daemon: DaemonInfo, rtws: Rtws, body: dict[str, Any], emit: Callable[[dict[str, Any]], None]
) -> tuple[str, str] | None:
    """Run (or resume) a debate on the daemon, ``emit`` each event; the report file's text and the session
    id, or None when the run did not finish (the events said why)."""
    from dominds.cli.client import DaemonClient

    session_id: str | None = body.get("sessionId")
    finished = False
    async with DaemonClient(daemon) as client:
        try:
            async for event in _sse_events(client, "/api/multi-agent", body):
                session_id = str(event.get("sessionId") or session_id or "") or None
                emit(event)
                if event.get("type") == "final_report":
                    finished = True
        except (KeyboardInterrupt, asyncio.CancelledError):
            if session_id:
                with contextlib.suppress(CliError):
                    await client.post(f"/api/multi-agent/{session_id}/stop")
            raise
    if not finished or not session_id:
        return None
    return _debate_report(rtws, session_id), session_id


def _debate_report(rtws: Rtws, session_id: str) -> str:
    """The same file a local run writes: read from the run's saved state."""
    from dominds.cli.offline import locate_dialog
    from dominds.workflows.debate.report import final_markdown
    from dominds.workflows.debate.state import DebateStateError, load_state

    status, root_id = locate_dialog(rtws, session_id)
    try:
        return final_markdown(load_state(rtws.status_dir(status) / root_id))
    except DebateStateError as exc:
        raise CliError(str(exc)) from exc


async def _sse_events(client: DaemonClient, path: str, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    import aiohttp

    try:
        async with client.session.post(path, json=body, timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as response:
            if response.status >= 400:
                text = await response.text()
                try:
                    message = json.loads(text).get("error")
                except (ValueError, AttributeError):
                    message = text.strip()[:200]
                raise CliError(str(message or f"the daemon answered HTTP {response.status} to POST {path}"))
            async for raw in response.content:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line.startswith("data:"):
                    continue  # keep-alive comments and frame separators
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                yield json.loads(data)
    except aiohttp.ClientError as exc:
        raise CliError(f"lost the daemon ({client.info.describe()}) during the run: {exc}") from exc


# ---------------------------------------------------------------- Plan & Solve


async def data2ppt_on_daemon(
    daemon: DaemonInfo, rtws: Rtws, question: str, out: Callable[[str], None], *, json_events: bool
) -> int:
    """One Plan & Solve run on the daemon's service (plan accepted as planned), one line per event."""
    from dominds.workflows.plan_solve.client import ClientOptions, run_client
    from dominds.workflows.plan_solve.example.data2ppt import describe_event
    from dominds.workflows.plan_solve.web import WS_PATH

    url = daemon.base_url.replace("http://", "ws://", 1) + WS_PATH
    options = ClientOptions(url=url, question=question, token=daemon.token, auto_confirm_plan=True, interactive_confirm=False)

    def show(frame: str) -> None:
        out(frame if json_events else describe_event(json.loads(frame), rtws.root))  # the service's paths are the workspace's

    return await run_client(options, show)

