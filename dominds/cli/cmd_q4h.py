"""`dominds q4h` (pending questions for the human) and `dominds answer QUESTION_ID "text"`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from dominds.cli.cmd_run import Plan, drive_in_process, follow_via_daemon, message_text, new_msg_id
from dominds.cli.common import CliError, workspace

if TYPE_CHECKING:
    from dominds.driver.engine import Engine

Q4H_EPILOG = """\
examples:
  dominds q4h
  dominds q4h --json | jq -r '.questions[].id'
"""
ANSWER_EPILOG = """\
examples:
  dominds answer q4h-0mi7x2k3a-9f3c-1a2b3c4d "Blue, please"
  dominds answer q4h-0mi7x2k3a-9f3c-1a2b3c4d "Blue" --follow    stream the dialog until it rests again
exit status with --follow: 0 idle, 3 waiting for another answer, 1 stopped or failed.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    q4h = subparsers.add_parser(
        "q4h",
        help="list the questions agents are waiting for you to answer",
        description="List every pending question for the human (Q4H) in run/, oldest first.",
        epilog=Q4H_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    q4h.add_argument("--json", action="store_true", help="print {questions: [...]} as JSON")
    q4h.set_defaults(func=_q4h)

    answer = subparsers.add_parser(
        "answer",
        help="answer a pending question; the dialog goes on",
        description="Answer the question QUESTION_ID (see `dominds q4h`). With a daemon the dialog resumes at "
        "once; without one the answer is queued and the next `dominds serve` resumes it (or here, with --follow).",
        epilog=ANSWER_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    answer.add_argument("question_id", metavar="QUESTION_ID")
    answer.add_argument("text", metavar="TEXT", help="the answer; `-` reads it from stdin")
    answer.add_argument("--follow", action="store_true", help="stream the dialog until it is idle or asks again")
    answer.add_argument("--json", action="store_true", help="print JSON (with --follow: one event per line)")
    answer.set_defaults(func=_answer)


def _q4h(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient
    from dominds.cli.offline import pending_questions, reach_state

    rtws = workspace()
    with reach_state(rtws, read_only=True) as access:
        if access.daemon is None:
            questions = pending_questions(rtws)
        else:
            daemon = access.daemon

            async def fetch() -> list[dict[str, Any]]:
                async with DaemonClient(daemon) as client:
                    return list((await client.get("/api/q4h"))["questions"])

            questions = asyncio.run(fetch())
    if args.json:
        print(json.dumps({"questions": questions}, ensure_ascii=False, indent=1))
        return 0
    _print_questions(questions)
    return 0


def _print_questions(questions: list[dict[str, Any]]) -> None:
    from dominds.cli.render import Style, age

    style = Style.for_stream(sys.stdout)
    if not questions:
        print("no pending questions")
        return
    for question in questions:
        print(style(question["id"], "bold") + style(f"  asked {age(question.get('askedAt'))}", "dim"))
        print(f"  @{question.get('agentId')} in dialog {question.get('selfId')} (root {question.get('rootId')}, "
              f"{question.get('taskDocPath')})")
        print("  " + style(str(question.get("tellaskHead", "")).strip(), "yellow"))
        for line in str(question.get("bodyContent") or "").strip().splitlines():
            print(f"    {line}")
    print(style(f'\nanswer with: dominds answer {questions[0]["id"]} "your answer"', "dim"))


def _answer(args: argparse.Namespace) -> int:
    from dominds.cli.client import DaemonClient, find_daemon
    from dominds.cli.offline import queue_answer, reach_state

    rtws = workspace()
    text = message_text(args.text)
    msg_id = new_msg_id()
    if args.follow and find_daemon(rtws) is None:

        def start(engine: Engine) -> Plan:
            dialog = engine.answer_question(args.question_id, text, msg_id)
            followed = {dialog.self_id, dialog.root_id}
            return Plan(dialog.root_id, followed, {d.self_id: d.agent_id for d in dialog.root.local.values()})

        return asyncio.run(drive_in_process(rtws, start, json_mode=args.json))
    with reach_state(rtws) as access:
        if access.daemon is None:
            result = queue_answer(rtws, args.question_id, text, msg_id)
            return _report(result, args.json, queued=True)
        daemon = access.daemon

    async def via_daemon() -> int:
        async with DaemonClient(daemon) as client:
            path = f"/api/q4h/{args.question_id}/answer"
            if not args.follow:
                return _report(await client.post(path, {"content": text, "msgId": msg_id}), args.json, queued=False)
            pending = {q["id"]: q for q in (await client.get("/api/q4h"))["questions"]}
            question = pending.get(args.question_id)
            if question is None:
                raise CliError(f"question {args.question_id!r} is not pending (already answered, or unknown); see `dominds q4h`")

            async def send() -> str:
                await client.post(path, {"content": text, "msgId": msg_id})
                return msg_id

            followed = list(dict.fromkeys([question["selfId"], question["rootId"]]))
            return await follow_via_daemon(client, followed, question["rootId"], send=send, json_mode=args.json)

    return asyncio.run(via_daemon())


def _report(result: dict[str, Any], as_json: bool, *, queued: bool) -> int:
    if as_json:
        print(json.dumps({**result, "queued": queued}))
        return 0
    if queued:
        print(f"answer to {result['questionId']} queued for dialog {result['selfId']}; no daemon is running: "
              "`dominds serve` resumes the dialog (or add --follow to resume it now)")
    else:
        print(f"answered {result['questionId']}; dialog {result['selfId']} goes on "
              f"(watch it with `dominds show {result['selfId']} --follow`)")
    return 0
