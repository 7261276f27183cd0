"""The demo workspace (``rtws-template/``) runs a complete Plan & Solve offline, through the daemon's mount.

What ``dominds serve --demo`` serves: the template's team on the scripted provider, its sample data set
(36,571 order lines, generated deterministically and committed compressed) and the scripted planner and
solver entries, which call the real ``query_data`` tool. Bug pinned here: the demo's "solvers" pasted
sums into their answers; nothing was computed, and nothing showed a tool call.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from pptx import Presentation
from ps_kit import PsClient, deck_of, names

from dominds.cli.main import main
from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import make_app
from dominds.workflows.mount import route_adders, workflow_extensions
from dominds.workflows.plan_solve.example import sales_data
from dominds.workflows.plan_solve.example.workspace import DEFAULT_QUESTION, SCRIPTED_RESPONSES
from dominds.workflows.plan_solve.run_record import RUN_FILE
from dominds.workflows.plan_solve.settings import DEFAULT_CSV
from dominds.workflows.plan_solve.web import WS_PATH

TEMPLATE = Path(__file__).resolve().parents[3] / "rtws-template"
TOKEN = "demo-token-1"
OTHER_QUESTION = "Which product sells best?"


def test_the_template_data_is_the_generators_output_with_tens_of_thousands_of_rows() -> None:
    committed = gzip.decompress((TEMPLATE / DEFAULT_CSV).read_bytes()).decode("utf-8")
    assert committed == sales_data.csv_text(), "regenerate with example/sales_data.py write_sales_csv"
    rows = committed.count("\n") - 1
    assert 30_000 <= rows <= 60_000
    assert (TEMPLATE / DEFAULT_CSV).stat().st_size < 400_000, "committed compactly"


def test_the_template_carries_the_examples_scripted_entries() -> None:
    example = yaml.safe_load(SCRIPTED_RESPONSES.read_text(encoding="utf-8"))["responses"]
    demo = yaml.safe_load((TEMPLATE / ".minds" / "scripted" / "demo.yaml").read_text(encoding="utf-8"))["responses"]
    assert [e for e in demo if str(e.get("agent", "")).startswith("plan_solve")] == example


@functools.cache
def template_rows() -> list[dict[str, str]]:
    text = gzip.decompress((TEMPLATE / DEFAULT_CSV).read_bytes()).decode("utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def sums(by: str, year: str | None = None) -> dict[str, float]:
    """Revenue per ``by`` (a column, ``year`` or ``quarter``) computed with the csv module: independent of
    the SQL engine under test."""
    out: dict[str, float] = {}
    for row in template_rows():
        day = row["order_date"]
        if year is None or day.startswith(year):
            key = {"year": day[:4], "quarter": f"{day[:4]}-Q{(int(day[5:7]) + 2) // 3}"}.get(by) or row[by]
            out[key] = out.get(key, 0.0) + float(row["revenue"])
    return {k: round(v) for k, v in out.items()}


async def serve_demo(tmp_path: Path, aiohttp_client: Any) -> tuple[Engine, PsClient, Path]:
    root = tmp_path / "demo"
    shutil.copytree(TEMPLATE, root)
    engine = Engine(Rtws(root), extensions=workflow_extensions())
    await engine.start()
    client = await aiohttp_client(make_app(engine, token=TOKEN, extra_routes=route_adders()))
    sock = PsClient(await client.ws_connect(WS_PATH, headers={"Authorization": f"Bearer {TOKEN}"}))
    await sock.create_session()
    return engine, sock, root


async def test_the_demo_runs_a_complete_plan_and_solve_with_real_queries(tmp_path: Path, aiohttp_client: Any) -> None:
    engine, sock, root = await serve_demo(tmp_path, aiohttp_client)
    try:
        await sock.ask(DEFAULT_QUESTION)
        events = await sock.finish(timeout=30)
        assert names(events)[-1] == "agent.final_answer", events[-1]
        calls = [e for e in events if e["event"] == "agent.tool_call"]
        results = {e["step_id"]: e for e in events if e["event"] == "agent.tool_result"}
        owners = sorted({str(c["metadata"].get("task_id", c["metadata"].get("scope"))) for c in calls})
        assert owners == ["1", "2", "3", "plan"], "the planner and every solver queried the data"
        failed = [results[c["step_id"]] for c in calls if results[c["step_id"]]["metadata"]["status"] == "failed"]
        assert len(failed) == 1 and 'column "sales_channel" not found' in failed[0]["metadata"]["error"]
        assert failed[0]["metadata"]["task_id"] == 3, "slide 3 got the error back and fixed its SQL"
        slides = {
            e["content"]["task"]["id"]: e["content"]["result"]["output"] for e in events if e["event"] == "solver.completed"
        }
        assert sorted(slides) == [1, 2, 3]
        charts = {c["title"]: {p["name"]: p["value"] for p in c["data"]} for s in slides.values() for c in s["charts"]}
        assert all(c["source"] == "query" for s in slides.values() for c in s["charts"])
        assert charts["Revenue per quarter (USD)"] == sums("quarter")
        assert charts["2025 revenue by region (USD)"] == sums("region", "2025")
        assert charts["2025 revenue by channel"] == sums("channel", "2025")
        yearly = sums("year")
        growth = round(100 * (yearly["2025"] / yearly["2024"] - 1), 1)
        assert f"(+{growth}%)" in slides[1]["text"], "the text's numbers are the queried ones"
        east = sums("region", "2025")["East"]
        assert f"${east / 1e6:.2f}M" in slides[2]["text"]
        # the deck: a cover and the three slides, in the run's own folder under the workspace
        deck_path = deck_of(events, root)
        assert deck_path.is_relative_to(root / "workdir" / "ppt") and deck_path.parent.name.endswith(
            events[0]["metadata"]["dialog_id"]
        )
        deck = Presentation(str(deck_path))
        titles = [next(sh.text_frame.text for sh in s.shapes if sh.has_text_frame and sh.text_frame.text) for s in deck.slides]
        assert titles == [
            "Sales 2024–2025: growth, regions and channels",
            "Revenue grew 17.8% in 2025",
            "East leads the regions",
            "Online gains share",
        ]
        record = json.loads((engine.get_dialog(events[0]["metadata"]["dialog_id"]).files.dir / RUN_FILE).read_text())
        assert record["status"] == "completed" and record["data"] == {
            "path": "plan-solve/sales.csv.gz",
            "table": "sales",
            "rows": 36571,
            "columns": list(sales_data.COLUMNS),
        }
    finally:
        await engine.close()


async def test_a_scripted_miss_ends_the_run_in_an_error_not_in_an_answer(tmp_path: Path, aiohttp_client: Any) -> None:
    """Other data make the scripted planner's query fail; no entry answers that, and the miss is an error."""
    engine, sock, root = await serve_demo(tmp_path, aiohttp_client)
    try:
        (root / "plan-solve" / "other.csv").write_text("city,visitors\nParis,10\nRome,7\n")
        await sock.ask("Make slides about visitors", metadata={"csv_path": "plan-solve/other.csv"})
        events = await sock.finish(timeout=30)
        assert events[-1]["event"] == "agent.error", names(events)
        assert "the offline demo answers only its example" in events[-1]["content"].lower()
        assert "agent.final_answer" not in names(events) and "solver.start" not in names(events)
        assert not list(root.rglob("*.pptx"))
    finally:
        await engine.close()


