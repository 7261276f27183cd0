"""The log folder's names sort in execution order, whatever the number of rounds (seed: 序号 "保证文件排序").

The bug: every round's files were numbered `04-generator-roundN` / `05-evaluator-roundN`, so
`04-generator-round3` sorted before `05-evaluator-round1`, and the synthesizer was `08` whatever came
before it: name order was not execution order.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dominds.cli.main import main


def first_entries(folder: Path) -> list[tuple[str, str]]:
    """(file stem, timestamp of its first entry) for every agent log, in name order."""
    out = []
    for path in sorted(folder.glob("*.log")):
        if path.name != "99-merged-timeline.log":
            first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
            out.append((path.stem, first["ts"]))
    return out


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("BFS", ["01-orchestrator", "02-decomposer", "03-explorer", "04-generator-round1", "05-evaluator-round1",
                 "06-generator-round2", "07-evaluator-round2", "08-generator-round3", "09-evaluator-round3", "10-synthesizer"]),
        ("DFS", ["01-orchestrator", "02-decomposer", "03-explorer", "04-generator-round1", "05-evaluator-round1",
                 "06-generator-round2", "07-evaluator-round2", "08-generator-round3", "09-evaluator-round3", "10-synthesizer"]),
    ],
)  # fmt: skip
def test_file_names_sort_in_execution_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], strategy: str, expected: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["tot", "4 9 10 13", "--symbolic", "--strategy", strategy]) == 0
    capsys.readouterr()
    [folder] = (tmp_path / "logs").iterdir()
    entries = first_entries(folder)
    assert [stem for stem, _ in entries] == expected
    stamps = [ts for _, ts in entries]
    assert stamps == sorted(stamps), "each file starts no earlier than the file before it"
    timeline = (folder / "99-merged-timeline.log").read_text(encoding="utf-8")
    assert "- Agent 调用次数: 8" in timeline
