"""`dominds fork DIALOG --at GENSEQ [--course N] [--message TEXT]`: a new main dialog holding DIALOG's history
before a generation, which it runs anew (driver/fork.py; docs/fork.md).

Through the daemon when one runs (it drives the fork at once). Without one the fork is made under the
workspace lock and its first message queued: the next `dominds serve` drives it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from dominds.cli.common import CliError, command_name, workspace

EPILOG = """\
examples:
  dominds fork 0mi7x2k3a-9f3c --at 4                   run generation 4 again, on the message it answered
  dominds fork 0mi7 --at 4 --message "Use SQLite instead"   the same, with that message instead
  dominds fork 0mi7 --at 2 --course 1                  generation 2 of course 1 (default: the current course)
A generation's number is the `genseq` of its events in `dominds show DIALOG --json` (and the panel's Fork
button on each reply knows it); the original dialog is never changed.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "fork",
        help="start a new dialog from an earlier point of a main dialog (its history before a generation)",
        description="Fork DIALOG, a main dialog, at generation GENSEQ: a new main dialog holds everything DIALOG "
        "recorded before that generation and runs it again, on the message it answered or on --message. "
        "DIALOG itself is not changed; the fork records where it came from.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dialog", metavar="DIALOG", help="main dialog id or a unique prefix of one (see `dominds status`)")
    p.add_argument("--at", dest="genseq", metavar="GENSEQ", type=_positive, required=True,
                   help="the generation to run anew (its genseq, as `dominds show --json` gives it)")
    p.add_argument("--course", type=_positive, help="the course of that generation (default: the current one)")
    p.add_argument("--message", help="the fork's first message instead of the one that generation answered")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_fork)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1, not {text!r}")
    return int(text)


def _fork(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient
    from dominds.cli.offline import locate_dialog, offline_engine, reach_state
    from dominds.cli.resolve import resolve_dialog_id

    rtws = workspace()
    self_id = resolve_dialog_id(rtws, args.dialog)
    _status, root_id = locate_dialog(rtws, self_id)
    if self_id != root_id:
        raise CliError(f"{self_id} is a subdialog of {root_id}; only a main dialog can be forked")
    body: dict[str, Any] = {"genseq": args.genseq}
    if args.course is not None:
        body["course"] = args.course
    if args.message is not None:
        body["message"] = args.message
    with reach_state(rtws) as access:
        if access.daemon is None:
            from dominds.driver.fork import fork_root

            with offline_engine(rtws) as engine:  # (turns the engine's refusals into the CLI's errors)
                fork = fork_root(engine, root_id, genseq=args.genseq, course=args.course, message=args.message)
                origin = fork.meta.forked_from
                result = {"selfId": fork.self_id, "rootId": fork.root_id, "agentId": fork.agent_id,
                          "forkedFrom": origin.to_disk() if origin else None}
            return _report(result, args.json, queued=True)
        daemon = access.daemon

    async def via_daemon() -> dict[str, Any]:
        async with DaemonClient(daemon) as client:
            answer: dict[str, Any] = await client.post(f"/api/dialogs/{root_id}/fork", body)
            return answer

    return _report(asyncio.run(via_daemon()), args.json, queued=False)


def _report(result: dict[str, Any], as_json: bool, *, queued: bool) -> int:
    if as_json:
        print(json.dumps({**result, "queued": queued}))
        return 0
    me = command_name()
    origin = result.get("forkedFrom") or {}
    where = f"generation {origin.get('genseq')} of course {origin.get('course')} of {origin.get('rootId')}"
    print(f"dialog {result['rootId']} forked from {where}")
    if queued:
        print(f"the next `{me} serve` runs it (no daemon is running); watch it with `{me} show {result['rootId']} --follow`")
    else:
        print(f"watch it with `{me} show {result['rootId']} --follow`")
    return 0
