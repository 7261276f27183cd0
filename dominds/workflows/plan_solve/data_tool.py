"""``query_data``: the planner's and solvers' read-only SQL over their run's data file (toolset ``plan-solve-data``).

A function tool like any other: the driver validates the arguments, records the call before it runs and
the result after (at most once), and the model reads the result or the error. The tool finds the data
file in the calling dialog's run record (``run_record.py``), so it needs no state of its own and works
for every run of the engine; called outside a Plan & Solve run it says so.
"""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path

from dominds.extras import PLAN_SOLVE, missing_extra_message
from dominds.tools.base import FuncTool, ToolCallContext, ToolError, Toolsets, object_schema
from dominds.workflows.plan_solve.limits import MAX_ROWS, TIMEOUT_S

TOOLSET = "plan-solve-data"
TOOL_NAME = "query_data"


def run_data_path(ctx: ToolCallContext) -> Path:
    """The data file of the run the calling dialog belongs to."""
    engine = ctx.services.get("engine")
    if engine is None:
        raise ToolError(f"{TOOL_NAME} needs the engine (it runs only inside a dialog)")
    from dominds.workflows.plan_solve import run_record  # with its run records: loaded when a run uses it

    root = engine.get_dialog(ctx.root_id)
    try:
        record = run_record.load(root.files.dir)
    except run_record.RunRecordError as exc:
        raise ToolError(f"{TOOL_NAME} works only inside a Plan & Solve run: {exc}") from exc
    if record.data is None:
        raise ToolError("this Plan & Solve run has no data file: answer from the question alone")
    return run_record.resolve_shown(record.data.path, ctx.rtws.root)


async def _query_data(ctx: ToolCallContext, args: dict[str, object]) -> str:
    missing = missing_extra_message(PLAN_SOLVE)
    if missing is not None:
        raise ToolError(missing)
    # Loaded with a run (its web page and pipeline import them); a tool called before that imports them
    # in a worker thread, not on the event loop.
    await asyncio.to_thread(importlib.import_module, "dominds.workflows.plan_solve.run_record")
    await asyncio.to_thread(importlib.import_module, "dominds.workflows.plan_solve.dataset")
    from dominds.workflows.plan_solve.dataset import QueryError, open_table, result_text

    path = run_data_path(ctx)
    sql = str(args.get("sql", ""))
    try:
        table = await asyncio.to_thread(open_table, path)
        result = await asyncio.to_thread(table.query, sql)
    except QueryError as exc:
        raise ToolError(f"query failed: {exc}") from exc
    return result_text(result)


QUERY_DATA = FuncTool(
    name=TOOL_NAME,
    description=(
        "Run ONE read-only SQL SELECT (DuckDB dialect) over this run's data table and get the result as JSON "
        '{"columns", "rows", "row_count", "truncated"}. Compute every number you report with it: sums, '
        "averages, shares, growth (GROUP BY, date_trunc('quarter', order_date), window functions). "
        f"At most {MAX_ROWS} rows come back and a query may run {TIMEOUT_S:g} s; aggregate instead of "
        "listing rows. A bad query returns the database's error message: fix the SQL and try again."
    ),
    parameters=object_schema(
        {"sql": {"type": "string", "minLength": 1, "maxLength": 20_000, "description": "one SELECT statement"}},
        ["sql"],
    ),
    handler=_query_data,
)


def data_toolsets() -> Toolsets:
    return Toolsets.of({TOOLSET: [QUERY_DATA]})
