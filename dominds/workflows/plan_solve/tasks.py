"""Slide tasks and slides: parsing teammate answers and coercing edited tasks (seed §3).

The coercion rules are the origin example's: ``id`` an integer > 0, ``title`` and ``objective``
non-empty after trimming, ``insights``/``query_suggestions`` lists of strings, ``chart_hint``/``notes``
optional strings; ids must be unique and tasks are ordered by id. Every error names the task.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dominds.workflows.plan_solve.limits import MAX_CHART_POINTS as MAX_CHART_POINTS

CHART_TYPES = ("bar", "line", "pie", "area")
MAX_CHARTS_PER_SLIDE = 2
MAX_TITLE_CHARS = 500
"""A deck title longer than this is cut before the cover fits it."""
_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


class TaskError(ValueError):
    """A task or slide that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class SlideTask:
    """One slide to produce, as planned (or edited by the user)."""

    id: int
    title: str
    objective: str
    insights: list[str] = field(default_factory=list)
    query_suggestions: list[str] = field(default_factory=list)
    chart_hint: str | None = None
    notes: str | None = None


@dataclass(frozen=True)
class Plan:
    tasks: list[SlideTask]
    summary: str
    title: str | None = None
    """The deck's title for the cover slide (the planner's ``title``; the question when absent)."""


def extract_json(text: str) -> Any:
    """The JSON value an answer carries: the whole text, a fenced block, or the first object/array in it."""
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            return decoder.raw_decode(text, match.start())[0]
        except json.JSONDecodeError:
            continue
    raise TaskError("the answer contains no JSON object")


def parse_plan(answer: str) -> Plan:
    """The planner's answer: ``{"plan_summary": str, "tasks": [...]}`` (or a bare task list)."""
    try:
        value = extract_json(answer)
    except TaskError as exc:
        raise TaskError(f"the planner's answer is not a JSON plan ({exc}): {answer[:200]!r}") from exc
    raw_tasks, summary, title = (value, "", "") if isinstance(value, list) else (None, "", "")
    if isinstance(value, dict):
        raw_tasks = value.get("tasks")
        summary = str(value.get("plan_summary") or value.get("summary") or "").strip()
        title = _text(value.get("title"))
    if not isinstance(raw_tasks, list):
        raise TaskError('the planner\'s answer has no "tasks" list')
    if not raw_tasks:
        raise TaskError("the planner returned no tasks")
    tasks = coerce_tasks(raw_tasks)
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    return Plan(tasks, summary or f"{len(tasks)} slides planned", title or None)


def coerce_tasks(raw: Any) -> list[SlideTask]:
    """Edited (or planned) tasks → ``SlideTask``s, ordered by id; raises ``TaskError``."""
    if not isinstance(raw, list):
        raise TaskError(f"tasks must be a list of task objects, not {type(raw).__name__}")
    if not raw:
        raise TaskError("the task list is empty")
    tasks = [coerce_task(item, position) for position, item in enumerate(raw, 1)]
    ids = [t.id for t in tasks]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise TaskError(f"task ids must be unique; repeated: {', '.join(map(str, duplicates))}")
    return sorted(tasks, key=lambda t: t.id)


def coerce_task(raw: Any, position: int = 1) -> SlideTask:
    where = f"task {position}"
    if isinstance(raw, SlideTask):
        return raw
    if not isinstance(raw, dict):
        raise TaskError(f"{where}: expected an object, got {type(raw).__name__}")
    task_id = _positive_int(raw.get("id"))
    if task_id is None:
        raise TaskError(f"{where}: id must be an integer > 0 (got {raw.get('id')!r})")
    where = f"task {task_id}"
    title, objective = _text(raw.get("title")), _text(raw.get("objective"))
    if not title or not objective:
        raise TaskError(f"{where}: title and objective must not be empty")
    return SlideTask(
        id=task_id,
        title=title,
        objective=objective,
        insights=_string_list(raw.get("insights"), f"{where}: insights"),
        query_suggestions=_string_list(raw.get("query_suggestions"), f"{where}: query_suggestions"),
        chart_hint=_text(raw.get("chart_hint")) or None,
        notes=_text(raw.get("notes")) or None,
    )


