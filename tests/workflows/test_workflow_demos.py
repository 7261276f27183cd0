"""The workflow demos of a fresh workspace (`dominds init`, no API key): complete runs offline.

The bug: the Tree-of-Thoughts and Debate pages linked from the demo panel ran on scripted roles with
no scripted answers: ToT ended "completed" with an empty answer (exit 0), the debate reported
consensus 0.85 over "Scripted response not found" texts. The template's scripted database now answers
the demo problem (`4 9 10 13`) and the demo question (IELTS preparation, Chinese or English) with a
real, complete run; any other question still has no answer, and the debate then fails clearly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dominds.cli.main import main


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)  # no key: every member is on the offline scripted provider
    root = tmp_path / "demo"
    assert main(["init", str(root)]) == 0
    capsys.readouterr()
    return root


def test_the_tot_demo_solves_its_problem_with_teammates(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-C", str(demo), "tot", "4 9 10 13", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "completed" and result["solved"] is True and result["errors"] == []
    assert result["solution"]["answer"] == "(10 - (13 - 9)) * 4 = 24" and result["solution"]["verification"]["is_valid"]
    assert result["root_dialog"] and result["usage"]["outputTokens"] > 0, "the steps were teammate subdialogs"


@pytest.mark.parametrize(
    ("question", "words"),
    [("帮我制定IELTS备考计划", "# 4个月雅思备考计划"), ("Help me plan three months of IELTS preparation", "# IELTS in four months")],
)
@pytest.mark.parametrize("embedder", ["auto", "jaccard"])  # with the embeddings extra, and as without it
def test_the_debate_demo_converges_and_writes_its_report(
    demo: Path, capsys: pytest.CaptureFixture[str], question: str, words: str, embedder: str
) -> None:
    out = demo / "report.md"
    assert main(["-C", str(demo), "debate", question, "--out", str(out), "--embedder", embedder]) == 0
    printed = capsys.readouterr().out
    assert "[round 1] host: " in printed and "[round 2] host: converge, consensus 1.00" in printed
    assert "final report: converged after 2 round(s)" in printed
    report = out.read_text(encoding="utf-8")
    assert report.startswith(words) and "Scripted response not found" not in report
    # the comparer that ran is named on the first lines and in the report (WordLlama is the default)
    method, named = {
        "auto": ("embedding:wordllama:l2_supercat-256", "Similarity: embeddings `wordllama:l2_supercat-256`"),
        "jaccard": ("jaccard", "Similarity: word overlap (Jaccard)"),  # chosen, so no "fallback" (issue 36, item 9)
    }[embedder]
    assert printed.splitlines()[1] == f"similarity: {method}" and named in report


def test_any_other_question_fails_without_a_report(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = demo / "report.md"
    assert main(["-C", str(demo), "debate", "Should we rewrite the backend in Rust?", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "no debater gave a usable answer in round 1" in captured.err and not out.exists()
    # issue 36, item 13: the plain reason, not the framed prompt and a `contains:` matching every question
    assert "The offline demo answers only its example prompts" in captured.err, captured.err
    assert "contains:" not in captured.err and "add an entry" not in captured.err
    assert main(["-C", str(demo), "tot", "Plan a 3-day trip to Kyoto", "--step-timeout", "30"]) == 1
    assert "Unsolved: " in capsys.readouterr().out
