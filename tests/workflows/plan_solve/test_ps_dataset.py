"""The query engine behind ``query_data``, adversarially: any text is answered or refused, never a crash or a write."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ps_kit import write_small_sales

from dominds.cli.main import main
from dominds.workflows.plan_solve.dataset import DataTable, QueryError, table_name

SQL_WORDS = st.sampled_from(
    ["SELECT", "FROM", "data", "*", "region", "sum(revenue)", "GROUP BY", ";", "DROP TABLE", "INSERT INTO", "COPY",
     "TO", "'/tmp/x'", "read_csv('x')", "WITH", "AS", "(", ")", "UPDATE", "SET", "=", "1", "--", "'", "\ud800",
     "PRAGMA", "INSTALL", "LOAD", "httpfs", "CALL", "ATTACH", "EXPORT DATABASE"]
)  # fmt: skip


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> DataTable:
    return DataTable(write_small_sales(tmp_path_factory.mktemp("data") / "data.csv"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=120), st.lists(SQL_WORDS, max_size=12).map(" ".join)))
def test_any_text_is_answered_or_refused_and_the_table_never_changes(table: DataTable, sql: str) -> None:
    try:
        result = table.query(sql, timeout_s=2.0)
    except QueryError as exc:
        assert str(exc).strip()
    else:
        assert len(result.rows) <= 200 and result.row_count >= len(result.rows)
    assert table.query("SELECT count(*) FROM data").rows == [[240]]


@pytest.mark.parametrize(
    ("name", "table"),
    [("sales.csv.gz", "sales"), ("Q3 report.csv", "q3_report"), ("2025.tsv", "t_2025"), ("销售.csv", "data")],
)
def test_table_names_are_plain_identifiers(name: str, table: str) -> None:
    assert table_name(Path(name)) == table


def test_a_file_that_is_not_csv_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "data.xlsx").write_bytes(b"PK\x03\x04")
    with pytest.raises(QueryError, match="only CSV/TSV files"):
        DataTable(tmp_path / "data.xlsx")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(QueryError, match="empty.csv is empty"):
        DataTable(tmp_path / "empty.csv")
    (tmp_path / "bad.csv.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(QueryError, match="bad.csv.gz cannot be read as CSV"):
        DataTable(tmp_path / "bad.csv.gz")


def test_example_data2ppt_runs_offline_and_prints_the_queries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bug: each run left its offline example workspace (~540 KB) in the temp directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # gettempdir() may have cached another one
    assert main(["plan-solve", "example", "data2ppt", "--scripted", "--workdir", "out"]) == 0
    assert not list(tmp_path.glob("dominds-plan-solve-*")), "the example workspace is removed when the run ends"
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith("[agent.final_answer] Presentation ready: cover + 3 slides in ./out/ppt/")
    assert sum(line.startswith("[agent.tool_call] slide ") for line in printed) == 5
    assert "[agent.tool_call] planner: SELECT min(order_date)" in "\n".join(printed)
    assert len(list((tmp_path / "out" / "ppt").glob("*/presentation.pptx"))) == 1
