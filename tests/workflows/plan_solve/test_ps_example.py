"""The data-to-slides example, offline: the CLI writes presentation.json and a .pptx python-pptx reads back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pptx import Presentation
from pptx.enum.chart import XL_CHART_TYPE

from dominds.cli.main import main
from dominds.workflows.plan_solve.example.workspace import SAMPLE_CSV, create_example_workspace
from dominds.workflows.plan_solve.tasks import SlideTask, parse_slide


def test_example_data2ppt_writes_json_and_a_readable_pptx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = create_example_workspace(tmp_path / "ws")
    assert (workspace.root / "plan-solve" / "sample-sales.csv").read_bytes() == SAMPLE_CSV.read_bytes()
    monkeypatch.chdir(workspace.root)
    out = tmp_path / "out"
    assert main(["plan-solve", "example", "data2ppt", "--workdir", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("[plan.start] ") and printed[-1].startswith(
        "[agent.final_answer] Presentation ready: 3 slides"
    )
    assert sum(line.startswith("[solver.completed]") for line in printed) == 3
    assert "[pipeline.completed] 4 LLM calls, 4400 input + 1000 output tokens" in printed

    slides = json.loads((out / "ppt" / "presentation.json").read_text(encoding="utf-8"))
    assert [s["id"] for s in slides] == [1, 2, 3] and slides[0]["charts"][0]["data"][0] == {
        "name": "East",
        "value": 6237,
    }
    deck = Presentation(str(out / "ppt" / "presentation.pptx"))
    assert len(deck.slides) == 3
    assert [s.shapes.title.text for s in deck.slides] == [
        "Revenue by region",
        "Quarterly trend",
        "Category mix",
    ]
    chart_types = [[shape.chart.chart_type for shape in s.shapes if shape.has_chart] for s in deck.slides]
    assert chart_types == [
        [XL_CHART_TYPE.COLUMN_CLUSTERED],
        [XL_CHART_TYPE.LINE_MARKERS],
        [XL_CHART_TYPE.COLUMN_CLUSTERED, XL_CHART_TYPE.PIE],
    ]
    first_chart = next(shape.chart for shape in deck.slides[0].shapes if shape.has_chart)
    assert list(first_chart.plots[0].categories) == ["East", "South", "North", "West"]
    assert list(first_chart.series[0].values) == [6237.0, 4906.0, 4230.0, 3440.0]


def test_the_scripted_slide_numbers_are_the_sums_of_the_sample_csv() -> None:
    """The offline answers must not drift from the sample data they claim to summarise."""
    import csv

    rows = list(csv.DictReader(SAMPLE_CSV.open(encoding="utf-8")))
    by_region: dict[str, int] = {}
    for row in rows:
        by_region[row["region"]] = by_region.get(row["region"], 0) + int(row["revenue_k_usd"])
    import yaml

    from dominds.workflows.plan_solve.example.workspace import SCRIPTED_RESPONSES

    entry = next(
        e
        for e in yaml.safe_load(SCRIPTED_RESPONSES.read_text())["responses"]
        if e.get("contains") == "Slide task #1:"
    )
    slide = parse_slide(entry["response"], SlideTask(1, "Revenue by region", "x"))
    assert {p["name"]: p["value"] for p in slide["charts"][0]["data"]} == by_region
