"""An unsolved run reads as unsolved everywhere: CLI text, `--json`, exit code, task info, timeline, snapshot.

The bug: a search whose every evaluation timed out still handed its bare root to the synthesizer, and
whatever the synthesizer claimed was printed as "Answer: … (verified; confidence 1.0)", while `--json`
said `solved: false`, the task info said `completed` and the command exited 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tot_wf_kit import DECOMPOSITION, json_reply, write_workspace

from dominds.cli.main import main

PLAN = "Plan a 3-day trip to Kyoto"
ARGS = ["tot", PLAN, "--task-type", "planning", "--strategy", "BFS", "--depth", "1", "--candidates", "2", "--branching", "2"]
CLAIM = {
    "answer": "Day 1 temples, day 2 Arashiyama, day 3 Nara",
    "reasoning_trace": ["picked the best plan"],
    "confidence": 1.0,
    "verification": {"is_valid": True},
}
GENERATOR = json_reply(
    "tot-generator",
    "generate_thoughts",
    {"candidates": [{"temp_id": "cand_1", "content": "Temples first", "action_type": "step"},
                    {"temp_id": "cand_2", "content": "Food tour first", "action_type": "step"}]},
)  # fmt: skip
SYNTHESIZER = json_reply("tot-synthesizer", "synthesize_solution", CLAIM)
SLOW_EVALUATOR = {"agent": "tot-evaluator", "contains": "evaluate_thoughts", "response": "x " * 400, "chunk_chars": 2, "delay_ms": 5}


def _scores(score: float) -> dict[str, Any]:
    evaluation = {"node_id": "node_1", "score": score, "confidence": 0.9, "reasoning": "ok"}
    return {"evaluations": [evaluation, {**evaluation, "node_id": "node_2"}], "ranking": ["node_1", "node_2"], "pruning_suggestions": []}


def scored_workspace(root: Path, score: float, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace whose evaluator gives both candidates ``score``; the current directory moves there."""
    responses = [json_reply("tot-decomposer", "decompose_task", DECOMPOSITION), GENERATOR,
                 json_reply("tot-evaluator", "evaluate_thoughts", _scores(score)), SYNTHESIZER]  # fmt: skip
    rtws = write_workspace(root, responses)
    monkeypatch.chdir(rtws.root)
    return rtws.root


def _folder(root: Path) -> Path:
    [folder] = (root / "logs").iterdir()
    return folder


def test_an_exhausted_search_is_unsolved_in_the_text_the_logs_and_the_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = [json_reply("tot-decomposer", "decompose_task", DECOMPOSITION), GENERATOR, SLOW_EVALUATOR, SYNTHESIZER]
    rtws = write_workspace(tmp_path / "ws", responses)
    monkeypatch.chdir(rtws.root)
    assert main([*ARGS, "--step-timeout", "0.3"]) == 1
    out = capsys.readouterr().out
    assert "verified" not in out.replace("not verified", "") and "confidence 1.0" not in out
    assert "Unsolved: " in out and "SEARCH_EXHAUSTED" in out and CLAIM["answer"] not in out
    assert "EVALUATION_TIMEOUT" in out
    folder = _folder(rtws.root)
    info = json.loads((folder / "00-task-info.json").read_text())
    assert info["status"] == "unsolved" and info["solved"] is False and info["error"]["code"] == "SEARCH_EXHAUSTED"
    timeline = (folder / "99-merged-timeline.log").read_text()
    assert "结果: 未解决" in timeline and not list(folder.glob("*synthesizer*")), "nothing to synthesize from a bare root"


def test_an_unsolved_search_never_passes_on_the_synthesizers_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scored_workspace(tmp_path / "ws", 7.0, monkeypatch)
    assert main([*ARGS, "--evaluation", "comparative_voting", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "unsolved" and result["solved"] is False
    solution = result["solution"]
    assert solution["answer"] == CLAIM["answer"] and solution["verification"]["is_valid"] is False
    assert solution["confidence"] <= 0.5 and "no thought reached a solution" in solution["verification"]["validation_errors"][0]
    assert main([*ARGS, "--evaluation", "comparative_voting"]) == 1
    out = capsys.readouterr().out
    assert "Unsolved: " in out and "Best attempt (NOT verified" in out and "(verified" not in out


def test_a_solved_search_still_reads_as_solved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    root = scored_workspace(tmp_path / "ws", 9.8, monkeypatch)
    assert main([*ARGS, "--evaluation", "comparative_voting"]) == 0
    out = capsys.readouterr().out
    assert f"Answer: {CLAIM['answer']}" in out and "(verified; confidence 1.0)" in out
    info = json.loads((_folder(root) / "00-task-info.json").read_text())
    assert info["status"] == "completed" and info["solved"] is True


def test_a_huge_problem_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI accepted a problem of any size and sent it to every role call; the page's API capped it at 20,000."""
    rtws = write_workspace(tmp_path / "ws", [])
    monkeypatch.chdir(rtws.root)
    assert main(["tot", "4 9 10 13 " + "x" * 297_000, "--symbolic"]) == 2
    assert main(["tot", "plan " * 60_000]) == 2
    err = capsys.readouterr().err
    assert err.count("at most 20,000 are accepted") == 2
    assert not (rtws.root / "logs").exists() and not list((rtws.root / ".dialogs").rglob("dialog.yaml"))
