"""The template's .gitignore covers what the workflows write into the workspace root.

The bug: ToT wrote `logs/`, Plan & Solve `workdir/`, `dominds debate` `debate-<id>.md` into the root
of a fresh workspace, and none was git-ignored by the template: a `git add .` took them all."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dominds.cli.main import main


def test_workflow_outputs_are_ignored_and_the_work_is_not(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ws"
    assert main(["init", str(root)]) == 0
    capsys.readouterr()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    paths = ["logs/tot-1.jsonl", "workdir/run/deck.pptx", "debate-0mi7x2k3a.md", "tasks/demo.tsk/goals.md", "notes.md"]
    checked = subprocess.run(["git", "-C", str(root), "check-ignore", *paths], capture_output=True, text=True)
    assert checked.stdout.split() == paths[:3]
