"""`dominds serve`: run the daemon and web panel for this workspace.

Start-up order matters: refuse a second daemon before touching anything; bind the port with the
standard library (server/listen.py), so a connection made from then on waits in the kernel's accept
queue instead of being refused; aiohttp is imported while the process has one thread
(server/aiohttp_import.py: without parsing the CA bundle for a client the daemon never uses), with the
cycle collector off until every module is in. Then the front application serves the sockets at once
(``serve_daemon``, server/front.py: the panel's files, health, and the dialog list when no tree needs
recovery), while worker threads import the watcher, then the engine, the records and the API, and the
event loop starts watching ``.minds/`` and the Taskdocs; the engine starts (takes the rtws lock,
recovers, schedules) and the API goes behind the front. One server answers from the first byte: a
request that needs the engine waits for it, never a "not ready yet". Only then is
``.dialogs/daemon.json`` written (mode 0600), so a file that exists names a listening, ready daemon.
SIGINT/SIGTERM stop the server gracefully (``serve_daemon``); the file is removed on every way out, and a
file left by a SIGKILLed daemon is recognised as stale through the lock.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import shlex
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from dominds.cli.client import DaemonInfo, daemon_json_payload, find_daemon, lock_is_held, locked_message
from dominds.cli.common import CliError, command_name, program
from dominds.rtws import Rtws, RtwsNotFound, find_rtws

if TYPE_CHECKING:
    from dominds.driver.engine import Engine

RESUMED_REASONS = frozenset({"server_shutdown", "server_restart", "storage_error"})
"""Interruptions a process made, not a person: ``serve`` resumes them unless ``--no-resume``."""
STARTUP_LOCK_WAIT_SECONDS = 5.0
"""How long to wait for a lock held by a CLI command writing offline (they finish in milliseconds)."""

EPILOG = """\
examples:
  dominds serve                      panel on http://127.0.0.1:5666/?auth=<token>
  dominds serve --port 0             any free port (the URL is printed)
  dominds serve --demo               the demo workspace (offline, kept in ~/.local/share/dominds/demo)
  dominds serve --demo /tmp/demo     a demo workspace in a folder of your choice
  dominds serve --no-auth --no-resume
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the daemon and web panel for this workspace",
        description="Run the Dominds daemon: the scheduler that drives dialogs, the web panel, the websocket "
        "and the JSON API. Prints the panel URL with its access token (kept in .dominds/auth-token across "
        "restarts; `dominds url` prints the URL again) and writes .dialogs/daemon.json "
        "(pid, port, token; mode 0600) so other `dominds` commands reach the daemon. Hand edits of "
        ".minds/ and of *.tsk/ Taskdocs are picked up live. Stop with Ctrl-C (or SIGTERM): every dialog "
        "is saved and resumed by the next `serve`.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--port", type=int, default=5666, help="port (default 5666; the next free one if taken; 0 = any)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--no-auth", action="store_true", help="no access token (only allowed on a loopback address)")
    p.add_argument("--no-resume", action="store_true", help="do not resume dialogs interrupted by the last shutdown")
    p.add_argument(
        "--demo",
        nargs="?",
        const="",
        metavar="DIR",
        help="serve the demo workspace instead of this one: offline scripted answers whatever API keys are set, "
        "kept between runs in DIR (default $XDG_DATA_HOME/dominds/demo, i.e. ~/.local/share/dominds/demo)",
    )
    p.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from dominds.server.listen import ServerError, bind_listeners, is_loopback_host

    if not 0 <= args.port <= 65535:
        raise CliError(f"--port must be between 0 and 65535, not {args.port}")
    if args.no_auth and not is_loopback_host(args.host):
        raise CliError(f"--no-auth is only allowed on a loopback address (127.0.0.1, ::1), not {args.host!r}")
    rtws = _workspace(args.demo)
    if args.demo is not None:
        # relative paths of the daemon's own (a Plan & Solve deck's workdir/, say) land in the demo, not
        # in whatever directory `serve --demo` was typed in (a checkout)
        os.chdir(rtws.root)
    _refuse_second_daemon(rtws)
    try:
        sockets = bind_listeners(args.host, args.port)
    except ServerError as exc:
        raise CliError(str(exc)) from exc
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING, format="dominds: %(levelname)s: %(message)s")
    # No cycle collections while the daemon's modules load: nearly every object they make lives as long as
    # the process and is frozen once they are in (_serve_engine), so the collections a start made (117 of
    # the youngest generation, 10 of the middle one, 1 full) found next to nothing to free: 4-8 % of the
    # imports' work (docs/performance.md, "Start-up").
    gc.disable()
    from dominds.server.aiohttp_import import import_aiohttp_for_serving

    import_aiohttp_for_serving()  # while the process has one thread (server/aiohttp_import.py)
    try:
        asyncio.run(_serve_engine(rtws, args, sockets))
    finally:
        gc.enable()
        for sock in sockets:
            sock.close()
    return 0


