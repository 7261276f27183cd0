"""`dominds debate "question"`: run a Planner/Critic/Host/Reporter debate, print it live, write the report.

With a daemon serving the workspace the run is the daemon's (``POST /api/multi-agent``, as its
``/debate`` page does: ``workflow_daemon.py``); otherwise an engine of its own runs here and holds the
workspace lock meanwhile. The report file is written here either way. Ctrl-C stops the run
at once and keeps it resumable: ``dominds debate --resume <session id>`` goes on from the last
completed round (so does a run whose process was killed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from dominds.cli.common import CliError, command_name, text_argument, workspace
from dominds.rtws import Rtws
from dominds.workflows.debate.embedder_kinds import EMBEDDER_KINDS

if TYPE_CHECKING:
    from dominds.cli.client import DaemonInfo


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "debate",
        help="debate a question with Planner, Critic, Host and Reporter; write the report as Markdown",
        description=(
            "Debate QUESTION in this workspace: rounds of Planner and Critic judged by the "
            "host's consensus rules, then the Reporter's final report, written to --out. Settings: .minds/debate.yaml."
        ),
    )
    p.add_argument("question", nargs="?", help="what to debate; `-` reads it from stdin (omit with --resume)")
    p.add_argument("--out", type=Path, metavar="FILE", help="report file (default: ./debate-<session id>.md)")
    p.add_argument("--resume", metavar="RUN", help="continue the interrupted debate RUN (its session id)")
    p.add_argument("--max-rounds", type=int, choices=range(1, 6), metavar="N", help="1..5 (default 5)")
    p.add_argument("--embedder", choices=EMBEDDER_KINDS, help="override embedder.kind of .minds/debate.yaml (default auto)")
    p.add_argument("--json", action="store_true", help="print the events as JSON lines instead of text")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if bool(args.question) == bool(args.resume):
        raise CliError("give a question to debate, or --resume RUN (not both)", exit_code=2)
    if args.question:
        args.question = text_argument(args.question, "question")
    rtws = workspace()
    # imported here: registers the debate members before the engine loads the team, and keeps
    # `dominds --help` from loading the workflow
    import dominds.workflows.debate  # noqa: F401

    return asyncio.run(_debate(rtws, args))


async def _debate(rtws: Rtws, args: argparse.Namespace) -> int:
    from dominds.cli.client import find_daemon

    daemon = find_daemon(rtws)
    if daemon is not None:
        return await _debate_on_daemon(rtws, args, daemon)
    return await _debate_here(rtws, args)


async def _debate_on_daemon(rtws: Rtws, args: argparse.Namespace, daemon: DaemonInfo) -> int:
    """The daemon's run (its /debate page shows it too); the report is written here as for a local run."""
    from dominds.cli.workflow_daemon import debate_on_daemon, refuse_local_options

    refuse_local_options({"--embedder": bool(args.embedder)}, daemon)
    body: dict[str, Any] = {"sessionId": args.resume} if args.resume else {"message": args.question, "mode": "multi_agent"}
    if args.max_rounds is not None:
        body["maxRounds"] = args.max_rounds
    printer = EventPrinter(sys.stdout, json_lines=args.json)
    if not args.json:
        printer.line(f"(on the daemon {daemon.describe()})")
    finished = await debate_on_daemon(daemon, rtws, body, printer)
    if finished is None:
        return 1  # the events said why, with the resume hint
    report, session_id = finished
    return _write_report(printer, args, report, session_id)


async def _debate_here(rtws: Rtws, args: argparse.Namespace) -> int:
    from dominds.cli.workflow_daemon import workflow_engine
    from dominds.workflows.debate.launch import DebateRequestError, open_debate
    from dominds.workflows.debate.report import final_markdown
    from dominds.workflows.debate.settings import load_settings

    async with workflow_engine(rtws) as engine:
        settings = load_settings(rtws)
        if args.embedder:
            settings = replace(settings, embedder=replace(settings.embedder, kind=args.embedder))
        printer = EventPrinter(sys.stdout, json_lines=args.json)
        try:
            session = await open_debate(
                engine, emit=printer, question=args.question, resume_id=args.resume, max_rounds=args.max_rounds, settings=settings
            )
        except DebateRequestError as exc:
            raise CliError(str(exc), exit_code=2 if exc.status == 400 else 1) from exc
        state = await session.run_to_end()
        if not state.finished:
            return 1  # an error was printed with the resume hint
        return _write_report(printer, args, final_markdown(state), state.session_id)


def _write_report(printer: EventPrinter, args: argparse.Namespace, report: str, session_id: str) -> int:
    out = args.out or Path.cwd() / f"debate-{session_id}.md"
    try:
        out.write_text(report, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write the report to {out}: {exc.strerror or exc}") from exc
    printer.line(f"report: {out}")
    return 0


class EventPrinter:
    """Prints the run's events as they happen: one short line each, or JSON lines."""

    def __init__(self, stream: TextIO, *, json_lines: bool = False) -> None:
        self.stream = stream
        self.json_lines = json_lines

    def line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def __call__(self, event: dict[str, Any]) -> None:
        if self.json_lines:
            self.line(json.dumps(event, ensure_ascii=False))
            return
        text = describe(event)
        if text and event.get("type") == "error":
            print(text, file=sys.stderr, flush=True)  # a failure must be seen even when stdout is redirected
        elif text:
            self.line(text)


def describe(event: dict[str, Any]) -> str | None:
    kind, where = event.get("type"), f"[round {event.get('round')}]"
    if kind == "session_start":
        lines = [f"debate {event['sessionId']}: {event['question']}", f"similarity: {event['similarityMethod']}"]
        if event.get("resumedFromRound") is not None:
            lines.append(f"resuming after round {event['resumedFromRound']}")
        lines += [f"warning: {w}" for w in event.get("warnings") or []]
        return "\n".join(lines)
    if kind == "agent_output":
        position = event.get("position") or {}
        conclusion = position.get("conclusion") or event.get("content", "")
        confidence = f" (confidence {position['confidence']:.2f})" if "confidence" in position else ""
        flag = f" [{event['fallback']}]" if event.get("fallback") else ""
        return f"{where} {event['agent']}: {conclusion}{confidence}{flag}"
    if kind == "host_decision":
        stubborn = f"; stubborn: {', '.join(event['stubborn_agents'])}" if event.get("stubborn_agents") else ""
        return f"{where} host: {event['action']}, consensus {event['consensus_level']:.2f} — {event['reason']}{stubborn}"
    if kind == "agent_error":
        return f"{where} {event['agent']}: {event['error']}, skipped ({event['fallback']})"
    if kind == "tool_error":
        return f"{where} {event['tool']} failed, using Jaccard: {event['detail']}"
    if kind == "final_report":
        return f"final report: {event['status']} after {event['round']} round(s)"
    if kind == "session_interrupted":
        if str(event["reason"]).startswith(("failed:", "error:")):
            return None  # the error event that follows says what failed
        return (
            f"interrupted ({event['reason']}) after round {event['completedRounds']}; "
            f"resume with: {command_name()} debate --resume {event['sessionId']}"
        )
    if kind == "error":
        return f"error: {event['error']}; resume with: {command_name()} debate --resume {event['sessionId']}"
    return None
