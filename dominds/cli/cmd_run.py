"""`dominds run`: a headless turn — start a root dialog and stream it until it rests (see ``follow.py``)."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from dominds.cli.attach import add_image_flag, read_pictures, with_pictures
from dominds.cli.common import text_argument, workspace
from dominds.cli.drive_here import drive_in_process
from dominds.cli.follow import Plan, message_sender, new_msg_id
from dominds.cli.follow_daemon import follow_via_daemon
from dominds.cli.keys import require_key_here
from dominds.cli.resolve import TASKDOC_HELP, chosen_taskdoc

if TYPE_CHECKING:
    from dominds.driver.engine import Engine

EPILOG = """\
examples:
  dominds run "Research the demo task"
  dominds run --taskdoc tasks/demo.tsk "Research the demo task"
  dominds run --agent coder --taskdoc tasks/x.tsk "Fix the failing test" --json > events.jsonl
  echo "long prompt" | dominds run --taskdoc tasks/x.tsk -
  dominds run --image screenshot.png "What does this error dialog say?"
exit status: 0 idle, 3 waiting for your answer (`dominds answer`), 1 stopped or failed.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "run",
        help="start a root dialog and stream it until it is idle or asks you a question",
        description="Headless: create a root dialog, send MESSAGE and stream the reply (thinking, Tellask calls, "
        "tools, teammates' progress) until the dialog is idle or waits for your answer. Uses the running daemon "
        "when there is one; otherwise drives the dialog in this process.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("message", metavar="MESSAGE", help="the message; `-` reads it from stdin")
    p.add_argument("--taskdoc", metavar="PATH", help=TASKDOC_HELP)
    p.add_argument("--agent", metavar="ID", help="the agent (default: the team's default_responder)")
    p.add_argument("--json", action="store_true", help="print every event as a JSON line, then the outcome")
    add_image_flag(p)
    p.set_defaults(func=_run)



def _run(args: argparse.Namespace) -> int:
    from dominds.cli import config_notice
    from dominds.cli.client import DaemonClient, find_daemon
    from dominds.cli.render import at

    rtws = workspace()
    pictures = read_pictures(args.image)
    text = text_argument(args.message)
    taskdoc = chosen_taskdoc(rtws, args.taskdoc, quiet=args.json)
    daemon = find_daemon(rtws)
    if daemon is None:

        def start(engine: Engine) -> Plan:
            config_notice.warn(engine.config.get().problems)
            require_key_here(engine, args.agent)
            root = engine.create_dialog(args.agent, taskdoc)
            engine.submit_user_message(root, with_pictures(rtws, root.self_id, text, pictures), new_msg_id())
            return Plan(root.root_id, {root.self_id}, {root.self_id: root.agent_id})

        return asyncio.run(drive_in_process(rtws, start, json_mode=args.json))

    async def via_daemon() -> int:
        async with DaemonClient(daemon) as client:
            await config_notice.warn_from_daemon(client)
            body = {"taskDocPath": taskdoc, **({"agentId": args.agent} if args.agent else {})}
            root = await client.post("/api/dialogs", body)
            root_id = root["rootId"]
            if not args.json:
                print(f"(dialog {root_id}, {at(root.get('agentId'))}, on the daemon {daemon.describe()})", flush=True)
            message = with_pictures(rtws, root_id, text, pictures)
            return await follow_via_daemon(
                client, [root_id], root_id, send=message_sender(client, root_id, message), json_mode=args.json
            )

    return asyncio.run(via_daemon())
