"""A run's data file as a read-only SQL table, queried with bounded results and a time limit (DuckDB).

Why DuckDB and not stdlib SQLite: it reads CSV (also ``.csv.gz``) with typed columns in one call, answers
analytical queries (``GROUP BY``, window functions, ``date_trunc``) quickly on a single core, installs from
PyPI as one wheel and is actively kept (MIT, monthly releases). Above all it can be locked down: after the
file is loaded, ``enable_external_access = false`` stops every file, network and extension access
(``read_csv('/etc/passwd')``, ``COPY … TO``, ``ATTACH``, ``INSTALL``), and ``lock_configuration`` stops
a query from turning that back on. SQLite would need a hand-written CSV loader with type guessing and an
authorizer to get the same.

Safety of ``query``: exactly one statement, and it must be a ``SELECT`` (``WITH … SELECT`` included), so
nothing can be changed; at most ``max_rows`` rows and ``max_chars`` characters come back (the rest is
counted, not shown); a query running longer than ``timeout_s`` is interrupted; DuckDB gets one thread and
a memory limit. Every problem is a ``QueryError`` whose text the model can act on (DuckDB's own message
for bad SQL, with the columns the table has).

Loaded tables are cached by (path, size, mtime), a few at a time, so the solvers of a run share one.
DuckDB is imported on first use (about 0.4 s): a daemon that never runs Plan & Solve does not pay it.
"""

from __future__ import annotations

import datetime
import decimal
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dominds.workflows.plan_solve.limits import MAX_ROWS as MAX_ROWS
from dominds.workflows.plan_solve.limits import TIMEOUT_S as TIMEOUT_S

if TYPE_CHECKING:
    import duckdb

COUNT_LIMIT = 1_000_000
"""Rows beyond the shown ones are counted up to this; a bigger result reports "at least"."""
MAX_CHARS = 12_000
"""Characters of one result (JSON) shown to the model."""
MAX_FILE_BYTES = 512 * 1024 * 1024
"""A data file larger than this is refused instead of loaded."""
MEMORY_LIMIT = "512MB"
CACHED_TABLES = 4
SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz")


