"""`dominds tot --resume RUN_ID`: a run cut by a SIGKILLed daemon, resumed from the command line with
no daemon running (the run is driven in the process, from its saved tree).

Bug (issue 36, item 9): nothing could resume a cut run; the CLI's own message after a daemon went away
said only that the page would show it. The second script's traps (test_tot_wf_resume.py) would show a
new decomposition or a regenerated first layer.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from cli.test_cli_kit import Daemon, cli_env, wait_until
from test_tot_wf_resume import AFTER_THE_CUT, BEFORE_THE_CUT, SETTINGS, _record
from tot_wf_kit import daemon_call as call
from tot_wf_kit import write_workspace


def test_a_cut_run_is_resumed_by_the_cli_without_a_daemon(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, BEFORE_THE_CUT)
    first = Daemon(ws)
    try:
        status, cut = call(first, "POST", "/api/tot/runs", SETTINGS)
        assert status == 201, cut
        wait_until(lambda: len(_record(ws, cut["rootId"]).get("layers", [])) == 1, timeout=90)
    finally:
        first.stop(signal.SIGKILL)
    before = _record(ws, cut["rootId"])["tree"]["nodes"]
    write_workspace(ws, AFTER_THE_CUT)

    def tot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dominds", "tot", *args], cwd=ws, env=cli_env(), capture_output=True, text=True, timeout=120, check=False
        )

    done = tot("--resume", cut["runId"], "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed" and result["solution"]["answer"] == "(10 - (13 - 9)) * 4 = 24"
    assert result["task_id"] != cut["runId"]
    resumed = _record(ws, result["root_dialog"])
    assert resumed["resumedFrom"] == cut["runId"] and resumed["tree"]["nodes"]["node_1"]["content"] == before["node_1"]["content"]
    assert result["stats"]["llm_calls"] == 6, "only layers 2 and 3 were asked"
    again = tot("--resume", cut["runId"])
    assert again.returncode == 1 and f"was resumed already, as '{result['task_id']}'" in again.stderr, again.stderr
    refused = tot("--resume", cut["runId"], "4 9 10 13")
    assert refused.returncode == 2 and "give no problem" in refused.stderr