def test_the_offline_example_answers_no_other_question_on_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bug: the planner's scripted entry matched its instruction ("Plan the slides"), not the question, so the
    offline example answered any question with the demo's growth/regions/online deck and exited 0. Only the demo
    question has scripted answers; another one is a scripted miss the user sees, with no deck."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    code = main(["plan-solve", "example", "data2ppt", "--scripted", "--workdir", "out", "--question", OTHER_QUESTION])
    printed = capsys.readouterr()
    assert code == 1, printed.out
    errors = [line for line in printed.out.splitlines() if line.startswith("[agent.error]")]
    assert len(errors) == 1 and "scripted response" in errors[0].lower() and "plan_solve_planner" in errors[0], printed.out
    assert "[agent.final_answer]" not in printed.out and "[solver." not in printed.out
    assert not list(tmp_path.rglob("*.pptx"))


async def test_the_demo_page_answers_no_other_question(tmp_path: Path, aiohttp_client: Any) -> None:
    """The same bug through the daemon's Plan & Solve service (what the demo panel's page sends): another
    question got the demo deck; it now ends in ``agent.error`` saying plainly that the offline demo answers only
    its example (issue 36 item 13: not the internal framed prompt, not a ``contains:`` suggestion), and the run
    is failed."""
    engine, sock, root = await serve_demo(tmp_path, aiohttp_client)
    try:
        await sock.ask(OTHER_QUESTION)
        events = await sock.finish(timeout=30)
        assert events[-1]["event"] == "agent.error", names(events)
        error = events[-1]["content"]
        assert "the offline demo answers only its example" in error.lower() and "use a real model" in error, error
        assert "contains:" not in error and OTHER_QUESTION not in error, "neither a suggestion nor the framed prompt"
        assert "agent.final_answer" not in names(events) and "solver.start" not in names(events)
        assert not list(root.rglob("*.pptx"))
        record = json.loads((engine.get_dialog(events[0]["metadata"]["dialog_id"]).files.dir / RUN_FILE).read_text())
        assert record["status"] == "failed" and record["question"] == OTHER_QUESTION
    finally:
        await engine.close()
