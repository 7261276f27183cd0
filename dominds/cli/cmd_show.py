"""`dominds show DIALOG`: a dialog's transcript rendered for a terminal.

The transcript is the replay of one course (``server/replay.py``: the same events a panel gets), from
the daemon's API when one runs (it adds the segment being streamed right now) or from the files. It is
paged like the panel: the course's last page by default, ``--before N`` the page ending at record N,
``--all`` every page in order, each fetched and printed in turn (memory bounded by a page).
Reading the files needs no lock: state files are replaced atomically and course files only grow
(a torn last line is skipped). ``--follow`` joins the daemon's live stream until the dialog rests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

from dominds.cli.common import CliError, command_name, workspace
from dominds.rtws import Rtws

EPILOG = """\
examples:
  dominds show 0mi7x2k3a-9f3c
  dominds show 0mi7x2k3a-9f3c --course 1          an earlier course (after clear_mind)
  dominds show 0mi7x2k3a-9f3c --all               the whole course, page by page
  dominds show 0mi7x2k3a-9f3c --before 1200       the page ending at record 1200
  dominds show 0mi7x2k3a-9f3c --follow            live, until idle or a question for you
  dominds show 0mi7x2k3a-9f3c --json | jq '.events[].type'
  dominds show 0mi7x2k3a-9f3c --request 3         what generation #3 sent to the model
  dominds show 0mi7x2k3a-9f3c --request 3 --raw   that request's body, byte for byte
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
    pages = p.add_mutually_exclusive_group()
    pages.add_argument("--all", action="store_true", help="the whole course, page by page (default: its last page)")
    pages.add_argument("--before", type=int, metavar="N", help="the page that ends at record N (see the first line printed)")
    p.add_argument("--follow", action="store_true", help="then stream live events from the daemon until idle or a question")
    p.add_argument("--json", action="store_true", help="print the dialog and its events as JSON")
    p.add_argument(
        "--request", type=int, metavar="GENSEQ",
        help="print the request generation GENSEQ (the #N on a reply) sent to the model: system prompt, messages, "
        "tools and parameters as sent, with its tokens, latency, retries and cost",
    )
    p.add_argument("--raw", action="store_true", help="with --request: only the body, exactly as it was sent")
    p.set_defaults(func=_show)


def _show(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient, find_daemon
    from dominds.cli.offline import locate_dialog
    from dominds.cli.resolve import resolve_dialog_id

    rtws = workspace()
    self_id = resolve_dialog_id(rtws, args.dialog)
    if args.request is not None:
        from dominds.cli.show_request import show_request

        return show_request(args, self_id)
    if args.raw:
        raise CliError("--raw goes with --request GENSEQ")
    _status, root_id = locate_dialog(rtws, self_id)
    daemon = find_daemon(rtws)
    if args.follow:
        if daemon is None:
            raise CliError(f"--follow needs a running daemon (`{command_name()} serve`); without one nothing changes")
        if args.course is not None:
            raise CliError("--follow shows the current course; leave out --course")
        if args.all or args.before is not None:
            raise CliError("--follow shows the current course's last page, then live events; leave out --all/--before")
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
    if args.before is not None and args.before < 0:
        raise CliError("--before takes a record index (0 or more)")
    fetch = _daemon_pages(daemon, self_id, root_id, args.course) if daemon is not None else _file_pages(rtws, self_id, args.course)
    if not args.all:
        view = fetch({} if args.before is None else {"before": args.before})
        if args.json:
            json.dump(view, sys.stdout, ensure_ascii=False, indent=1)
            sys.stdout.write("\n")
            return 0
        _print_view(view, first_page=True)
        return 0
    after = 0
    while True:  # page by page: never the whole course in memory
        view = fetch({"after": after})
        if args.json:
            sys.stdout.write(json.dumps(view, ensure_ascii=False) + "\n")
        else:
            _print_view(view, first_page=after == 0)
        if view["toRecord"] >= view["totalRecords"] or view["toRecord"] <= after:
            return 0
        after = view["toRecord"]


PageFetch = Callable[[dict[str, Any]], dict[str, Any]]


def _daemon_pages(daemon: Any, self_id: str, root_id: str, course: int | None) -> PageFetch:
    from dominds.cli.client import DaemonClient

    def fetch(where: dict[str, Any]) -> dict[str, Any]:
        async def get() -> dict[str, Any]:
            async with DaemonClient(daemon) as client:
                params = {"rootId": root_id, **({"course": str(course)} if course is not None else {})}
                params.update({key: str(value) for key, value in where.items()})
                view: dict[str, Any] = await client.get(f"/api/dialogs/{self_id}", **params)
                return view

        return asyncio.run(get())

    return fetch


def _file_pages(rtws: Rtws, self_id: str, course: int | None) -> PageFetch:
    from dominds.cli.client import lock_is_held
    from dominds.cli.offline import as_seen_now

    def fetch(where: dict[str, Any]) -> dict[str, Any]:
        view = view_from_files(rtws, self_id, course, **where)
        view["runState"] = as_seen_now(view["runState"], nobody_drives=not lock_is_held(rtws.lock_path))
        return view

    return fetch


def view_from_files(
    rtws: Rtws, self_id: str, course: int | None, *, before: int | None = None, after: int | None = None
) -> dict[str, Any]:
    """What ``GET /api/dialogs/{selfId}`` answers (one page), built read-only from the files."""
    from dominds.cli.offline import locate_dialog
    from dominds.dialog.model import Dialog, RootDialog, SubDialog
    from dominds.server.replay import replay_page
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
        page = replay_page(dialog, wanted, epoch="files", seq=0, before=before, after=after)
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
        "course": page.course,
        "fromRecord": page.start,
        "toRecord": page.end,
        "totalRecords": page.total,
        "events": page.events,
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


def _print_view(view: dict[str, Any], *, first_page: bool) -> None:
    from dominds.cli.render import EventRenderer, Style, TranscriptWriter

    dialog = view["dialog"]
    style = Style.for_stream(sys.stdout)
    if first_page:
        _print_header(view)
    start = int(view.get("fromRecord") or 0)
    if first_page and start > 0:
        print(
            style(
                f"  … records 0..{start - 1} of this course are earlier pages: "
                f"`{command_name()} show {dialog['selfId']} --before {start}` or `--all`",
                "dim",
            )
        )
    writer = TranscriptWriter(sys.stdout, style)
    renderer = EventRenderer(
        writer, followed={dialog["selfId"]}, root_id=dialog["rootId"], agents={dialog["selfId"]: str(view.get("agentId"))}
    )
    for event in view.get("events", ()):
        renderer.feed(event)
    writer.end_line()
    if int(view.get("toRecord") or 0) < int(view.get("totalRecords") or 0):
        return  # a page before the last: the questions come with the last
    for question in view.get("q4h", ()):
        renderer.question(question)
        writer.line(f'  answer with: {command_name()} answer {question["id"]} "your answer"', "dim")
