"""Run ``crash_daemon.py`` in a real child process that skips the interpreter's start and the imports.

The crash-point sweep starts one daemon per crash point (hundreds per run). As a fresh interpreter each
paid ~1 s of CPU importing the engine before its first durable step, most of a point's cost. Here a
multiprocessing *forkserver* imports the engine once (single-threaded, nothing run) and forks a child for
each point. The child is still its own process: it writes the workspace's files, SIGKILLs itself at the
chosen durable step (``store/crashpoints``), and what it acknowledged is read from its output, exactly
as from ``python crash_daemon.py``; only the imports were done before the fork.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["dominds.driver.engine", "dominds.store.crashpoints", "crash_daemon"])


@dataclass
class Finished:
    returncode: int
    """0 when the run ended by itself, -9 when it killed itself at its crash point (as subprocess says)."""
    stdout: str
    stderr: str


def run_crash_daemon(argv: list[str], crash_at: int, timeout: float = 120.0) -> Finished:
    """``python crash_daemon.py ARGV`` with ``DOMINDS_CRASH_AT=crash_at``, in a forked child."""
    with tempfile.TemporaryDirectory(prefix="crash-run-") as scratch:
        out, err = Path(scratch) / "stdout", Path(scratch) / "stderr"
        child = _CONTEXT.Process(target=_child, args=(argv, crash_at, dict(os.environ), str(out), str(err)))
        child.start()
        child.join(timeout)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise TimeoutError(f"crash_daemon {argv} did not finish within {timeout} s")
        return Finished(child.exitcode, out.read_text(), err.read_text())


def _child(argv: list[str], crash_at: int, environ: dict[str, str], out_path: str, err_path: str) -> None:
    # The test's environment at this moment (the forkserver kept the one it started with).
    os.environ.clear()
    os.environ.update(environ)
    for fd, path in ((1, out_path), (2, err_path)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    from dominds.store import crashpoints

    crashpoints._CRASH_AT = crash_at  # read from DOMINDS_CRASH_AT at import, before this point was chosen
    crashpoints._steps_taken = 0
    import crash_daemon

    sys.argv = ["crash_daemon.py", *argv]
    asyncio.run(crash_daemon.main())
    sys.stdout.flush()