def _workspace(demo: str | None) -> Rtws:
    if demo is None:
        try:
            return find_rtws(Path.cwd())
        except RtwsNotFound as exc:
            raise CliError(f"{exc}; `{program()} init` creates one here, -C DIR names another, `{program()} serve --demo` serves the demo workspace") from exc
    from dominds.cli.demo import prepare_demo
    from dominds.rtws import default_demo_dir, is_rtws

    target = Path(demo) if demo else default_demo_dir()
    if is_rtws(target):
        _refuse_second_daemon(Rtws(target))  # before the template is laid over a workspace a daemon serves
    prepared = prepare_demo(target)
    root = prepared.rtws.root
    if prepared.created:
        state = "created from the template"
    else:
        from dominds.ids import is_dialog_id
        from dominds.rtws import DIALOG_STATUSES

        count = sum(is_dialog_id(p.name) for s in DIALOG_STATUSES for p in prepared.rtws.status_dir(s).iterdir())
        state = f"kept from earlier runs: {count} dialog tree{'' if count == 1 else 's'}"
    print(f"Demo workspace: {root} ({state})", flush=True)
    print("  offline: every member answers from .minds/scripted/demo.yaml, whatever API keys are set", flush=True)
    if prepared.updated:
        print(f"  updated from the template: {', '.join(prepared.updated)}", flush=True)
    if prepared.edited:
        print(f"  edited here, kept: {', '.join(prepared.edited)}", flush=True)
    if prepared.kept:
        print(f"  edited here, kept (the template has a newer version): {', '.join(prepared.kept)}", flush=True)
    print(f"  from another shell: {program()} -C {shlex.quote(str(root))} status", flush=True)
    return prepared.rtws


def _refuse_second_daemon(rtws: Rtws) -> None:
    """Fail at once when a daemon serves this workspace; wait briefly for a CLI command holding the lock."""
    deadline = time.monotonic() + STARTUP_LOCK_WAIT_SECONDS
    while True:
        daemon = find_daemon(rtws)
        if daemon is not None:
            raise CliError(f"already served by pid {daemon.pid} on port {daemon.port}: the panel is {daemon.url}")
        if not rtws.lock_path.exists() or not lock_is_held(rtws.lock_path):
            return
        if time.monotonic() > deadline:
            raise CliError(locked_message(rtws))
        time.sleep(0.05)


def _import_watcher() -> None:
    import dominds.watch  # noqa: F401


def _import_daemon() -> None:
    """The modules of the full daemon (most of the start-up's CPU time), loaded in a worker thread while
    the front application already serves (server/front.py) and the event loop watches the workspace."""
    import dominds.driver.engine
    import dominds.server.app
    import dominds.workflows.mount  # noqa: F401


async def _serve_engine(rtws: Rtws, args: argparse.Namespace, sockets: list[socket.socket]) -> None:
    from dominds import __version__
    from dominds.ids import now_iso
    from dominds.server.auth import AccessToken, load_or_create_token
    from dominds.server.import_gate import ImportGate
    from dominds.server.run import ServerError, serve_daemon

    gate = ImportGate()

    token = None if args.no_auth else AccessToken(load_or_create_token(rtws.token_path), rtws.token_path)
    started: list[Engine] = []  # an edit before the engine exists needs no announcement: it reads the files
    watching: list[asyncio.Task[None]] = []

    def minds_changed(paths: list[str]) -> None:
        for engine in started:
            announce_minds_change(engine, paths)

    def taskdoc_changed(path: str) -> None:
        for engine in started:
            announce_taskdoc_change(engine, path)

    async def start() -> tuple[Engine, list[Callable[[Any], None]]]:
        # watching starts first: its watches take a few hundred milliseconds to be in place, as long as the imports
        await asyncio.to_thread(gate.importing(_import_watcher))
        from dominds.watch import WorkspaceWatcher

        watcher = WorkspaceWatcher(rtws.root, on_minds_changed=minds_changed, on_taskdoc_changed=taskdoc_changed)
        watching.append(asyncio.create_task(watcher.run(), name="dominds-watch"))
        await asyncio.to_thread(gate.importing(_import_daemon))
        # The imports' objects live as long as the daemon: out of the cycle collector's sight, so its
        # full collections (one after each sweep that unloads resting trees, server/resting.py) walk
        # only what was created since. Before the engine starts: no tree is loaded yet.
        gc.freeze()
        gc.enable()
        from dominds.driver.engine import Engine, WorkspaceLocked
        from dominds.workflows.mount import route_adders, workflow_extensions

        # the workflows' members from the start: recovery may drive workflow steps
        engine = Engine(
            rtws, resume=not args.no_resume, extensions=workflow_extensions(), on_start_progress=_print_start_progress
        )
        started.append(engine)
        # a new root may name a Taskdoc package created since the last scan: watch it from the start
        engine.pubchan.subscribe(lambda event: watcher.rescan_soon() if event.get("type") == "dialogs_created" else None)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watcher.ready.wait(), 5.0)
        try:
            await engine.start()
        except WorkspaceLocked:
            daemon = find_daemon(rtws)
            if daemon is not None:
                raise CliError(f"already served by pid {daemon.pid} on port {daemon.port}") from None
            raise CliError(locked_message(rtws)) from None
        return engine, route_adders()

    written: list[DaemonInfo] = []

    def on_ready(url: str) -> None:
        from dominds.server.memory import BIG_WORK_TREES, give_back_memory

        if started[0].trees_at_start > BIG_WORK_TREES:
            give_back_memory()  # what recovery's scan of a big workspace freed (server/memory.py)
        port = urlparse(url).port or args.port
        info = DaemonInfo(pid=os.getpid(), host=args.host, port=port, token=token.current() if token else None, url=url)
        _write_daemon_json(rtws, daemon_json_payload(info, rtws, now_iso(), __version__))
        written.append(info)
        print(f"Dominds {__version__} is serving {rtws.root}", flush=True)
        print(f"  panel: {url}", flush=True)
        print(f"  pid {info.pid}, port {port}; {rtws.daemon_json} written; Ctrl-C to stop", flush=True)
        threading.Thread(target=_warm_up, name="dominds-warm-up", daemon=True).start()

    try:
        await serve_daemon(start, rtws, args.host, args.port, token=token, on_ready=on_ready, sockets=sockets, gate=gate)
    except ServerError as exc:
        raise CliError(str(exc)) from exc
    finally:
        for task in watching:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if written:
            _remove_daemon_json(rtws, written[0].pid)
            again = f"{command_name()} serve" if args.demo is None else f"{program()} serve --demo" + (f" {shlex.quote(args.demo)}" if args.demo else "")
            print(f"Dominds stopped; every dialog is saved (`{again}` resumes them).", flush=True)


