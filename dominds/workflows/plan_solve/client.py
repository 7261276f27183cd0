"""``dominds plan-solve client``: the counterpart of the origin's ``scripts/ws_print_messages.py``.

Connects, creates a session, sends the question and prints every event as one JSON line until the run
ends (``agent.final_answer``, ``agent.error``, ``agent.timeout`` or ``agent.interrupted``). Plan
confirmations are answered automatically (``--auto-confirm-plan``, optionally with the tasks of
``--confirm-plan-tasks-file``), interactively on the terminal (default; ``--confirm-timeout`` counts as
declined), or not at all (``--no-interactive-confirm``: the server's own timeout decides).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from dominds.workflows.plan_solve.events import ends_run

AskUser = Callable[[str, float], Awaitable[str | None]]
"""``ask(prompt, timeout)``: a line typed by the user, or None on timeout/end of input."""


@dataclass(frozen=True)
class ClientOptions:
    url: str
    question: str
    token: str | None = None
    cancel_after: float | None = None
    auto_confirm_plan: bool = False
    confirm_plan_tasks: list[Any] | None = None
    """Tasks sent with an automatic or interactive confirmation (from ``--confirm-plan-tasks-file``)."""
    interactive_confirm: bool = True
    confirm_timeout: float = 300.0


def load_tasks_file(path: Path) -> list[Any]:
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read the tasks file {path}: {exc}") from exc
    if not isinstance(tasks, list):
        raise ValueError(f"the tasks file {path} must hold a JSON array of tasks")
    return tasks


async def run_client(
    options: ClientOptions, out: Callable[[str], None], ask_user: AskUser | None = None
) -> int:
    """Returns 0 when the run ended with a final answer or was cancelled as asked, else 1."""
    ask = ask_user or read_terminal_line
    headers = {"Authorization": f"Bearer {options.token}"} if options.token else {}
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(options.url, headers=headers, max_msg_size=0) as ws,
    ):
        await ws.send_json({"event": "user.create_session"})
        session_id: str | None = None
        canceller: asyncio.Task[None] | None = None
        try:
            async for frame in ws:
                if frame.type != aiohttp.WSMsgType.TEXT:
                    break
                out(frame.data)
                message = json.loads(frame.data)
                event = message.get("event")
                if event == "agent.session_created" and session_id is None:
                    session_id = message["session_id"]
                    await ws.send_json(
                        {"event": "user.message", "session_id": session_id, "content": options.question}
                    )
                    if options.cancel_after is not None:
                        canceller = asyncio.create_task(_cancel_later(ws, session_id, options.cancel_after))
                elif event == "agent.user_confirm" and session_id is not None:
                    reply = await _confirmation_reply(message, options, ask)
                    if reply is not None:
                        await ws.send_json(
                            {
                                "event": "user.response",
                                "session_id": session_id,
                                "step_id": message["step_id"],
                                "content": reply,
                            }
                        )
                elif ends_run(message) and message.get("session_id") == session_id:
                    return (
                        0
                        if event == "agent.final_answer"
                        or (event == "agent.interrupted" and options.cancel_after is not None)
                        else 1
                    )
        finally:
            if canceller is not None:  # awaited: a send that failed (the socket closed first) is read here
                canceller.cancel()
                with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError, ConnectionError, RuntimeError):
                    await canceller
    # the server closed the socket before the run ended (a daemon stopped or crashed): say so, on stderr
    # (stdout carries only the service's events)
    print(f"the service at {options.url} closed the connection before the run ended: the run is interrupted", file=sys.stderr)
    return 1


async def _cancel_later(ws: aiohttp.ClientWebSocketResponse, session_id: str, delay: float) -> None:
    await asyncio.sleep(delay)
    await ws.send_json({"event": "user.cancel", "session_id": session_id})


async def _confirmation_reply(
    message: dict[str, Any], options: ClientOptions, ask: AskUser
) -> dict[str, Any] | None:
    metadata = message.get("metadata") or {}
    is_plan = metadata.get("scope") == "plan"
    with_tasks = {"tasks": options.confirm_plan_tasks} if options.confirm_plan_tasks is not None else {}
    if is_plan and options.auto_confirm_plan:
        return {"confirmed": True, **with_tasks}
    if not options.interactive_confirm:
        return None
    if is_plan:
        prompt = "Confirm the plan? [y]es / [n]o / path to a JSON tasks file: "
    else:
        prompt = f"Allow tool {metadata.get('tool_name')} ({metadata.get('tool_description', '')})? [y/n]: "
    answer = await ask(prompt, options.confirm_timeout)
    if answer is None:
        return {"confirmed": False, "reason": "timeout"}
    word = answer.strip()
    if word.lower() in ("y", "yes", ""):
        return {"confirmed": True, **(with_tasks if is_plan else {})}
    if is_plan and word.lower() not in ("n", "no"):
        try:
            tasks = await asyncio.to_thread(lambda: load_tasks_file(Path(word).expanduser()))
            return {"confirmed": True, "tasks": tasks}
        except ValueError as exc:
            print(f"{exc}; declining the plan", file=sys.stderr)
    return {"confirmed": False}


async def read_terminal_line(prompt: str, timeout: float) -> str | None:
    """A line from stdin without blocking the event loop (None on timeout or end of input)."""
    print(prompt, end="", file=sys.stderr, flush=True)
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str] = loop.create_future()

    def on_readable() -> None:
        if not line.done():
            line.set_result(sys.stdin.readline())

    try:
        loop.add_reader(sys.stdin.fileno(), on_readable)
    except (NotImplementedError, ValueError, OSError):  # no reader support (Windows): give up waiting
        return None
    try:
        text = await asyncio.wait_for(line, timeout)
    except TimeoutError:
        print("\n(no answer: timed out)", file=sys.stderr)
        return None
    finally:
        loop.remove_reader(sys.stdin.fileno())
    return text.rstrip("\n") if text else None
