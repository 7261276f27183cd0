"""shell_cmd: runs in the rtws root, bounded output, timeouts and cancellation leave no process behind."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from deadlines import until

from dominds.driver.tool_exec import SHELL_TOOLS
from dominds.rtws import Rtws
from dominds.tools import shell
from dominds.tools.base import ToolCallContext, ToolError
from dominds.tools.builtin import builtin_toolsets
from dominds.tools.shell import OS_TOOLS, OUTPUT_SIDE_BYTES, BoundedCapture, terminate_group
from tests.processes import running

SHELL = OS_TOOLS[0]


@pytest.fixture
def ctx(tmp_rtws: Rtws) -> ToolCallContext:
    return ToolCallContext(rtws=tmp_rtws, root_id="d1", self_id="d1", agent_id="coder")


async def run(ctx: ToolCallContext, **args: Any) -> str:
    jsonschema.validate(args, SHELL.parameters)
    return await SHELL.handler(ctx, args)


def read_pid(path: Path) -> int | None:
    text = path.read_text() if path.is_file() else ""
    return int(text) if text.strip() else None


async def wait_for_pid_file(path: Path) -> int:
    for _ in range(200):
        if (pid := read_pid(path)) is not None:
            return pid
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} was never written")


def test_shell_tools_are_exactly_what_the_driver_filters() -> None:
    assert builtin_toolsets().get("os") == OS_TOOLS
    assert {t.name for t in OS_TOOLS} <= SHELL_TOOLS  # so non-specialists never get them
    assert SHELL.parameters["properties"]["timeout_seconds"]["maximum"] == 600
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"command": "true", "timeout_seconds": 601}, SHELL.parameters)


async def test_runs_in_the_workspace_root_with_exit_code_and_duration(ctx: ToolCallContext) -> None:
    result = await run(ctx, command="pwd; echo to-stderr >&2; exit 3")
    lines = result.splitlines()
    assert lines[0] == "exit_code: 3"
    assert lines[1].startswith("duration: ") and lines[1].endswith("s")
    assert lines[4:] == [str(ctx.rtws.root.resolve()), "to-stderr"]


async def test_output_is_bounded_to_head_and_tail(ctx: ToolCallContext) -> None:
    result = await run(ctx, command="echo FIRST; head -c 3000000 /dev/zero | tr '\\0' a; echo; echo LAST")
    assert len(result) < 2 * OUTPUT_SIDE_BYTES + 500
    assert "output: 3000012 bytes (head and tail shown)" in result
    assert "\nFIRST\n" in result and result.endswith("\nLAST")
    assert "bytes of output omitted" in result


def test_capture_keeps_exact_head_and_tail() -> None:
    capture = BoundedCapture(side_bytes=4)
    for chunk in (b"ab", b"cdef", b"ghij"):
        capture.feed(chunk)
    assert (bytes(capture.head), bytes(capture.tail), capture.omitted_bytes) == (b"abcd", b"ghij", 2)
    assert capture.render() == "abcd\n[… 2 bytes of output omitted …]\nghij"


def written(path: Path) -> bool:
    return path.exists()


async def timed_out(ctx: ToolCallContext, command: str, started_file: Path) -> tuple[int, str, float]:
    """Run ``command`` with the shortest timeout by which it got as far as writing ``started_file``.

    A 1 s timeout is what the test means, but on a loaded machine (load 9, the suite in four workers) the
    shell had not yet started its child when the timeout fired, and the test found no pid file. Doubling
    the timeout until the command got that far keeps the test as strict on an idle machine and true on a
    busy one. Returns the timeout that was used, the tool's error message and how long that run took."""
    for seconds in (1, 2, 4, 8, 16):
        started = time.monotonic()
        with pytest.raises(ToolError) as info:
            await run(ctx, command=command, timeout_seconds=seconds)
        if written(started_file):
            return seconds, str(info.value), time.monotonic() - started
    raise AssertionError(f"the command never got as far as writing {started_file}")


async def test_timeout_kills_the_command_and_its_children(ctx: ToolCallContext, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    seconds, message, took = await timed_out(ctx, f"sleep 60 & echo $! > {pid_file}; echo started; wait", pid_file)
    assert took < 40, "what ended the command was the timeout, not the end of its `sleep 60`"
    assert message.startswith(f"timed out after {seconds}s") and "started" in message
    child = int(pid_file.read_text())
    assert not running(child)


async def test_a_child_ignoring_sigterm_is_killed_after_the_grace_period(
    ctx: ToolCallContext, tmp_path: Path
) -> None:
    pid_file = tmp_path / "stubborn.pid"
    # an ignored signal stays ignored across fork and exec, so `sleep` shrugs off SIGTERM too
    _, message, _ = await timed_out(ctx, f"trap '' TERM; sleep 60 & echo $! > {pid_file}; wait", pid_file)
    assert "timed out" in message
    assert not running(int(pid_file.read_text()))


async def test_terminate_group_returns_only_once_the_killed_group_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug: ``terminate_group`` returned right after its SIGKILL. A killed process closes its files
    (the output pipe ends) before it exits, so on CI at load ~10 the shell tool returned while the `sleep`
    that ignored SIGTERM was still running (``test_a_child_ignoring_sigterm_is_killed_after_the_grace_period``
    failed). A group that takes two more looks to die is waited for."""
    sent: list[int] = []
    looks_after_kill = 0

    def alive(pgid: int) -> bool:
        nonlocal looks_after_kill
        if signal.SIGKILL not in sent:
            return True  # ignores SIGTERM
        looks_after_kill += 1
        return looks_after_kill < 3

    monkeypatch.setattr(os, "killpg", lambda pgid, sig: sent.append(sig))
    monkeypatch.setattr(shell, "process_group_alive", alive)
    await terminate_group(4242, grace=0.05)
    assert sent == [signal.SIGTERM, signal.SIGKILL]
    assert looks_after_kill == 3, "returned before the group was seen gone"


async def test_background_leftovers_are_terminated_when_the_command_returns(
    ctx: ToolCallContext, tmp_path: Path
) -> None:
    pid_file = tmp_path / "bg.pid"
    result = await run(ctx, command=f"sleep 60 > /dev/null 2>&1 & echo $! > {pid_file}; echo done")
    assert result.startswith("exit_code: 0") and result.endswith("done")
    assert not running(int(pid_file.read_text()))


async def test_cancelling_the_call_kills_the_process_group(ctx: ToolCallContext, tmp_path: Path) -> None:
    pid_file = tmp_path / "cancel.pid"
    task = asyncio.create_task(run(ctx, command=f"sleep 60 & echo $! > {pid_file}; wait", timeout_seconds=60))
    child = await wait_for_pid_file(pid_file)
    assert running(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: not running(child), "the killed child is gone")  # SIGKILL is delivered asynchronously


async def test_empty_command_is_refused(ctx: ToolCallContext) -> None:
    with pytest.raises(ToolError, match="empty"):
        await run(ctx, command="   ")
