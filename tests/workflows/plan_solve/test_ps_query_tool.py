"""``query_data`` through the websocket: solvers compute with SQL, the tool is read-only and bounded.

The scripted solvers call the real tool (the driver records and runs it like any function tool); what a
client sees are the seed's ``agent.tool_call`` / ``agent.tool_result`` pairs. Bug pinned here: solvers
had no tools, the CSV was pasted into the prompt (cut at 12,000 characters) and charts held whatever
numbers the model wrote; no tool event was ever sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ps_kit import names, plan_json, planner, tool_solver, write_small_sales

from dominds.store.course_records import HumanTextRecord
from dominds.workflows.plan_solve import dataset

SLIDE_WITH_QUERY_CHART = json.dumps(
    {
        "id": 1,
        "title": "Revenue by region",
        "text": "East leads.",
        "charts": [
            {
                "type": "bar",
                "title": "Revenue by region",
                "query": "SELECT region AS name, sum(revenue) AS value FROM data GROUP BY region ORDER BY value DESC",
            }
        ],
    }
)


def pairs(events: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(tool_call, tool_result) per step_id, in call order."""
    calls = [e for e in events if e["event"] == "agent.tool_call"]
    results = {e["step_id"]: e for e in events if e["event"] == "agent.tool_result"}
    return [(call, results[call["step_id"]]) for call in calls]


async def test_solvers_query_the_data_and_charts_hold_the_queried_numbers(serve: Any, tmp_path: Path) -> None:
    data = write_small_sales(tmp_path / "data.csv")
    sql = "SELECT region, sum(revenue) AS revenue FROM data GROUP BY region ORDER BY revenue DESC"
    served = await serve([planner(plan_json([1])), *tool_solver(1, [sql], SLIDE_WITH_QUERY_CHART)], csv_path=data)
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    assert names(events)[-1] == "agent.final_answer"
    [(call, result)] = pairs(events)
    assert call["content"] == "Calling tool: query_data" and call["step_id"].startswith("step_1_query_data")
    assert call["metadata"]["args"] == {"sql": sql} and call["metadata"]["status"] == "running"
    assert call["metadata"]["task_id"] == 1 and result["metadata"]["task_id"] == 1
    assert result["metadata"]["status"] == "success"
    expected = {"East": 0, "South": 0, "North": 0, "West": 0}
    for line in data.read_text().splitlines()[1:]:
        _, region, revenue = line.split(",")
        expected[region] += int(revenue)
    assert {row[0]: row[1] for row in result["metadata"]["data"]["rows"]} == expected
    # the order tool_call → tool_result → solver.completed, and the chart is the chart query's rows
    order = names(events)
    assert order.index("agent.tool_call") < order.index("agent.tool_result") < order.index("solver.completed")
    slide = next(e for e in events if e["event"] == "solver.completed")["content"]["result"]["output"]
    [chart] = slide["charts"]
    assert chart["source"] == "query" and {p["name"]: p["value"] for p in chart["data"]} == expected
    assert [p["name"] for p in chart["data"]] == ["West", "North", "South", "East"]
    # the solver was told the table's schema and a few rows, not handed the file
    root_id = events[0]["metadata"]["dialog_id"]
    solver_dialog = served.engine.get_dialog(root_id, call["metadata"]["dialog_id"])
    request = " ".join(
        r.content for n in solver_dialog.files.course_numbers() for r in solver_dialog.files.read_course(n)
        if isinstance(r, HumanTextRecord)
    )
    assert "table `data` (240 rows)" in request and "order_date DATE, region VARCHAR, revenue BIGINT" in request
    assert data.read_text().splitlines()[-1] not in request, "the data is queried, not pasted"


BAD_QUERIES = {
    "CREATE TABLE x AS SELECT 1": "only SELECT queries are allowed",
    "DELETE FROM data": "only SELECT queries are allowed",
    "SELECT 1; SELECT 2": "exactly one SQL statement",
    "SELECT * FROM read_csv('/etc/passwd')": "file system operations are disabled",
    "ATTACH 'other.db' AS other": "only SELECT queries are allowed",
    "SELEC region FROM data": "syntax error",
    "SELECT nope FROM data": 'column "nope" not found',
    "   ": "the SQL text is empty",
    "SELECT count(*) FROM range(100000000000) a, range(10) b": "ran longer than 0.5 s",
}


