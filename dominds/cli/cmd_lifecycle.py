"""`dominds done ROOT`, `dominds archive ROOT`, `dominds revive ROOT`: move a root tree between lists.

The directory a root lives in is its status (``run/``, ``done/``, ``archive/``); a move renames the
whole tree. Through the daemon when one runs (it refuses to move a tree that is being driven),
otherwise under the workspace lock.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from dominds.cli.common import workspace

MOVES = {
    "done": ("done", "mark a root dialog done (moves its tree to .dialogs/done/)"),
    "archive": ("archive", "archive a root dialog (moves its tree to .dialogs/archive/)"),
    "revive": ("run", "bring a done or archived root dialog back to run/"),
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for command, (to_status, summary) in MOVES.items():
        p = subparsers.add_parser(
            command,
            help=summary,
            description=f"{summary[0].upper()}{summary[1:]}. Subdialogs, registry and queues move with it.",
            epilog=f"example:\n  dominds {command} 0mi7x2k3a-9f3c",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument("root", metavar="ROOT", help="root dialog id or a unique prefix of one (see `dominds status --all`)")
        p.add_argument("--json", action="store_true", help="print {rootId, fromStatus, toStatus} as JSON")
        p.set_defaults(func=_move, to_status=to_status)


def _move(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient
    from dominds.cli.common import CliError
    from dominds.cli.offline import locate_dialog, move_root, reach_state
    from dominds.cli.resolve import resolve_dialog_id

    rtws = workspace()
    wanted = resolve_dialog_id(rtws, args.root)
    _status, root_id = locate_dialog(rtws, wanted)
    if root_id != wanted:
        raise CliError(f"{wanted} is a subdialog of {root_id}; only root dialogs move between lists")
    with reach_state(rtws) as access:
        if access.daemon is None:
            from_status = move_root(rtws, root_id, args.to_status)
        else:
            daemon = access.daemon

            async def move() -> str:
                async with DaemonClient(daemon) as client:
                    reply = await client.post("/api/dialogs/move", {"rootId": root_id, "toStatus": args.to_status})
                    return str(reply["fromStatus"])

            from_status = asyncio.run(move())
    if args.json:
        print(json.dumps({"rootId": root_id, "fromStatus": from_status, "toStatus": args.to_status}))
    elif from_status == args.to_status:
        print(f"{root_id} is already in {args.to_status}/")
    else:
        print(f"{root_id}: {from_status}/ → {args.to_status}/")
    return 0
