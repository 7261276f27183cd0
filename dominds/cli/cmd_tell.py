"""`dominds tell DIALOG "message"` and `dominds new --agent A --taskdoc T "message"`.

Through the daemon's API when one runs. Without one the message is queued in the dialog's files
under the workspace lock (``offline.py``): the next ``dominds serve`` drives it, or ``--follow``
drives it right here and streams the reply like ``dominds run``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import TYPE_CHECKING

from dominds.cli.attach import add_image_flag, read_pictures, with_pictures
from dominds.cli.common import command_name, text_argument, workspace
from dominds.cli.drive_here import drive_in_process
from dominds.cli.follow import Plan, message_sender, new_msg_id
from dominds.cli.follow_daemon import follow_via_daemon
from dominds.cli.keys import require_key_here
from dominds.cli.resolve import TASKDOC_HELP, chosen_taskdoc

if TYPE_CHECKING:
    from dominds.driver.engine import Engine

TELL_EPILOG = """\
examples:
  dominds tell 0mi7x2k3a-9f3c "Now write the tests"
  dominds tell 0mi7x2k3a-9f3c "Go on" --follow      stream the reply until idle or a question
  dominds tell 0mi7x2k3a-9f3c "What is wrong here?" --image shot.png
exit status with --follow: 0 idle, 3 waiting for your answer, 1 stopped or failed.
"""
NEW_EPILOG = """\
examples:
  dominds new "Research the demo task"                the Taskdoc: see --taskdoc
  dominds new --taskdoc tasks/demo.tsk "Research the demo task"
  dominds new --agent coder --taskdoc tasks/x.tsk "Fix the build" --follow
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tell = subparsers.add_parser(
        "tell",
        help="send a message to an existing dialog",
        description="Send MESSAGE to the dialog DIALOG (a root or a subdialog in run/). With a daemon it is "
        "driven at once; without one it is queued in the dialog's files and driven by the next `dominds serve` "
        "(or here, with --follow).",
        epilog=TELL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tell.add_argument("dialog", metavar="DIALOG", help="dialog id or a unique prefix of one (see `dominds status`)")
    tell.add_argument("message", metavar="MESSAGE", help="the message; `-` reads it from stdin")
    add_image_flag(tell)
    _output_flags(tell)
    tell.set_defaults(func=_tell)

    new = subparsers.add_parser(
        "new",
        help="start a new root dialog with a first message",
        description="Create a root dialog for AGENT on the Taskdoc TASKDOC and send it MESSAGE.",
        epilog=NEW_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    new.add_argument("message", metavar="MESSAGE", help="the first message; `-` reads it from stdin")
    new.add_argument("--taskdoc", metavar="PATH", help=TASKDOC_HELP)
    new.add_argument("--agent", metavar="ID", help="the agent (default: the team's default_responder)")
    _output_flags(new)
    new.set_defaults(func=_new)


def _output_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--follow", action="store_true", help="stream the reply until the dialog is idle or asks you")
    parser.add_argument("--json", action="store_true", help="print JSON (with --follow: one event per line)")


def _tell(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient, find_daemon
    from dominds.cli.offline import locate_dialog, queue_message, reach_state
    from dominds.cli.resolve import resolve_dialog_id

    rtws = workspace()
    self_id = resolve_dialog_id(rtws, args.dialog)
    pictures = read_pictures(args.image)
    text = text_argument(args.message)
    _status, root_id = locate_dialog(rtws, self_id)
    text = with_pictures(rtws, self_id, text, pictures)
    if args.follow and find_daemon(rtws) is None:

        def start(engine: Engine) -> Plan:
            dialog = engine.find_dialog(self_id)
            require_key_here(engine, dialog.agent_id)
            engine.submit_user_message(dialog, text, new_msg_id())
            return Plan(dialog.root_id, {dialog.self_id}, {dialog.self_id: dialog.agent_id})

        return asyncio.run(drive_in_process(rtws, start, json_mode=args.json))
    with reach_state(rtws) as access:
        if access.daemon is None:
            result = queue_message(rtws, self_id, text, new_msg_id())
            return _report(result, args.json, queued=True)
        daemon = access.daemon

    async def via_daemon() -> int:
        async with DaemonClient(daemon) as client:
            if args.follow:
                send = message_sender(client, self_id, text)
                return await follow_via_daemon(client, [self_id], root_id, send=send, json_mode=args.json)
            reply = await client.post(f"/api/dialogs/{self_id}/messages", {"content": text, "msgId": new_msg_id()})
            return _report(reply, args.json, queued=False)

    return asyncio.run(via_daemon())


def _new(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient, find_daemon
    from dominds.cli.offline import create_root, reach_state

    rtws = workspace()
    text = text_argument(args.message)
    taskdoc = chosen_taskdoc(rtws, args.taskdoc, quiet=args.json)
    if args.follow and find_daemon(rtws) is None:

        def start(engine: Engine) -> Plan:
            require_key_here(engine, args.agent)
            root = engine.create_dialog(args.agent, taskdoc)
            engine.submit_user_message(root, text, new_msg_id())
            return Plan(root.root_id, {root.self_id}, {root.self_id: root.agent_id})

        return asyncio.run(drive_in_process(rtws, start, json_mode=args.json))
    with reach_state(rtws) as access:
        if access.daemon is None:
            root = create_root(rtws, args.agent, taskdoc, text, new_msg_id())
            return _report(root, args.json, queued=True, created=True)
        daemon = access.daemon

    async def via_daemon() -> int:
        async with DaemonClient(daemon) as client:
            body = {"taskDocPath": taskdoc, **({"agentId": args.agent} if args.agent else {})}
            root = await client.post("/api/dialogs", body)
            if args.follow:
                send = message_sender(client, root["rootId"], text)
                return await follow_via_daemon(client, [root["rootId"]], root["rootId"], send=send, json_mode=args.json)
            reply = await client.post(f"/api/dialogs/{root['rootId']}/messages", {"content": text, "msgId": new_msg_id()})
            return _report({**root, **reply}, args.json, queued=False, created=True)

    return asyncio.run(via_daemon())


def _report(result: dict[str, object], as_json: bool, *, queued: bool, created: bool = False) -> int:
    if as_json:
        print(json.dumps({**result, "queued": queued}))
        return 0
    self_id = result["selfId"]
    if created:
        from dominds.cli.render import at

        print(f"created root dialog {self_id} ({at(result.get('agentId'))}, {result.get('taskDocPath')})")
    if queued:
        print(f"message {result['msgId']} queued for {self_id}; no daemon is running: `{command_name()} serve` drives it "
              f"(or add --follow to drive it now)")
    else:
        print(f"message {result['msgId']} sent to {self_id}; watch it with `{command_name()} show {self_id} --follow`")
    return 0