def _warm_up() -> None:
    """In a thread once the daemon serves: what the first websocket connection and the first validation of
    any record or message would otherwise load. The websocket's messages and handlers are imported on
    first use (server/ws.py). Every pydantic model is built on first use (``defer_build``: none is needed
    before the listing answers), and pydantic's first build looks for plugins in every installed
    package's metadata (importing ``importlib.metadata``, ~0.1 s on a loaded machine); done here, before
    a request needs it. A throwaway adapter of its own: no model the requests use is built from two threads."""
    import importlib

    from pydantic import TypeAdapter

    from dominds.server.ws import HANDLERS_MODULE

    importlib.import_module(HANDLERS_MODULE)
    TypeAdapter(int)


def _write_daemon_json(rtws: Rtws, payload: dict[str, Any]) -> None:
    from dominds.store.atomic import write_atomic

    write_atomic(rtws.daemon_json, json.dumps(payload, indent=2) + "\n", mode=0o600)


def _remove_daemon_json(rtws: Rtws, pid: int) -> None:
    """Remove the file if it is still ours (never one a later daemon wrote)."""
    try:
        current = json.loads(rtws.daemon_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(current, dict) and current.get("pid") == pid:
        with contextlib.suppress(OSError):
            rtws.daemon_json.unlink()


def announce_minds_change(engine: Engine, paths: list[str]) -> None:
    """``.minds/`` changed on disk: reload now and tell every panel (team config, then the problems)."""
    config = engine.config.get()  # reloads team.yaml/llm.yaml when they changed (stat-based)
    engine.pubchan.publish(
        None,
        {
            "type": "team_config_updated",
            "path": ".minds/team.yaml",
            "exists": engine.rtws.team_yaml.exists(),
            "trigger": paths,
            "configGeneration": config.generation,
        },
    )
    engine.pubchan.publish(None, {"type": "problems_snapshot", "problems": engine.problems_payload()})


def announce_taskdoc_change(engine: Engine, taskdoc_path: str) -> None:
    """A Taskdoc package changed on disk: a ``taskdoc_updated`` on every loaded dialog that uses it.

    Dialog-scoped, like the event of ``change_mind``, so exactly the panels that show one of those
    dialogs hear of it (a dialog a panel displays is loaded). The next generation reads the package
    anyway (the context builder fingerprints it on every generation).
    """
    for root in list(engine.roots.values()):
        if root.meta.task_doc_path != taskdoc_path:
            continue
        for dialog in list(root.local.values()):
            dialog.publish({"type": "taskdoc_updated", "taskDocPath": taskdoc_path, "origin": "disk"})


def _print_start_progress(done: int, total: int) -> None:
    """A long start says how far it has got (driver/start_progress.py): on a first start the daemon reads
    every dialog once before it serves, minutes at 100,000 dialogs."""
    print(f"dominds: starting: {done:,} of {total:,} dialog trees gone through", file=sys.stderr, flush=True)