class QueryError(Exception):
    """The query or the data file cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[list[Any]]
    """Shown rows, JSON-ready (dates as ISO text, decimals as floats)."""
    row_count: int
    """All rows of the result, also those not shown (counted up to ``count_limit``)."""
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {"columns": self.columns, "rows": self.rows, "row_count": self.row_count, "truncated": self.truncated}


def table_name(path: Path) -> str:
    """``sales.csv.gz`` → ``sales``; anything that is not a plain identifier becomes ``_``."""
    stem = path.name
    for suffix in SUFFIXES:
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    name = re.sub(r"[^0-9a-zA-Z_]", "_", stem).strip("_").lower() or "data"
    return f"t_{name}" if name[0].isdigit() else name


class DataTable:
    """One data file loaded into its own in-memory DuckDB database, then locked down."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.table = table_name(path)
        if not path.name.lower().endswith(SUFFIXES):
            raise QueryError(f"{path.name}: only CSV/TSV files can be queried ({', '.join(SUFFIXES)})")
        size = path.stat().st_size
        if size == 0:
            raise QueryError(f"{path.name} is empty")
        if size > MAX_FILE_BYTES:
            raise QueryError(f"{path.name} is {size // (1024 * 1024)} MiB; the limit is {MAX_FILE_BYTES // (1024 * 1024)} MiB")
        import duckdb

        self._db = duckdb.connect(":memory:", config={"threads": 1, "memory_limit": MEMORY_LIMIT})
        try:
            self._db.execute(f'CREATE TABLE "{self.table}" AS SELECT * FROM read_csv($1, header = true)', [str(path)])
        except duckdb.Error as exc:
            self._db.close()
            raise QueryError(f"{path.name} cannot be read as CSV: {_first_line(str(exc))}") from exc
        for setting in (
            "SET python_enable_replacements = false",  # no scans of Python variables by name
            "SET autoinstall_known_extensions = false",
            "SET autoload_known_extensions = false",
            "SET enable_external_access = false",  # no files, network or extensions from here on
            "SET lock_configuration = true",  # and no query can change that
        ):
            self._db.execute(setting)
        self.columns = [Column(str(name), str(kind)) for name, kind, *_ in self._db.execute(f'DESCRIBE "{self.table}"').fetchall()]
        count = self._db.execute(f'SELECT count(*) FROM "{self.table}"').fetchone()
        self.row_count = int(count[0]) if count else 0

    def schema_text(self) -> str:
        return ", ".join(f"{c.name} {c.type}" for c in self.columns)

    def sample(self, rows: int = 5) -> QueryResult:
        return self.query(f'SELECT * FROM "{self.table}" LIMIT {int(rows)}')

    def query(self, sql: str, *, max_rows: int = MAX_ROWS, timeout_s: float | None = None) -> QueryResult:
        """Run one read-only SELECT; blocking (call it from a worker thread)."""
        timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
        import duckdb

        cursor = self._db.cursor()  # a connection of its own: solvers query at the same time
        try:
            statements = _parse(cursor, sql)
            if len(statements) != 1:
                raise QueryError(f"send exactly one SQL statement per call (got {len(statements)})")
            kind = statements[0].type
            if kind != duckdb.StatementType.SELECT:
                raise QueryError(f"only SELECT queries are allowed: the data is read-only (got {kind.name})")
            timer = threading.Timer(timeout_s, cursor.interrupt)
            timer.start()
            try:
                cursor.execute(sql)
                description = cursor.description or []
                fetched = cursor.fetchmany(max_rows + 1)
                extra = 0
                if len(fetched) > max_rows:  # count the rest without keeping it
                    while extra < COUNT_LIMIT and (batch := cursor.fetchmany(10_000)):
                        extra += len(batch)
            except duckdb.InterruptException as exc:
                raise QueryError(f"the query ran longer than {timeout_s:g} s and was stopped; aggregate more or filter") from exc
            except duckdb.Error as exc:
                raise QueryError(self._explain(exc)) from exc
            finally:
                timer.cancel()
        finally:
            cursor.close()
        columns = [str(d[0]) for d in description]
        shown = [[_jsonable(v) for v in row] for row in fetched[:max_rows]]
        return QueryResult(columns, shown, len(fetched) + extra, len(fetched) > max_rows)

    def _explain(self, exc: duckdb.Error) -> str:
        text = str(exc).strip()
        return f"{text}\n(table {self.table}: {self.schema_text()})"

    def close(self) -> None:
        self._db.close()


def _parse(cursor: duckdb.DuckDBPyConnection, sql: str) -> list[Any]:
    import duckdb

    if not isinstance(sql, str) or not sql.strip():
        raise QueryError("the SQL text is empty")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise QueryError(f"the SQL text has an invalid character at position {exc.start} (a lone surrogate)") from exc
    try:
        return list(cursor.extract_statements(sql))
    except duckdb.Error as exc:
        raise QueryError(str(exc).strip()) from exc


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _jsonable(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, datetime.date | datetime.datetime | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def result_text(result: QueryResult, max_chars: int = MAX_CHARS) -> str:
    """The result as the model reads it: JSON, cut to ``max_chars`` at a row boundary when needed."""
    payload = result.to_json()
    text = json.dumps(payload, ensure_ascii=False)
    while len(text) > max_chars and payload["rows"]:
        payload["rows"] = payload["rows"][: max(0, len(payload["rows"]) * 3 // 4)]
        payload["truncated"] = True
        text = json.dumps(payload, ensure_ascii=False)
    if payload["truncated"]:
        total = f"at least {result.row_count}" if result.row_count > COUNT_LIMIT else str(result.row_count)
        payload["note"] = f"{len(payload['rows'])} of {total} rows shown: aggregate, filter or add LIMIT"
        text = json.dumps(payload, ensure_ascii=False)
    return text


_cache: OrderedDict[tuple[str, int, int], DataTable] = OrderedDict()
_cache_lock = threading.Lock()


def open_table(path: Path) -> DataTable:
    """The loaded table of ``path`` (cached while the file is unchanged); blocking."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise QueryError(f"the data file {path.name} cannot be read: {exc.strerror or exc}") from exc
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _cache_lock:
        table = _cache.get(key)
        if table is not None:
            _cache.move_to_end(key)
            return table
        table = DataTable(path)
        _cache[key] = table
        while len(_cache) > CACHED_TABLES:  # dropped, not closed: a query may still be using it
            _cache.popitem(last=False)
        return table
