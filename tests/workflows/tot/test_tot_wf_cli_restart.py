"""`dominds tot` on a daemon that is killed under it: the run is said to be interrupted, and where to see it.

The bug: the command ended with the bare client error "the daemon … did not answer GET …", and a run the
daemon stopped printed "No answer: the run interrupted." without saying what happened.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from cli.test_cli_kit import Daemon, cli_env, wait_until
from tot_wf_kit import SLOW_EVALUATOR, stored_tree, write_workspace
from tot_wf_kit import daemon_call as call


def test_a_cli_run_on_a_killed_daemon_says_it_is_interrupted_and_the_daemon_still_shows_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, SLOW_EVALUATOR)
    with Daemon(ws) as first:
        command = subprocess.Popen(
            [sys.executable, "-m", "dominds", "-C", str(ws), "tot", "4 9 10 13"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
        )  # fmt: skip
        try:
            runs = ws / ".dialogs" / "run"
            wait_until(lambda: any("node_1" in stored_tree(ws, d.name).get("nodes", {}) for d in runs.iterdir()), timeout=60)
            first.stop(signal.SIGKILL)
            out, err = command.communicate(timeout=30)
        finally:
            if command.poll() is None:
                command.kill()
    assert command.returncode == 1, (out, err)
    run_id = out.split("(run ", 1)[1].split()[0]
    assert f"The daemon went away while run {run_id} ran: the run is interrupted." in err
    assert f"/tot?run={run_id}" in err
    with Daemon(ws) as second:
        assert call(second, "GET", f"/api/tot/runs/{run_id}")[1]["status"] == "interrupted"