async def test_the_tool_is_read_only_bounded_and_explains_bad_sql_to_the_model(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataset, "TIMEOUT_S", 0.5)
    data = write_small_sales(tmp_path / "data.csv")
    before = data.read_bytes()
    leak = tmp_path / "leak.csv"
    queries = [*BAD_QUERIES, f"COPY data TO '{leak}'", "SELECT * FROM data", "SELECT count(*) AS n FROM data"]
    served = await serve([planner(plan_json([1])), *tool_solver(1, queries, SLIDE_WITH_QUERY_CHART)], csv_path=data)
    sock = await served.session()
    await sock.ask()
    events = await sock.finish(timeout=30)
    assert names(events)[-1] == "agent.final_answer", "bad queries are the model's to fix, not the run's end"
    by_sql = {call["metadata"]["args"]["sql"]: result for call, result in pairs(events)}
    assert len(by_sql) == len(queries)
    for sql, expected in BAD_QUERIES.items():
        result = by_sql[sql]
        assert result["metadata"]["status"] == "failed", sql
        assert expected in result["metadata"]["error"], (sql, result["metadata"]["error"])
    assert "order_date DATE, region VARCHAR, revenue BIGINT" in by_sql["SELECT nope FROM data"]["content"], (
        "a bad column is answered with the table's columns"
    )
    assert by_sql[f"COPY data TO '{leak}'"]["metadata"]["status"] == "failed" and not leak.exists()
    everything = by_sql["SELECT * FROM data"]
    shown = everything["metadata"]["data"]
    assert everything["metadata"]["status"] == "success" and shown["truncated"] is True
    assert shown["row_count"] == 240 and len(shown["rows"]) == dataset.MAX_ROWS
    assert len(everything["content"]) <= dataset.MAX_CHARS and "aggregate, filter or add LIMIT" in shown["note"]
    assert by_sql["SELECT count(*) AS n FROM data"]["metadata"]["data"]["rows"] == [[240]], "nothing was changed"
    assert data.read_bytes() == before


async def test_a_chart_query_that_cannot_make_a_chart_fails_that_slide_with_the_reason(
    serve: Any, tmp_path: Path
) -> None:
    data = write_small_sales(tmp_path / "data.csv")
    one_column = json.dumps(
        {"id": 1, "title": "T", "text": "x", "charts": [{"type": "bar", "title": "C", "query": "SELECT region FROM data"}]}
    )
    too_many = json.dumps(
        {"id": 2, "title": "T", "text": "x", "charts": [{"type": "bar", "title": "C", "query": "SELECT order_date, revenue FROM data"}]}
    )
    served = await serve(
        [
            planner(plan_json([1, 2])),
            {"agent": "plan_solve_solver", "contains": "Slide task #1:", "response": one_column},
            {"agent": "plan_solve_solver", "contains": "Slide task #2:", "response": too_many},
        ],
        csv_path=data,
    )
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    failed = {e["content"]["task"]["id"]: e["content"]["error"] for e in events if e["event"] == "solver.failed"}
    assert "two columns, a label and a number" in failed[1]
    assert "returned 200 rows; a chart shows at most 24" in failed[2]
    assert events[-1]["event"] == "agent.error" and "every slide failed" in events[-1]["content"]


async def test_without_a_data_file_the_tool_says_so(serve: Any) -> None:
    served = await serve([planner(plan_json([1])), *tool_solver(1, ["SELECT 1"], SLIDE_WITH_QUERY_CHART)])
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    [(_, result)] = pairs(events)
    assert result["metadata"]["status"] == "failed" and "has no data file" in result["metadata"]["error"]
    failed = next(e for e in events if e["event"] == "solver.failed")
    assert "a chart has a query but this run has no data file" in failed["content"]["error"]
