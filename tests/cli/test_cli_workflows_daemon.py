"""`dominds tot`, `debate` and `plan-solve example data2ppt` while `dominds serve` holds the workspace: they
run on the daemon (complete runs: tests/test_fresh_clone.py) and name the options only a local run has."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from test_cli_kit import Daemon, dominds, write_workspace


def test_options_of_a_local_run_are_refused_by_name_while_a_daemon_serves(tmp_path: Path) -> None:
    """Bug: these commands refused to run at all while `serve` held the workspace ("use the /tot page")."""
    ws = write_workspace(tmp_path / "ws")
    with Daemon(ws) as daemon:
        tot = dominds(ws, "tot", "4 9 10 13", "--generation", "sequential_proposal")
        assert tot.returncode == 1 and tot.stderr.count("\n") == 1, tot.stderr
        assert f"--generation only work(s) for a run in this process, and a daemon serves this workspace (pid {daemon.pid}" in (
            tot.stderr
        )
        debate = dominds(ws, "debate", "Tabs or spaces?", "--embedder", "jaccard")
        assert debate.returncode == 1 and "--embedder only work(s) for a run in this process" in debate.stderr
        slides = dominds(ws, "plan-solve", "example", "data2ppt", "--concurrency", "2", "--workdir", "elsewhere")
        assert slides.returncode == 1 and "--workdir, --concurrency only work(s)" in slides.stderr
        request = urllib.request.Request(f"{daemon.http}/api/tot/runs", headers=daemon.headers())
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response)["runs"] == [], "nothing was started"
        daemon.stop()


def test_a_tot_problem_the_daemon_refuses_is_one_line(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    with Daemon(ws) as daemon:
        refused = dominds(ws, "tot", "4 9 10 13", "--threshold", "11")
        assert refused.returncode == 1 and refused.stderr.startswith("dominds: ") and refused.stderr.count("\n") == 1
        assert "threshold must be within 0..10" in refused.stderr and "Traceback" not in refused.stderr
        daemon.stop()


def test_unsolved_and_failed_runs_on_the_daemon_exit_1_and_read_as_such(tmp_path: Path) -> None:
    """Issue 20's failures where the run is the daemon's: a ToT search that keeps nothing and a debate with
    no usable provider (the workspace has no scripted answer for any workflow role) must read as unsolved /
    failed and exit 1 exactly as a local run does; no "verified" answer, no report written."""
    ws = write_workspace(tmp_path / "ws")
    report = tmp_path / "report.md"
    with Daemon(ws) as daemon:
        tot = dominds(ws, "tot", "Plan a 3-day trip to Kyoto")
        assert tot.returncode == 1, tot.stderr
        assert "on the daemon" in tot.stdout and "Unsolved: SEARCH_EXHAUSTED" in tot.stdout
        assert "verified" not in tot.stdout.replace("not verified", "") and "Answer:" not in tot.stdout
        as_json = dominds(ws, "tot", "1 1 1 1", "--json")
        assert as_json.returncode == 1, as_json.stderr
        result = json.loads(as_json.stdout)
        assert (result["status"], result["solved"], result["unsolved_code"]) == ("unsolved", False, "search_exhausted")
        debate = dominds(ws, "debate", "Tabs or spaces?", "--out", str(report))
        assert debate.returncode == 1 and not report.exists()
        assert "on the daemon" in debate.stdout and "final report" not in debate.stdout and "host:" not in debate.stdout
        assert "no debater gave a usable answer in round 1" in debate.stderr and "resume with: dominds debate --resume" in debate.stderr
        daemon.stop()
