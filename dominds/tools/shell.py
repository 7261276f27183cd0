"""The ``os`` toolset: ``shell_cmd`` runs one command with ``bash -lc`` in the workspace root.

A shell can do anything the daemon's user can, so it is not confined by ``check_access``; that is why the
driver hands ``shell_cmd`` only to members listed in ``shell_specialists`` (``SHELL_TOOLS`` in
``dominds/driver/tool_exec.py``, which is why the name must stay ``shell_cmd``).

The command runs in a new session, i.e. its own process group, so that everything it starts can be
stopped together. There is no daemon tracking (the reference's ``stop_daemon``/``get_daemon_output``):
when the command exits, times out or the call is cancelled, whatever is still running in its process
group is terminated. A process that leaves the group on purpose (``setsid``, a double fork into a new
session) is beyond that reach.

Output (stdout and stderr interleaved, as a terminal shows them) is captured with bounded memory: the
first and last ``OUTPUT_SIDE_BYTES`` are kept and the middle is counted, because builds and test runs
put the verdict at the end and the first error near the start.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from typing import Any

from dominds.tools.base import FuncTool, ToolCallContext, ToolError, object_schema

DEFAULT_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 600
OUTPUT_SIDE_BYTES = 16 * 1024
"""Bytes of output kept from the start and from the end; the result stays below ~32 KiB of text."""
TERMINATE_GRACE_SECONDS = 1.0
"""Between SIGTERM and SIGKILL: time for a process to clean up (temp files, child processes)."""
READ_CHUNK = 64 * 1024


class BoundedCapture:
    """Keeps the head and the tail of a byte stream and counts everything."""

    def __init__(self, side_bytes: int = OUTPUT_SIDE_BYTES) -> None:
        self.side_bytes = side_bytes
        self.head = bytearray()
        self.tail = bytearray()
        self.total_bytes = 0

    def feed(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        room = self.side_bytes - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.side_bytes)]

    @property
    def omitted_bytes(self) -> int:
        return self.total_bytes - len(self.head) - len(self.tail)

    def render(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if not self.omitted_bytes:
            return head + tail
        return f"{head}\n[… {self.omitted_bytes} bytes of output omitted …]\n{tail}"

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(READ_CHUNK):
            self.feed(chunk)


def process_group_alive(pgid: int) -> bool:
    """Does the group still have a running (non-zombie) member?"""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # the id was reused by someone else's group: ours is gone
        return False
    # killpg also succeeds for zombies. An orphaned child is re-parented to PID 1, which in a container
    # may reap late or never; waiting for it would cost every call the whole grace period.
    return _group_has_running_member(pgid)


def _group_has_running_member(pgid: int) -> bool:
    try:
        entries = os.listdir("/proc")
    except OSError:  # no procfs (macOS): trust killpg
        return True
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                # fields after "(comm)": state ppid pgrp ...; comm may contain spaces and parentheses
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


async def terminate_group(pgid: int, grace: float = TERMINATE_GRACE_SECONDS) -> None:
    """SIGTERM the process group, then SIGKILL whatever is still there after ``grace`` seconds."""
    if not process_group_alive(pgid):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        if not process_group_alive(pgid):
            return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    # SIGKILL is delivered asynchronously: a killed process closes its files (so the output pipe reports
    # its end) before it becomes a zombie, and on a busy machine it can still be running when the call
    # returns. The call promises that nothing it started is left, so it waits for that, bounded: a
    # process stuck in the kernel (uninterruptible sleep) cannot be waited out.
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not process_group_alive(pgid):
            return
        await asyncio.sleep(0.01)


def kill_group_now(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def shell_cmd(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    command = str(args["command"])
    if not command.strip():
        raise ToolError("`command` is empty")
    timeout = float(args.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS))
    timeout = max(0.1, min(float(MAX_TIMEOUT_SECONDS), timeout))
    started = time.monotonic()
    try:
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-lc",
            command,
            cwd=ctx.rtws.root,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # own process group: the whole tree can be signalled at once
        )
    except OSError as exc:  # no bash, or the workspace root vanished
        raise ToolError(f"cannot start bash: {exc.strerror or exc}") from exc
    pgid = process.pid
    assert process.stdout is not None
    capture = BoundedCapture()
    reader = asyncio.create_task(capture.drain(process.stdout))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            timed_out = True
        # Leftovers (background jobs, or the whole tree on timeout) would outlive the call unobserved and
        # keep the output pipe open; nothing tracks them, so they end with the call.
        await terminate_group(pgid)
        await process.wait()
        # The pipe closes once every holder is gone; a grandchild that escaped the group could keep it
        # open forever, so the drain is bounded too.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), TERMINATE_GRACE_SECONDS)
    except BaseException:  # cancelled (the dialog was stopped) or failed: no process may be left behind
        kill_group_now(pgid)
        # Reap it too: an unreaped child keeps its transport open until garbage collection, which then
        # complains from a finalizer at an arbitrary point. A second cancellation only cuts this short.
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(process.wait(), TERMINATE_GRACE_SECONDS)
        raise
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    duration = time.monotonic() - started
    output = capture.render()
    summary = [
        f"exit_code: {process.returncode}",
        f"duration: {duration:.2f}s",
        f"output: {capture.total_bytes} bytes" + (" (head and tail shown)" if capture.omitted_bytes else ""),
    ]
    if timed_out:
        summary.insert(0, f"timed out after {timeout:g}s: the command and everything it started were killed")
        raise ToolError("\n".join([*summary, "", output]).rstrip())
    return "\n".join([*summary, "", output]).rstrip()


OS_TOOLS = [
    FuncTool(
        "shell_cmd",
        "Run a shell command with `bash -lc` in the workspace root and return its exit code, duration and "
        "output (stdout and stderr together; long output keeps its start and end). Anything still running "
        "when the command exits or times out is killed: there are no background daemons.",
        object_schema(
            {
                "command": {"type": "string"},
                "timeout_seconds": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": MAX_TIMEOUT_SECONDS,
                    "default": DEFAULT_TIMEOUT_SECONDS,
                },
            },
            ["command"],
        ),
        shell_cmd,
    ),
]

