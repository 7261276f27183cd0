"""get_now and calculate_date: the seed's examples with their correct weekdays, month ends, the tools."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from dominds.rtws import Rtws
from dominds.tools.base import ToolCallContext, ToolError
from dominds.workflows.debate.timetools import TOOLSET, DateToolError, add_months, calculate_date, get_now


def test_the_seeds_calculate_date_example_lands_on_a_sunday() -> None:
    # §3.3 says "2025-12-21", "Saturday": the date is right, the weekday is not
    assert calculate_date("2025-12-04", {"weeks": 2, "days": 3}) == {"result_date": "2025-12-21", "weekday": "Sunday"}


def test_the_seeds_get_now_example_is_a_thursday() -> None:
    # §3.2 says 2025-12-04 is a "Wednesday"
    now = datetime(2025, 12, 4, 2, 0, tzinfo=UTC)
    assert get_now("Asia/Shanghai", now=now) == {
        "now": "2025-12-04T10:00:00",
        "timezone": "Asia/Shanghai",
        "weekday": "Thursday",
        "date": "2025-12-04",
    }


def test_the_timezone_moves_the_date() -> None:
    late_utc = datetime(2025, 12, 4, 20, 30, tzinfo=UTC)
    assert get_now("Asia/Shanghai", now=late_utc)["date"] == "2025-12-05"
    assert get_now("America/New_York", now=late_utc)["weekday"] == "Thursday"
    assert get_now()["timezone"] == "Asia/Shanghai"
    with pytest.raises(DateToolError, match="unknown timezone"):
        get_now("Mars/Olympus")


def test_the_seeds_plan_deadline_is_six_weeks_after_its_start() -> None:
    # §2.2 writes the 6-week deadline as 2025-01-15, a date before the plan was made (2025-12-04)
    assert calculate_date("2025-12-04", {"weeks": 6}) == {"result_date": "2026-01-15", "weekday": "Thursday"}


@pytest.mark.parametrize(
    ("base", "offset", "expected"),
    [
        ("2026-01-31", {"months": 1}, "2026-02-28"),  # clamp to the month's end
        ("2024-01-31", {"months": 1}, "2024-02-29"),  # leap year
        ("2025-03-31", {"months": -1}, "2025-02-28"),
        ("2024-02-29", {"years": 1}, "2025-02-28"),
        ("2025-12-15", {"months": 1}, "2026-01-15"),  # across the year
        ("2026-01-31", {"months": 1, "days": 1}, "2026-03-01"),  # months first, then days
        ("2025-12-04", {"days": -4}, "2025-11-30"),
        ("2025-12-04", {"weeks": "2"}, "2025-12-18"),  # numbers as text, as models send them
        ("2025-12-04", {}, "2025-12-04"),
    ],
)
def test_month_ends_and_signs(base: str, offset: dict[str, object], expected: str) -> None:
    result = calculate_date(base, offset)
    assert result["result_date"] == expected
    assert result["weekday"] == datetime.fromisoformat(expected).strftime("%A")


@pytest.mark.parametrize(
    ("base", "offset", "message"),
    [
        ("2025-13-01", {"days": 1}, "YYYY-MM-DD"),
        ("2025-12-04", {"hours": 1}, "unknown offset unit"),
        ("2025-12-04", {"days": 1.5}, "whole number"),
        ("2025-12-04", {"days": True}, "whole number"),
        ("9999-12-01", {"months": 1}, "outside the years"),
        ("9999-12-30", {"days": 5}, "outside the years"),
    ],
)
def test_bad_input_is_explained(base: str, offset: dict[str, object], message: str) -> None:
    with pytest.raises(DateToolError, match=message):
        calculate_date(base, offset)
    assert add_months(datetime(2025, 1, 31).date(), 13).isoformat() == "2026-02-28"


async def test_the_function_tools_use_the_seed_envelope(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from dominds.workflows.debate.members import debate_extensions

    rtws = Rtws(tmp_path)
    (tmp_path / ".minds").mkdir()
    (tmp_path / ".minds" / "debate.yaml").write_text("timezone: UTC\n")
    tools = {t.name: t for t in debate_extensions().toolsets.get(TOOLSET) or []}
    ctx = ToolCallContext(rtws=rtws, root_id="r", self_id="s", agent_id="debate-planner")
    ok = json.loads(await tools["calculate_date"].handler(ctx, {"base_date": "2025-12-04", "offset": {"weeks": 2, "days": 3}}))
    assert ok == {"success": True, "data": {"result_date": "2025-12-21", "weekday": "Sunday"}}
    bad = json.loads(await tools["calculate_date"].handler(ctx, {"base_date": "soon", "offset": {}}))
    assert bad["success"] is False and "YYYY-MM-DD" in bad["error"]
    with pytest.raises(ToolError):
        await tools["calculate_date"].handler(ctx, {"base_date": "2025-12-04", "offset": 3})
    now = json.loads(await tools["get_now"].handler(ctx, {}))
    assert now["success"] and now["data"]["timezone"] == "UTC", "the workspace's debate timezone is the default"
