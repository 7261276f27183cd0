"""`dominds tot`: progress per layer, the answer with its trace, the log folder; offline and with teammates."""

from __future__ import annotations

import json
from pathlib import Path

import filelock
import pytest
from tot_wf_kit import GAME_RESPONSES, write_workspace

from dominds.cli.main import main


def test_the_symbolic_run_prints_each_layer_and_the_verified_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["tot", "4 9 10 13", "--symbolic"]) == 0
    out = capsys.readouterr().out
    assert "BFS, keep b=5, generate k=36, depth 3, prune below 5.0" in out
    layers = [line for line in out.splitlines() if line.startswith("  depth ")]
    assert [line.split(":")[0] for line in layers] == ["  depth 1", "  depth 2", "  depth 3"]
    assert "Answer: (9 - 13) * (4 - 10) = 24" in out and "(verified; confidence 1.0)" in out
    assert "Step 3: -4 * -6 = 24 (left: 24)" in out
    [folder] = (tmp_path / "logs").iterdir()
    assert f"Logs: {folder}" in out and (folder / "99-merged-timeline.log").exists()


def test_dfs_json_output_and_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["tot", "3 3 8 8", "--symbolic", "--strategy", "dfs", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["solution"]["answer"] == "8 / (3 - (8 / 3)) = 24" and result["solved"]
    assert result["stats"]["total_backtracks"] >= 0 and result["usage"] is None
    assert main(["tot", "write a sonnet", "--symbolic"]) == 2
    assert "only solves Game-of-24" in capsys.readouterr().err
    assert main(["tot", "4 9 10 13", "--symbolic", "--depth", "0"]) == 2
    assert "depth must be" in capsys.readouterr().err


def test_a_run_with_teammates_prints_the_dialog_and_the_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rtws = write_workspace(tmp_path / "ws", GAME_RESPONSES)
    monkeypatch.chdir(rtws.root)
    args = ["tot", "4 9 10 13", "--branching", "1", "--candidates", "2", "--evaluation", "comparative_voting"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Answer: (10 - (13 - 9)) * 4 = 24" in out and "verified" in out
    assert "8 role calls" in out and "tokens in 80 / out 40" in out and "Dialog: " in out
    lock = filelock.FileLock(str(rtws.lock_path))
    with lock:  # another process holds the workspace (a daemon would take the run: tests/test_fresh_clone.py)
        assert main(args) == 1
    assert "is locked by" in capsys.readouterr().err


def test_a_run_cut_by_its_depth_says_the_depth_limit_was_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bug (issue 36, item 9): with ``--depth 1`` the run ended "no final step scored at least 9.5",
    which reads as if the search had failed on its own; the limit the user set was not named."""
    monkeypatch.chdir(tmp_path)
    assert main(["tot", "4 9 10 13", "--symbolic", "--depth", "1"]) == 1
    out = capsys.readouterr().out
    assert "Unsolved: the depth limit (1) was reached before a solution: a larger depth (--depth) searches further." in out, out
    assert main(["tot", "4 9 10 13", "--symbolic", "--depth", "1", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["unsolved_code"] == "depth_limit" and not result["solved"]
    assert main(["tot", "4 9 10 13", "--symbolic", "--depth", "3", "--json"]) == 0, "a path ending at its last number is no cut"
    assert json.loads(capsys.readouterr().out)["unsolved_code"] is None
