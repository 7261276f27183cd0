"""``get_now`` and ``calculate_date`` (seed §3.2, §3.3), also offered to the debate members as function tools.

Month arithmetic clamps to the last day of the target month: 2026-01-31 + 1 month = 2026-02-28,
2024-01-31 + 1 month = 2024-02-29. (The origin uses JavaScript ``Date``, which rolls over into the
next month, 2026-01-31 + 1 month = 2026-03-03; that is rarely what "one month later" means.)
Years and months are applied first, then weeks and days, so "+1 month +1 day" from Jan 31 is Mar 1.

The seed's own examples name the wrong weekdays: 2025-12-04 is a Thursday (not Wednesday) and
2025-12-21 is a Sunday (not Saturday). The weekday here is always computed, never copied.
"""

from __future__ import annotations

import calendar
import json
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dominds.tools.base import FuncTool, ToolCallContext, ToolError, Toolsets, object_schema

DEFAULT_TIMEZONE = "Asia/Shanghai"
OFFSET_UNITS = ("years", "months", "weeks", "days")
TOOLSET = "debate-time"


class DateToolError(ValueError):
    """Bad input to a date tool; the message says what to fix."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise DateToolError(f"unknown timezone {name!r}; use an IANA name such as 'Asia/Shanghai' or 'UTC'") from exc


def get_now(timezone: str = DEFAULT_TIMEZONE, *, now: datetime | None = None) -> dict[str, Any]:
    """§3.2: the current local time in ``timezone`` (``now`` is for tests: an aware datetime)."""
    local = (now or datetime.now(tz=zone(timezone))).astimezone(zone(timezone))
    return {
        "now": local.replace(microsecond=0, tzinfo=None).isoformat(),
        "timezone": timezone,
        "weekday": local.strftime("%A"),
        "date": local.date().isoformat(),
    }


def add_months(day: date, months: int) -> date:
    """``day`` moved by ``months`` calendar months, clamped to the end of the target month."""
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    if not 1 <= year <= 9999:
        raise DateToolError("the result is outside the years 1..9999")
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


def calculate_date(base_date: str, offset: Mapping[str, Any]) -> dict[str, Any]:
    """§3.3: ``base_date`` (YYYY-MM-DD) plus ``offset`` {years, months, weeks, days}, any sign."""
    try:
        base = date.fromisoformat(str(base_date).strip())
    except ValueError as exc:
        raise DateToolError(f"base_date {base_date!r} is not a date in YYYY-MM-DD form") from exc
    unknown = sorted(set(offset) - set(OFFSET_UNITS))
    if unknown:
        raise DateToolError(f"unknown offset unit(s) {', '.join(unknown)}; use {', '.join(OFFSET_UNITS)}")
    amounts: dict[str, int] = {}
    for unit in OFFSET_UNITS:
        value = offset.get(unit, 0)
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise DateToolError(f"offset.{unit} must be a whole number")
        try:
            number = float(value)
        except ValueError as exc:
            raise DateToolError(f"offset.{unit} must be a whole number, not {value!r}") from exc
        if number != int(number):
            raise DateToolError(f"offset.{unit} must be a whole number, not {value!r}")
        amounts[unit] = int(number)
    result = add_months(base, amounts["years"] * 12 + amounts["months"])
    try:
        result += timedelta(weeks=amounts["weeks"], days=amounts["days"])
    except OverflowError as exc:
        raise DateToolError("the result is outside the years 1..9999") from exc
    return {"result_date": result.isoformat(), "weekday": result.strftime("%A")}


def tool_result(compute: Any, *args: Any) -> str:
    """The seed's envelope: ``{"success": true, "data": …}`` or ``{"success": false, "error": …}``."""
    try:
        return json.dumps({"success": True, "data": compute(*args)}, ensure_ascii=False)
    except DateToolError as exc:
        return json.dumps({"success": False, "error": str(exc)}, ensure_ascii=False)


async def _get_now_tool(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    from dominds.workflows.debate.settings import load_settings

    timezone = str(args.get("timezone") or load_settings(ctx.rtws).timezone)
    return tool_result(get_now, timezone)


async def _calculate_date_tool(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    offset = args.get("offset")
    if not isinstance(offset, dict):
        raise ToolError("offset must be an object such as {\"weeks\": 2, \"days\": 3}")
    return tool_result(calculate_date, args.get("base_date", ""), offset)


_UNIT = {"type": "integer", "description": "may be negative"}
TIME_TOOLS = [
    FuncTool(
        name="get_now",
        description="The current date, time and weekday. The timezone defaults to the debate's (Asia/Shanghai).",
        parameters=object_schema({"timezone": {"type": "string", "description": "IANA name, e.g. Asia/Shanghai"}}),
        handler=_get_now_tool,
    ),
    FuncTool(
        name="calculate_date",
        description=(
            "A date plus an offset in years, months, weeks and days, with its weekday. Months clamp to the "
            "month's last day (Jan 31 + 1 month = Feb 28/29)."
        ),
        parameters=object_schema(
            {
                "base_date": {"type": "string", "description": "YYYY-MM-DD"},
                "offset": object_schema({unit: _UNIT for unit in OFFSET_UNITS}),
            },
            ["base_date", "offset"],
        ),
        handler=_calculate_date_tool,
    ),
]


def time_toolsets() -> Toolsets:
    """The ``debate-time`` toolset, added to an engine by the debate's extensions."""
    return Toolsets.of({TOOLSET: TIME_TOOLS})
