"""Context health (reference §3.12): how full the model's context is, and the remediation when it is too full."""

from __future__ import annotations

from typing import Any

from dominds.dialog.model import Dialog
from dominds.driver.services import EngineServices
from dominds.store.course_records import GenFinishRecord

DEFAULT_OPTIMAL_MAX_TOKENS = 100_000
CRITICAL_COUNTDOWN = 5


class ContextHealth:
    def __init__(self, engine: EngineServices) -> None:
        self.engine = engine
        self._critical_streak: dict[str, int] = {}

    def snapshot(self, dialog: Dialog, finish: GenFinishRecord) -> dict[str, Any] | None:
        usage = finish.usage
        if usage is None or not finish.provider or not finish.model:
            return None
        model = self.engine.config.get().catalog.model(finish.provider, finish.model)
        # The prompt must fit the smaller of the context window and the input limit (OpenAI's 1.05M
        # window takes 922K of input).
        limits = [n for n in ((model.context_length, model.input_length) if model else ()) if n]
        limit = min(limits) if limits else None
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        if not limit or not usage.available:
            return {"kind": "unavailable", "reason": "no context limit or usage for this model"}
        optimal = (model.optimal_max_tokens if model else None) or min(DEFAULT_OPTIMAL_MAX_TOKENS, limit)
        critical = (model.critical_max_tokens if model else None) or int(limit * 0.9)
        level = "critical" if prompt > critical else "caution" if prompt > optimal else "healthy"
        streak = self._critical_streak.get(dialog.self_id, 0) + 1 if level == "critical" else 0
        if streak >= CRITICAL_COUNTDOWN:
            # The runtime starts a new course itself rather than let the dialog hit the hard limit.
            dialog.pending_new_course = True
            dialog.new_course_reason = "context_health"
        if 0 < streak < CRITICAL_COUNTDOWN:
            self._critical_streak[dialog.self_id] = streak
        else:  # only dialogs in a critical streak are kept: the map does not grow with every dialog driven
            self._critical_streak.pop(dialog.self_id, None)
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
