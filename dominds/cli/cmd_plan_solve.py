"""`dominds plan-solve`: the Plan & Solve websocket service, its client and the data-to-slides example.

- ``serve``: the service on its own port (``ws://HOST:PORT``, also ``/plan-solve/ws``) with its own engine on the
  workspace at or above the current directory, or on an offline copy of the example when there is none.
  ``dominds serve`` mounts the same service at ``/plan-solve/ws``.
- ``client``: prints every event of one run as JSON lines (the origin's ``ws_print_messages.py``).
- ``example data2ppt``: one run over a CSV that writes ``workdir/ppt/presentation.json`` and ``.pptx``;
  with ``--serve`` it is the origin's example service instead (plan confirmation on, 600 s). With a
  daemon serving the workspace the run goes to the daemon's service (its settings apply), since the
  daemon holds the workspace lock.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from dominds.cli.common import CliError, text_argument
from dominds.extras import PLAN_SOLVE, missing_extra_message
from dominds.rtws import Rtws, find_rtws, is_rtws

if TYPE_CHECKING:
    from dominds.cli.client import DaemonInfo
    from dominds.workflows.plan_solve.settings import PlanSolveSettings

DEFAULT_PORT = 8086


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "plan-solve",
        help="Plan & Solve websocket service: serve, client, example data2ppt",
        description="Plan & Solve: plan slides, solve them in parallel, aggregate. See `dominds docs plan-solve`.",
    )
    sub = p.add_subparsers(dest="plan_solve_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: _help(p))

    serve = sub.add_parser("serve", help="run the websocket service on its own port")
    _add_service_options(serve, confirm_timeout=300.0)
    serve.add_argument("--confirm-plan", action="store_true", help="ask agent.user_confirm after planning")
    serve.set_defaults(func=_serve)

    client = sub.add_parser("client", help="run one question against a service and print its events")
    client.add_argument("--host", default="127.0.0.1")
    client.add_argument("--port", type=int, default=DEFAULT_PORT)
    client.add_argument("--path", default="/plan-solve/ws", help="websocket path (default: /plan-solve/ws)")
    client.add_argument("--url", help="full websocket URL (overrides --host/--port/--path)")
    client.add_argument("--token", help="the daemon's token when the service is mounted in `dominds serve`")
    client.add_argument("--question", help="what to ask; `-` reads it from stdin (default: the example's question)")
    client.add_argument(
        "--cancel-after", type=float, metavar="SECONDS", help="send user.cancel after N seconds"
    )
    client.add_argument(
        "--auto-confirm-plan", action="store_true", help="answer plan confirmations with confirmed=true"
    )
    client.add_argument(
        "--confirm-plan-tasks-file",
        type=Path,
        metavar="FILE",
        help="JSON array of tasks sent with the confirmation",
    )
    client.add_argument("--no-interactive-confirm", action="store_true", help="never ask on the terminal")
    client.add_argument(
        "--confirm-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="terminal answer timeout (default 300)",
    )
    client.set_defaults(func=_client)

    example = sub.add_parser("example", help="runnable examples")
    examples = example.add_subparsers(dest="example_name", metavar="EXAMPLE")
    example.set_defaults(func=lambda args: _help(example))
    data2ppt = examples.add_parser("data2ppt", help="CSV → planned slides → presentation.json and .pptx")
    _add_service_options(data2ppt, confirm_timeout=600.0)
    data2ppt.add_argument(
        "--question",
        help="what the presentation should answer; `-` reads it from stdin (default: the demo question, the only one the "
        "offline example answers)",
    )
    data2ppt.add_argument(
        "--json", action="store_true", help="print the event envelopes instead of one line each"
    )
    data2ppt.add_argument(
        "--serve", action="store_true", help="serve the example over websocket instead (plan confirmation on)"
    )
    data2ppt.set_defaults(func=_example_data2ppt, parser=data2ppt)


def _add_service_options(p: argparse.ArgumentParser, *, confirm_timeout: float) -> None:
    p.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"listen port (default {DEFAULT_PORT}; 0 = any free)"
    )
    p.add_argument(
        "--csv",
        type=Path,
        metavar="FILE",
        help="data file, CSV or .csv.gz (default: <workspace>/plan-solve/sales.csv.gz, else the sample data)",
    )
    p.add_argument(
        "--workdir",
        type=Path,
        default=Path("workdir"),
        help="output root; each run writes WORKDIR/ppt/<time>-<run id>/ (default: ./workdir)",
    )
    p.add_argument(
        "--template",
        default="dominds",
        metavar="NAME|FILE",
        help="deck template: dominds (16:9, default), plain, or a .pptx/.potx file",
    )
    p.add_argument("--concurrency", type=int, default=5, help="solvers at once (default 5)")
    p.add_argument(
        "--confirm-timeout",
        type=float,
        default=confirm_timeout,
        metavar="SECONDS",
        help=f"plan confirmation timeout (default {confirm_timeout:g})",
    )
    p.add_argument(
        "--confirm-tool",
        action="append",
        default=[],
        metavar="TOOL",
        help="tool that needs a user.response first (generate_ppt)",
    )
    p.add_argument(
        "--step-timeout", type=float, default=600.0, metavar="SECONDS", help="limit per planner/solver step"
    )
    p.add_argument(
        "--heartbeat", type=float, default=60.0, metavar="SECONDS", help="system.heartbeat interval"
    )
    p.add_argument(
        "--no-broadcast-tasks",
        action="store_true",
        help="leave the task list out of the plan.completed event (broadcast_tasks=False)",
    )
    p.add_argument("--token", help="require this token (needed to listen on a non-loopback address)")
    p.add_argument(
        "--scripted",
        action="store_true",
        help="use an offline copy of the example workspace even inside a workspace",
    )


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _require_extra() -> None:
    """Plan & Solve runs here only with DuckDB and python-pptx (``dominds[plan-solve]``)."""
    message = missing_extra_message(PLAN_SOLVE)
    if message is not None:
        raise CliError(message)


def _workspace(scripted: bool, cleanup: contextlib.ExitStack) -> Rtws:
    """The workspace at or above the current directory, else an offline copy of the example in a
    temporary folder that ``cleanup`` removes when the run ends (each run left ~540 KB behind before)."""
    found = find_rtws(Path.cwd(), must_exist=False)
    if not scripted and is_rtws(found.root):
        return found
    from dominds.workflows.plan_solve.example.workspace import create_example_workspace

    root = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="dominds-plan-solve-")))
    print(f"Offline example workspace (scripted answers, removed at the end): {root}", file=sys.stderr)
    return create_example_workspace(root)


def _settings(args: argparse.Namespace, workspace: Rtws, *, confirm_plan: bool) -> PlanSolveSettings:
    from dominds.workflows.plan_solve.settings import DEFAULT_CSV, PlanSolveSettings

    if args.concurrency < 1:
        raise CliError("--concurrency must be at least 1")
    csv_path = args.csv.resolve() if args.csv else None
    if csv_path is not None and not csv_path.is_file():
        raise CliError(f"--csv {args.csv}: no such file")
    if csv_path is None and not (workspace.root / DEFAULT_CSV).is_file():
        from dominds.workflows.plan_solve.example.workspace import sample_csv

        csv_path = sample_csv()
    return PlanSolveSettings(
        concurrency=args.concurrency,
        broadcast_tasks=not args.no_broadcast_tasks,
        require_plan_confirmation=confirm_plan,
        confirm_timeout=args.confirm_timeout,
        confirm_tools=frozenset(args.confirm_tool),
        step_timeout=args.step_timeout,
        heartbeat_seconds=args.heartbeat,
        csv_path=csv_path,
        workdir=args.workdir.resolve(),
        template=_template(args.template),
        token=args.token,
    )


def _template(chosen: str) -> str:
    from dominds.workflows.plan_solve.pptx_writer import TemplateError, check_template
    from dominds.workflows.plan_solve.settings import BUILTIN_TEMPLATES

    template = chosen if chosen in BUILTIN_TEMPLATES else str(Path(chosen).resolve())
    try:
        check_template(template)
    except TemplateError as exc:
        raise CliError(f"--template: {exc}") from exc
    return template


def _run_service(args: argparse.Namespace, *, confirm_plan: bool) -> int:
    _require_extra()
    with contextlib.ExitStack() as cleanup:
        workspace = _workspace(args.scripted, cleanup)
        return _serve_on(workspace, args, confirm_plan=confirm_plan)


def _serve_on(workspace: Rtws, args: argparse.Namespace, *, confirm_plan: bool) -> int:
    from dominds.driver.engine import WorkspaceLocked
    from dominds.workflows.plan_solve.web import WS_PATH, StandaloneError, serve_standalone

    settings = _settings(args, workspace, confirm_plan=confirm_plan)

    def ready(url: str) -> None:
        print(
            f"Plan & Solve listening on {url} (also {url}{WS_PATH}; workspace {workspace.root}); Ctrl-C stops it",
            flush=True,
        )

    try:
        asyncio.run(serve_standalone(workspace, args.host, args.port, settings, ready))
    except WorkspaceLocked as exc:
        raise CliError(
            f"{exc}; if `dominds serve` runs there, use its mount at /plan-solve/ws instead"
        ) from exc
    except StandaloneError as exc:
        raise CliError(str(exc)) from exc
    return 0


def _serve(args: argparse.Namespace) -> int:
    return _run_service(args, confirm_plan=args.confirm_plan)


def _example_data2ppt(args: argparse.Namespace) -> int:
    if args.question:
        args.question = text_argument(args.question, "question")
    if args.serve:
        return _run_service(args, confirm_plan=True)
    from dominds.cli.client import find_daemon

    in_workspace = not args.scripted and is_rtws(find_rtws(Path.cwd(), must_exist=False).root)
    if not in_workspace:
        _require_extra()  # before an example workspace is made for nothing
    with contextlib.ExitStack() as cleanup:
        workspace = _workspace(args.scripted, cleanup)
        daemon = find_daemon(workspace) if in_workspace else None
        if daemon is not None:
            return _data2ppt_on_daemon(args, daemon, workspace)  # the daemon's install runs it
        _require_extra()
        return _data2ppt_here(args, workspace)


def _data2ppt_here(args: argparse.Namespace, workspace: Rtws) -> int:
    from dominds.workflows.plan_solve.example.data2ppt import run_data2ppt
    from dominds.workflows.plan_solve.example.workspace import DEFAULT_QUESTION
    from dominds.workflows.plan_solve.settings import DEFAULT_CSV

    settings = _settings(args, workspace, confirm_plan=False)
    csv_path = settings.csv_path or workspace.root / DEFAULT_CSV
    return asyncio.run(
        run_data2ppt(
            workspace,
            csv_path=csv_path,
            question=args.question or DEFAULT_QUESTION,
            workdir=settings.workdir,
            concurrency=settings.concurrency,
            out=lambda line: print(line, flush=True),
            json_events=args.json,
            template=settings.template,
        )
    )


def _data2ppt_on_daemon(args: argparse.Namespace, daemon: DaemonInfo, workspace: Rtws) -> int:
    """The run goes to the daemon's Plan & Solve service (its /plan-solve page shows it), with its settings."""
    import aiohttp

    from dominds.cli.workflow_daemon import data2ppt_on_daemon, refuse_local_options
    from dominds.workflows.plan_solve.example.workspace import DEFAULT_QUESTION

    parser: argparse.ArgumentParser = args.parser
    local_only = ("csv", "workdir", "template", "concurrency", "confirm_tool", "step_timeout", "heartbeat", "confirm_timeout")
    refuse_local_options(
        {f"--{name.replace('_', '-')}": getattr(args, name) != parser.get_default(name) for name in local_only}, daemon
    )
    if not args.json:
        print(f"(on the daemon {daemon.describe()}: its Plan & Solve settings apply)", flush=True)
    try:
        return asyncio.run(
            data2ppt_on_daemon(daemon, workspace, args.question or DEFAULT_QUESTION, lambda line: print(line, flush=True), json_events=args.json)
        )
    except aiohttp.WSServerHandshakeError as exc:
        if exc.status == 503:  # the daemon's install lacks the extra: its page and API say so too
            missing = missing_extra_message(PLAN_SOLVE) or f"the daemon's install lacks dominds[{PLAN_SOLVE.name}]"
            raise CliError(f"{missing} (the daemon {daemon.describe()} runs Plan & Solve here)") from exc
        raise CliError(f"cannot reach the daemon's Plan & Solve service ({daemon.describe()}): {exc}") from exc
    except (OSError, aiohttp.ClientError) as exc:
        raise CliError(f"cannot reach the daemon's Plan & Solve service ({daemon.describe()}): {exc}") from exc


def _client(args: argparse.Namespace) -> int:
    import aiohttp

    from dominds.workflows.plan_solve.client import ClientOptions, load_tasks_file, run_client
    from dominds.workflows.plan_solve.example.workspace import DEFAULT_QUESTION

    if args.question:
        args.question = text_argument(args.question, "question")
    try:
        tasks = load_tasks_file(args.confirm_plan_tasks_file) if args.confirm_plan_tasks_file else None
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    options = ClientOptions(
        url=args.url or f"ws://{args.host}:{args.port}{args.path}",
        question=args.question or DEFAULT_QUESTION,
        token=args.token,
        cancel_after=args.cancel_after,
        auto_confirm_plan=args.auto_confirm_plan,
        confirm_plan_tasks=tasks,
        interactive_confirm=not args.no_interactive_confirm,
        confirm_timeout=args.confirm_timeout,
    )
    try:
        return asyncio.run(run_client(options, lambda line: print(line, flush=True)))
    except (OSError, aiohttp.ClientError) as exc:
        raise CliError(f"cannot talk to {options.url}: {exc}") from exc
