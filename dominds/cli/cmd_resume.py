"""`dominds resume DIALOG`: drive an interrupted dialog again (after a stop, an error fixed, a crash).

Through the daemon when one runs. Without one the resume is recorded in the dialog's files under the
workspace lock (``needsDrive``): the next ``dominds serve`` drives it, or ``--follow`` drives it here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import TYPE_CHECKING, Any

from dominds.cli.common import command_name, workspace
from dominds.cli.drive_here import drive_in_process
from dominds.cli.follow import Plan, drive_marker
from dominds.cli.follow_daemon import follow_via_daemon
from dominds.cli.keys import require_key_here

if TYPE_CHECKING:
    from dominds.driver.engine import Engine

EPILOG = """\
examples:
  dominds resume 0mi7x2k3a-9f3c
  dominds resume 0mi7 --follow        stream it until idle or a question (a unique id prefix is enough)
exit status with --follow: 0 idle, 3 waiting for your answer, 1 stopped or failed.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "resume",
        help="drive an interrupted dialog again (after a stop, a fixed error or a crash)",
        description="Resume DIALOG, a root or a subdialog in run/ that is interrupted. With a daemon it is driven "
        "at once; without one the resume is recorded and the next `dominds serve` drives it (or here, with --follow).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dialog", metavar="DIALOG", help="dialog id or a unique prefix of one (see `dominds status`)")
    p.add_argument("--follow", action="store_true", help="stream the dialog until it is idle or asks you")
    p.add_argument("--json", action="store_true", help="print JSON (with --follow: one event per line)")
    p.set_defaults(func=_resume)


def _resume(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient, find_daemon
    from dominds.cli.offline import locate_dialog, offline_engine, reach_state
    from dominds.cli.resolve import resolve_dialog_id

    rtws = workspace()
    self_id = resolve_dialog_id(rtws, args.dialog)
    _status, root_id = locate_dialog(rtws, self_id)
    if args.follow and find_daemon(rtws) is None:

        def start(engine: Engine) -> Plan:
            dialog = engine.find_dialog(self_id)
            require_key_here(engine, dialog.agent_id)
            engine.resume(dialog)
            return Plan(dialog.root_id, {dialog.self_id}, {dialog.self_id: dialog.agent_id})

        return asyncio.run(drive_in_process(rtws, start, json_mode=args.json))
    with reach_state(rtws) as access:
        if access.daemon is None:
            with offline_engine(rtws) as engine:
                engine.resume(engine.find_dialog(self_id))
            return _report({"selfId": self_id, "rootId": root_id}, args.json, queued=True)
        daemon = access.daemon

    async def via_daemon() -> int:
        async with DaemonClient(daemon) as client:
            path = f"/api/dialogs/{self_id}/resume?rootId={root_id}"
            if not args.follow:
                return _report(await client.post(path), args.json, queued=False)

            async def send() -> str:
                await client.post(path)
                return drive_marker(self_id)

            return await follow_via_daemon(client, [self_id], root_id, send=send, json_mode=args.json)

    return asyncio.run(via_daemon())


def _report(result: dict[str, Any], as_json: bool, *, queued: bool) -> int:
    if as_json:
        print(json.dumps({"selfId": result["selfId"], "rootId": result["rootId"], "queued": queued}))
        return 0
    me = command_name()
    if queued:
        print(f"dialog {result['selfId']} will be resumed by the next `{me} serve` (no daemon is running; "
              "add --follow to resume it here now)")
    else:
        print(f"dialog {result['selfId']} resumed; watch it with `{me} show {result['selfId']} --follow`")
    return 0
