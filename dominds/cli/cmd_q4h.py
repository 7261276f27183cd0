"""`dominds q4h` (pending questions for the human) and `dominds answer QUESTION_ID "text"`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from dominds.cli.common import command_name, text_argument, workspace
from dominds.cli.drive_here import drive_in_process
from dominds.cli.follow import Plan, new_msg_id
from dominds.cli.follow_daemon import follow_via_daemon
from dominds.cli.keys import require_key_here

if TYPE_CHECKING:
    from dominds.cli.client import DaemonInfo
    from dominds.driver.engine import Engine

Q4H_EPILOG = """\
examples:
  dominds q4h
  dominds q4h --json | jq -r '.questions[].id'
"""
ANSWER_EPILOG = """\
examples:
  dominds answer "Blue, please"                            the only pending question
  dominds answer q4h-0mi7x2k3a-9f3c-1a2b3c4d "Blue, please"
  dominds answer 0mi7x2k3a "Blue, please"                  a unique prefix (`q4h-` may be left out)
  dominds answer q4h-0mi7x2k3a-9f3c-1a2b3c4d "Blue" --follow    stream the dialog until it rests again
exit status with --follow: 0 idle, 3 waiting for another answer, 1 stopped or failed.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    q4h = subparsers.add_parser(
        "q4h",
        help="list the questions agents are waiting for you to answer",
        description="List every question an agent is waiting for you to answer (in run/), oldest first.",
        epilog=Q4H_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    q4h.add_argument("--json", action="store_true", help="print {questions: [...]} as JSON")
    q4h.set_defaults(func=_q4h)

    answer = subparsers.add_parser(
        "answer",
        help="answer a pending question; the dialog goes on",
        description="Answer the question QUESTION_ID (see `dominds q4h`), or the only pending one when it is left out. With a daemon the dialog resumes at "
        "once; without one the answer is queued and the next `dominds serve` resumes it (or here, with --follow).",
        epilog=ANSWER_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    answer.add_argument(
        "question_id",
        metavar="QUESTION_ID",
        nargs="?",
        help="the question's id or a unique prefix of it (`q4h-` may be left out); "
        "leave it out when only one question is pending",
    )
    answer.add_argument("text", metavar="TEXT", help="the answer; `-` reads it from stdin")
    answer.add_argument("--follow", action="store_true", help="stream the dialog until it is idle or asks again")
    answer.add_argument("--json", action="store_true", help="print JSON (with --follow: one event per line)")
    answer.set_defaults(func=_answer)


def _q4h(args: argparse.Namespace) -> int:
    from dominds.cli.offline import pending_questions, reach_state

    rtws = workspace()
    with reach_state(rtws, read_only=True) as access:
        questions = pending_questions(rtws) if access.daemon is None else asyncio.run(_fetch_questions(access.daemon))
    if args.json:
        print(json.dumps({"questions": questions}, ensure_ascii=False, indent=1))
        return 0
    _print_questions(questions)
    return 0


def _print_questions(questions: list[dict[str, Any]]) -> None:
    from dominds.cli.render import Style, age, at

    style = Style.for_stream(sys.stdout)
    if not questions:
        print("no pending questions")
        return
    for question in questions:
        print(style(question["id"], "bold") + style(f"  asked {age(question.get('askedAt'))}", "dim"))
        print(f"  {at(question.get('agentId'))} in dialog {question.get('selfId')} (root {question.get('rootId')}, "
              f"{question.get('taskDocPath')})")
        print("  " + style(str(question.get("tellaskHead", "")).strip(), "yellow"))
        for line in str(question.get("bodyContent") or "").strip().splitlines():
            print(f"    {line}")
    target = "" if len(questions) == 1 else f"{questions[0]['id']} "
    print(style(f'\nanswer with: {command_name()} answer {target}"your answer"', "dim"))


def _answer(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient, find_daemon
    from dominds.cli.offline import pending_questions, queue_answer, reach_state
    from dominds.cli.resolve import resolve_question_id

    rtws = workspace()
    text = text_argument(args.text)
    msg_id = new_msg_id()
    daemon = find_daemon(rtws)
    if daemon is None:
        pending = pending_questions(rtws)
    else:
        pending = asyncio.run(_fetch_questions(daemon))
    question = resolve_question_id(pending, args.question_id)
    question_id = str(question["id"])
    if args.follow and daemon is None:

        def start(engine: Engine) -> Plan:
            require_key_here(engine, str(question["agentId"]))
            dialog = engine.answer_question(question_id, text, msg_id)
            followed = {dialog.self_id, dialog.root_id}
            return Plan(dialog.root_id, followed, {d.self_id: d.agent_id for d in dialog.root.local.values()})

        return asyncio.run(drive_in_process(rtws, start, json_mode=args.json))
    with reach_state(rtws) as access:
        if access.daemon is None:
            result = queue_answer(rtws, question_id, text, msg_id)
            return _report(result, args.json, queued=True)
        daemon = access.daemon

    async def via_daemon() -> int:
        async with DaemonClient(daemon) as client:
            path = f"/api/q4h/{question_id}/answer"
            if not args.follow:
                return _report(await client.post(path, {"content": text, "msgId": msg_id}), args.json, queued=False)

            async def send() -> str:
                await client.post(path, {"content": text, "msgId": msg_id})
                return msg_id

            followed = list(dict.fromkeys([question["selfId"], question["rootId"]]))
            return await follow_via_daemon(client, followed, question["rootId"], send=send, json_mode=args.json)

    return asyncio.run(via_daemon())


async def _fetch_questions(daemon: DaemonInfo) -> list[dict[str, Any]]:
    from dominds.cli.client import DaemonClient

    async with DaemonClient(daemon) as client:
        return list((await client.get("/api/q4h"))["questions"])


def _report(result: dict[str, Any], as_json: bool, *, queued: bool) -> int:
    if as_json:
        print(json.dumps({**result, "queued": queued}))
        return 0
    if queued:
        print(f"answer to {result['questionId']} queued for dialog {result['selfId']}; no daemon is running: "
              f"`{command_name()} serve` resumes the dialog (or add --follow to resume it now)")
    else:
        print(f"answered {result['questionId']}; dialog {result['selfId']} goes on "
              f"(watch it with `{command_name()} show {result['selfId']} --follow`)")
    return 0
