"""A daemon process for crash tests: an Engine on a workspace, driven by command-line flags.

Prints one line per interesting event (``ready``, ``streaming <selfId>``, ``q4h <id>``, ``idle``) so the
test can SIGKILL it at a chosen moment.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from dominds.driver.engine import Engine
from dominds.rtws import Rtws


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("rtws")
    parser.add_argument("--submit", action="append", default=[], help="send these user messages to a new root of agent lead")
    parser.add_argument("--answer-all", help="answer every pending question with this text")
    parser.add_argument("--answer-when-asked", help="answer each question with this text as soon as it is asked")
    parser.add_argument("--exit-when-idle", action="store_true")
    parser.add_argument("--no-resume", action="store_true")
    parser.add_argument("--log-info", action="store_true", help="print the engine's info log on stderr (recovery's summary)")
    args = parser.parse_args()
    if args.log_info:
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    engine = Engine(Rtws(Path(args.rtws)), resume=not args.no_resume)

    def on_event(event: dict) -> None:  # type: ignore[type-arg]
        kind = event.get("type")
        if kind in ("markdown_chunk_evt", "teammate_call_headline_chunk_evt"):
            print(f"streaming {event['dialog']['selfId']}", flush=True)
        elif kind == "new_q4h_asked":
            print(f"q4h {event['question']['id']}", flush=True)
            if args.answer_when_asked:
                question_id = event["question"]["id"]
                asyncio.get_running_loop().call_soon(
                    lambda: engine.answer_question(question_id, args.answer_when_asked, msg_id=f"answer-{question_id}")
                )
        elif kind == "subdialog_created_evt":
            print(f"subdialog {event['subDialog']['selfId']}", flush=True)

    engine.pubchan.subscribe(on_event, wants_all=True)
    await engine.start()
    print("ready", flush=True)
    if args.submit:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        print(f"root {root.root_id}", flush=True)
        for number, text in enumerate(args.submit, start=1):
            engine.submit_user_message(root, text, msg_id=f"crash-msg-{number}")
            await engine.durable()  # an acknowledgement waits for the write to be durable
            print(f"acked crash-msg-{number}", flush=True)
    if args.answer_all:
        for question in engine.q4h_state():
            engine.answer_question(question["id"], args.answer_all, msg_id=f"answer-{question['id']}")
    while True:
        await engine.wait_idle(timeout=60)
        # A question published as the work settled is answered by the event handler above (call_soon):
        # idle means no question left to answer and no drive that answer started (not "idle once").
        await asyncio.sleep(0)
        if engine.scheduler.idle.is_set() and not (args.answer_when_asked and engine.q4h_state()):
            break
    print("idle", flush=True)
    if args.exit_when_idle:
        await engine.close()
        return
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
