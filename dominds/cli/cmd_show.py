"""`dominds show DIALOG`: a dialog's transcript rendered for a terminal.

The transcript is the replay of one course (``server/replay.py``: the same events a panel gets), from
the daemon's API when one runs (it adds the segment being streamed right now) or from the files.
Reading the files needs no lock: state files are replaced atomically and course files only grow
(a torn last line is skipped). ``--follow`` joins the daemon's live stream until the dialog rests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from dominds.cli.common import CliError, command_name, workspace
from dominds.rtws import Rtws

EPILOG = """\
examples:
  dominds show 0mi7x2k3a-9f3c
  dominds show 0mi7x2k3a-9f3c --course 1          an earlier course (after clear_mind)
  dominds show 0mi7x2k3a-9f3c --follow            live, until idle or a question for you
  dominds show 0mi7x2k3a-9f3c --json | jq '.events[].type'
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "show",
        help="print a dialog's transcript (thinking, Tellask calls, tools, teammates' answers)",
        description="Print the transcript of DIALOG (a root or a subdialog, any status): prompts, thinking "
        "(dimmed), what the agent said with its Tellask calls, function calls and results, teammates' "
        "responses, and pending questions. Shows the current course unless --course is given.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dialog", metavar="DIALOG", help="dialog id or a unique prefix of one (see `dominds status`)")
    p.add_argument("--course", type=int, metavar="N", help="show course N (default: the current course)")
    p.add_argument("--follow", action="store_true", help="then stream live events from the daemon until idle or a question")
    p.add_argument("--json", action="store_true", help="print the dialog and its events as JSON")
    p.set_defaults(func=_show)


def _show(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient, find_daemon
    from dominds.cli.offline import locate_dialog
    from dominds.cli.resolve import resolve_dialog_id

    rtws = workspace()
    self_id = resolve_dialog_id(rtws, args.dialog)
    _status, root_id = locate_dialog(rtws, self_id)
    daemon = find_daemon(rtws)
    if args.follow:
        if daemon is None:
            raise CliError(f"--follow needs a running daemon (`{command_name()} serve`); without one nothing changes")
        if args.course is not None:
            raise CliError("--follow shows the current course; leave out --course")
        from dominds.cli.follow_daemon import follow_via_daemon

        async def follow() -> int:
            async with DaemonClient(daemon) as client:
                view = await client.get(f"/api/dialogs/{self_id}", rootId=root_id)
                if not args.json:
                    _print_header(view)
                return await follow_via_daemon(
                    client, [self_id], root_id, send=None, json_mode=args.json, show_history=True
                )

        return asyncio.run(follow())
    if daemon is not None:

        async def fetch() -> dict[str, Any]:
            async with DaemonClient(daemon) as client:
                params = {"rootId": root_id, **({"course": str(args.course)} if args.course is not None else {})}
                view: dict[str, Any] = await client.get(f"/api/dialogs/{self_id}", **params)
                return view

        view = asyncio.run(fetch())
    else:
        from dominds.cli.client import lock_is_held
        from dominds.cli.offline import as_seen_now

        view = view_from_files(rtws, self_id, args.course)
        view["runState"] = as_seen_now(view["runState"], nobody_drives=not lock_is_held(rtws.lock_path))
    if args.json:
        json.dump(view, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return 0
    _print_view(view)
    return 0


def view_from_files(rtws: Rtws, self_id: str, course: int | None) -> dict[str, Any]:
    """What ``GET /api/dialogs/{selfId}`` answers, built read-only from the files."""
    from dominds.cli.offline import locate_dialog
    from dominds.dialog.model import Dialog, RootDialog, SubDialog
    from dominds.server.replay import replay_course
    from dominds.store.dialog_store import DialogStore
    from dominds.store.errors import StoreError
    from dominds.store.records import LatestState

    status, root_id = locate_dialog(rtws, self_id)
    files = DialogStore(rtws).files(status, root_id, self_id)
    try:
        meta = files.read_meta()
        latest = files.read_latest() or LatestState(last_modified=meta.created_at)
        current = latest.current_course
        wanted = current if course is None else course
        if not 1 <= wanted <= current:
            raise CliError(f"dialog {self_id} has courses 1..{current}, not {wanted}")

        def publish_nowhere(key: tuple[str, str] | None, event: dict[str, Any]) -> dict[str, Any]:
            return event

        # A Dialog built by hand, not by dialog.loader: the loader repairs torn course tails (a write),
        # which must never race a running daemon.
        dialog: Dialog = (
            RootDialog(files, meta, latest, publish_nowhere)
            if meta.is_root
            else SubDialog(files, meta, latest, publish_nowhere, None)
        )
        dialog.records = files.read_course(current) if wanted == current else []
        dialog.q4h = list(files.read_q4h().questions)
        events = replay_course(dialog, wanted, epoch="files", seq=0)
    except StoreError as exc:
        raise CliError(str(exc)) from exc
    view: dict[str, Any] = {
        "dialog": dialog.ident,
        "agentId": meta.agent_id,
        "taskDocPath": meta.task_doc_path,
        "status": status,
        "isRoot": meta.is_root,
        "currentCourse": current,
        "totalCourses": current,
        "runState": latest.run_state.to_disk(),
        "generating": latest.generating,
        "q4h": [
            {"id": q.id, "selfId": self_id, "rootId": root_id, "agentId": meta.agent_id, "tellaskHead": q.tellask_head,
             "bodyContent": q.body_content, "askedAt": q.asked_at}
            for q in dialog.q4h
        ],
        "events": events,
    }
    if meta.assignment_from_sup is not None:
        view["assignmentFromSup"] = meta.assignment_from_sup.to_disk()
    return view


def _print_header(view: dict[str, Any]) -> None:
    from dominds.cli.render import Style, at, styled_run_state

    style = Style.for_stream(sys.stdout)
    dialog = view["dialog"]
    where = "root" if dialog["selfId"] == dialog["rootId"] else f"subdialog of {dialog['rootId']}"
    print(
        f"{style(dialog['selfId'], 'bold')}  {at(view.get('agentId'))}  {where}  {view.get('status')}/  "
        f"{styled_run_state(style, view.get('runState'))}  {style(str(view.get('taskDocPath')), 'cyan')}"
    )
    assignment = view.get("assignmentFromSup")
    if assignment:
        print(style(f"  assigned by {at(assignment.get('originMemberId'))}: {assignment.get('tellaskHead', '').strip()}", "dim"))


def _print_view(view: dict[str, Any]) -> None:
    from dominds.cli.render import EventRenderer, Style, TranscriptWriter

    _print_header(view)
    dialog = view["dialog"]
    writer = TranscriptWriter(sys.stdout, Style.for_stream(sys.stdout))
    renderer = EventRenderer(
        writer, followed={dialog["selfId"]}, root_id=dialog["rootId"], agents={dialog["selfId"]: str(view.get("agentId"))}
    )
    for event in view.get("events", ()):
        renderer.feed(event)
    writer.end_line()
    for question in view.get("q4h", ()):
        renderer.question(question)
        writer.line(f'  answer with: {command_name()} answer {question["id"]} "your answer"', "dim")