def parse_slide(answer: str, task: SlideTask) -> dict[str, Any]:
    """A solver's answer → the slide format of seed §3.2 (``id``, ``title``, ``text``, ``charts``)."""
    try:
        value = extract_json(answer)
    except TaskError as exc:
        raise TaskError(f"slide {task.id}: the solver's answer is not a JSON slide ({exc})") from exc
    if isinstance(value, dict) and isinstance(value.get("slide"), dict):
        value = value["slide"]
    if not isinstance(value, dict):
        raise TaskError(f"slide {task.id}: expected a JSON object, got {type(value).__name__}")
    slide_id = _positive_int(value.get("id", task.id))
    if slide_id != task.id:
        raise TaskError(f"slide {task.id}: the answer is for slide {value.get('id')!r}")
    text = _text(value.get("text"))
    if not text:
        raise TaskError(f"slide {task.id}: text must not be empty")
    charts = value.get("charts") or []
    if not isinstance(charts, list) or len(charts) > MAX_CHARTS_PER_SLIDE:
        raise TaskError(f"slide {task.id}: charts must be a list of at most {MAX_CHARTS_PER_SLIDE}")
    return {
        "id": task.id,
        "title": _text(value.get("title")) or task.title,
        "text": text,
        "charts": [_chart(chart, task.id) for chart in charts],
    }


def _chart(raw: Any, slide_id: int) -> dict[str, Any]:
    """One chart: ``data`` given by the model, or a ``query`` whose rows become the data (``chart_from_rows``)."""
    where = f"slide {slide_id}: chart"
    if not isinstance(raw, dict):
        raise TaskError(f"{where} must be an object")
    kind = _text(raw.get("type")).lower() or "bar"
    if kind not in CHART_TYPES:
        raise TaskError(f"{where} type must be one of {', '.join(CHART_TYPES)} (got {kind!r})")
    query = _text(raw.get("query"))
    if query:
        return {"type": kind, "title": _text(raw.get("title")), "query": query, "data": []}
    data = raw.get("data")
    if not isinstance(data, list) or not data:
        raise TaskError(f"{where} needs a SQL \"query\" or a non-empty \"data\" list of {{name, value}}")
    points = []
    for point in data:
        value = point.get("value") if isinstance(point, dict) else None
        number = _number(value)
        if not isinstance(point, dict) or not _text(point.get("name")) or number is None:
            raise TaskError(f"{where} point {point!r} needs a name and a numeric value")
        points.append({"name": _text(point["name"]), "value": number})
    return {"type": kind, "title": _text(raw.get("title")), "data": points[:MAX_CHART_POINTS]}


def chart_from_rows(chart: dict[str, Any], columns: list[str], rows: list[list[Any]], slide_id: int) -> dict[str, Any]:
    """The chart with its ``data`` taken from its query's rows: first column the label, second the number."""
    where = f"slide {slide_id}: chart {chart.get('title') or chart['type']!r}"
    if len(columns) < 2:
        raise TaskError(f"{where}: its query must return two columns, a label and a number (got {', '.join(columns)})")
    if not rows:
        raise TaskError(f"{where}: its query returned no rows")
    if len(rows) > MAX_CHART_POINTS:
        raise TaskError(f"{where}: its query returned {len(rows)} rows; a chart shows at most {MAX_CHART_POINTS} (aggregate or LIMIT)")
    points = []
    for row in rows:
        number = _number(row[1])
        if number is None:
            raise TaskError(f"{where}: the second column must be a number, got {row[1]!r} for {row[0]!r}")
        points.append({"name": "" if row[0] is None else str(row[0]), "value": number})
    return {**chart, "data": points, "source": "query"}


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value > 0 else None


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return float(value.replace(",", ""))
        except ValueError:
            return None
    return None


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _string_list(value: Any, where: str) -> list[str]:
    if value is None or value == "" or value == []:
        return []
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise TaskError(f"{where} must be a list of strings (got {type(value).__name__})")
    return [str(item).strip() for item in value if str(item).strip()]
