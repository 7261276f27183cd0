"""Context health (reference §3.12): how full the model's context is, and the remediation when it is too full.

The critical streak (how many measured generations in a row were critical) is persisted in each
generation's ``GenFinishRecord.critical_streak``, which is written before the generation's events are
published; the next generation's streak is read from the course, so a daemon restart mid-countdown
goes on with it instead of starting again (it lived in the engine's memory before).
"""

from __future__ import annotations

from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver.services import EngineServices
from dominds.llm.context_thresholds import context_thresholds
from dominds.store.course_records import GenFinishRecord

CRITICAL_COUNTDOWN = 5


class ContextHealth:
    def __init__(self, engine: EngineServices) -> None:
        self.engine = engine

    def snapshot(self, dialog: Dialog, finish: GenFinishRecord) -> dict[str, Any] | None:
        usage = finish.usage
        if usage is None or not finish.provider or not finish.model:
            return None
        model = self.engine.config.get().catalog.model(finish.provider, finish.model)
        thresholds = context_thresholds(model)  # the catalog's, or the `context_health:` override of llm.yaml
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        if thresholds is None or not usage.available:
            return {"kind": "unavailable", "reason": "no context limit or usage for this model"}
        limit, optimal, critical = thresholds.limit, thresholds.optimal, thresholds.critical
        level = "critical" if prompt > critical else "caution" if prompt > optimal else "healthy"
        streak = previous_critical_streak(dialog) + 1 if level == "critical" else 0
        finish.critical_streak = streak
        if streak >= CRITICAL_COUNTDOWN:
            # The runtime starts a new course itself rather than let the dialog hit the hard limit.
            dialog.pending_new_course = True
            dialog.new_course_reason = "context_health"
        return {
            "kind": "available",
            "promptTokens": prompt,
            "completionTokens": usage.output_tokens,
            "modelContextLimitTokens": limit,
            "effectiveOptimalMaxTokens": optimal,
            "effectiveCriticalMaxTokens": critical,
            "hardUtil": round(prompt / limit, 4),
            "level": level,
            "criticalCountdown": max(CRITICAL_COUNTDOWN - streak, 0) if level == "critical" else None,
        }


def previous_critical_streak(dialog: Dialog) -> int:
    """The critical streak of the course's last measured generation (0 when it was not critical).

    Generations without a measurement (no usage, an unknown window) neither extend nor end a streak. A
    record older than ``critical_streak`` gives it through its snapshot's countdown."""
    for record in reversed(dialog.records):
        if not isinstance(record, GenFinishRecord):
            continue
        if record.critical_streak is not None:
            return record.critical_streak
        health = record.context_health
        if health and health.get("kind") == "available":
            countdown = health.get("criticalCountdown")
            return CRITICAL_COUNTDOWN - int(countdown) if health.get("level") == "critical" and countdown is not None else 0
    return 0
