"""`dominds debate`: live lines and the Markdown report; a killed run resumed with --resume; usage errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_debate_kit import reporter_answer, set_responses, step, write_workspace

from dominds.cli.main import main
from dominds.workflows.debate.state import load_state

JACCARD = "embedder: {kind: jaccard}\n"


def answer(role: str, conclusion: str) -> str:
    """A minimal §2 answer whose position is the given words only, so Jaccard sees exactly them."""
    kind = {"planner": "plan", "critic": "critique"}[role]
    return json.dumps({"agent_id": role, "output_type": kind, "content": conclusion,
                       "metadata": {"position": {"conclusion": conclusion, "confidence": 0.7}}})


def test_a_debate_prints_its_rounds_and_writes_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, [
        step("planner", 1, answer("planner", "Study vocabulary first, then writing")),
        step("critic", 1, answer("critic", "Study vocabulary first, then writing")),
        step("reporter", 1, reporter_answer("Vocabulary first")),
    ], JACCARD)
    out = tmp_path / "report.md"
    # --embedder provider without a provider configured: the run says why and falls back to Jaccard
    assert main(["-C", str(ws), "debate", "How do I prepare for IELTS?", "--out", str(out), "--embedder", "provider"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("debate ") and printed[0].endswith(": How do I prepare for IELTS?")
    assert printed[1] == "similarity: jaccard_fallback"
    assert printed[2].startswith("warning: using word overlap (Jaccard) instead of embeddings: embedder kind provider needs")
    assert "[round 1] planner: Study vocabulary first, then writing (confidence 0.70)" in printed
    assert "[round 1] host: converge, consensus 1.00 — consensus 1.00 > 0.28" in printed, "the calibrated threshold of word overlap"
    assert printed[-2:] == ["final report: converged after 1 round(s)", f"report: {out}"]
    report = out.read_text()
    assert report.startswith("# Vocabulary first\n") and "## Debate record" in report
    assert "| 1 | converge | 1.00 | jaccard_fallback | - |" in report
    assert "Similarity: word overlap (Jaccard); converge above 0.28, oppose at or below 0.20 (calibrated:jaccard:latin)." in report
    assert "Note: using word overlap (Jaccard) instead of embeddings: embedder kind provider needs" in report


def test_a_killed_debate_resumes_from_its_last_completed_round(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    rtws = write_workspace(ws, [
        step("planner", 1, answer("planner", "Study vocabulary first")),
        step("critic", 1, answer("critic", "Writing practice matters most")),  # Jaccard 0: force_opposition
        step("critic", 2, answer("critic", "x"), chunk_chars=1, delay_ms=500),  # still thinking when killed
    ], JACCARD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dominds", "-C", str(ws), "debate", "IELTS?"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("[round 1] host:"):
            break
    session_id = lines[0].split()[1].rstrip(":")
    root_dir = ws / ".dialogs" / "run" / session_id
    deadline = time.monotonic() + 60
    while not _third_step_pending(root_dir) and time.monotonic() < deadline:
        time.sleep(0.02)  # until the round-2 critic step exists: the kill lands in the middle of it
    # (It waited for three `subdialogs/*/dialog.yaml`, which a step still being created, in its
    # `.creating-…` staging directory, matched too: killed then, there was no step to retire.)
    assert _third_step_pending(root_dir), "the round-2 critic step started"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert lines[-1].startswith("[round 1] host: force_opposition"), lines
    crashed = load_state(root_dir)
    assert (crashed.status, crashed.current_round) == ("in_progress", 1), "a kill leaves the last saved round"
    set_responses(rtws, [
        step("critic", 2, answer("critic", "Study vocabulary first, with writing"), also="devil's advocate"),
        step("planner", 2, answer("planner", "Study vocabulary first, with writing")),
        step("reporter", 2, reporter_answer()),
    ])
    out = tmp_path / "resumed.md"
    assert main(["-C", str(ws), "debate", "--resume", session_id, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "resuming after round 1" in printed and "[round 1]" not in printed.split("resuming after round 1")[1]
    state = load_state(root_dir)
    assert state.status == "converged" and state.consensus_trend == [0.0, 1.0]
    stale: list[Any] = [d for d in (root_dir / "subdialogs").iterdir() if "declared_by_user" in (d / "latest.yaml").read_text()]
    assert len(stale) == 1, "the step the killed process left running was retired, not answered twice"
    assert out.read_text().startswith("# IELTS plan")


def _third_step_pending(root_dir: Path) -> bool:
    """Three steps were created (staging directories of creations in progress not counted) and the newest
    one is in the root's index of pending steps."""
    steps = sorted(p.parent.name for p in root_dir.glob("subdialogs/*/dialog.yaml") if not p.parent.name.startswith("."))
    try:
        pending = (root_dir / "subdlg.yaml").read_text()
    except FileNotFoundError:
        return False
    return len(steps) == 3 and steps[-1] in pending


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["debate"], 2, "give a question"),
        (["debate", "q", "--resume", "x"], 2, "not both"),
        (["debate", "--resume", "0abc-def"], 1, "no debate"),
    ],
)
def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str) -> None:
    ws = tmp_path / "ws"
    write_workspace(ws, [])
    assert main(["-C", str(ws), *argv]) == code
    assert message in capsys.readouterr().err
