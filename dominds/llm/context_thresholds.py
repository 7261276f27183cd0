"""A model's context-health thresholds, and their override per model in ``.minds/llm.yaml``.

The catalog gives each model its window (``context_length`` / ``input_length``) and may give its
thresholds (``optimal_max_tokens``: caution above it; ``critical_max_tokens``: critical above it).
Changing them for a built-in model used to mean copying its whole provider into ``llm.yaml`` (an entry
there replaces the built-in one). The root key ``context_health:`` overrides just the thresholds::

    context_health:
      anthropic:                      # provider key (built-in or from this file)
        claude-sonnet-4-6:            # model key
          optimal_max_tokens: 150000
          critical_max_tokens: 400000

Each override is checked where it is read: an unknown provider, model or key, a value that is not a
positive integer, a critical threshold beyond the model's window or an optimal one not below the
critical one is a ``Problem`` with its line (``dominds check`` shows it) and that model's override is
ignored; the daemon never fails on it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from dominds.llm.catalog import ModelInfo, ProviderConfig
from dominds.problems import (
    ProblemCollector,
    did_you_mean,
    is_invalid,
    is_mapping,
    is_null,
    mapping_entries,
    try_node_value,
)

ROOT_KEY = "context_health"
THRESHOLD_KEYS = ("optimal_max_tokens", "critical_max_tokens")
DEFAULT_OPTIMAL_MAX_TOKENS = 100_000
"""Caution above this many prompt tokens when the model names no ``optimal_max_tokens``, or above
``DEFAULT_OPTIMAL_SHARE`` of a smaller window."""
DEFAULT_OPTIMAL_SHARE = 0.8
"""Below the critical share: capping the default caution at the whole window (as before) put it above the
critical level of every window under 111K tokens (a local server's 32K), so such a model was never told
"caution" before "critical"."""
DEFAULT_CRITICAL_SHARE = 0.9
"""Critical above this share of the window when the model names no ``critical_max_tokens``."""


@dataclass(frozen=True)
class ContextThresholds:
    """What a prompt is measured against: the window and the two levels, in tokens."""

    limit: int
    """The smaller of the model's ``context_length`` and ``input_length``."""
    optimal: int
    critical: int


def context_thresholds(model: ModelInfo | None) -> ContextThresholds | None:
    """The thresholds in effect for ``model``; ``None`` when its window is unknown (no level then)."""
    if model is None:
        return None
    # The prompt must fit the smaller of the context window and the input limit (OpenAI's 1.05M
    # window takes 922K of input).
    limits = [n for n in (model.context_length, model.input_length) if n]
    if not limits:
        return None
    limit = min(limits)
    optimal = model.optimal_max_tokens or min(DEFAULT_OPTIMAL_MAX_TOKENS, int(limit * DEFAULT_OPTIMAL_SHARE))
    critical = model.critical_max_tokens or int(limit * DEFAULT_CRITICAL_SHARE)
    return ContextThresholds(limit=limit, optimal=optimal, critical=critical)


def apply_threshold_overrides(
    node: Any, line: int, providers: dict[str, ProviderConfig], collector: ProblemCollector
) -> dict[str, ProviderConfig]:
    """``providers`` with the ``context_health:`` overrides of ``node`` applied (the valid ones)."""
    if is_null(node):
        return providers
    where = f"`{ROOT_KEY}`"
    if not is_mapping(node):
        collector.wrong_type(node, line, where, "a mapping of provider key → model key → thresholds")
        return providers
    result = dict(providers)
    for provider_entry in mapping_entries(node, collector, where):
        provider = result.get(provider_entry.key)
        if provider is None:
            collector.error(
                provider_entry.line,
                f"{where}: unknown provider {provider_entry.key!r}{did_you_mean(provider_entry.key, result)}; ignored",
            )
            continue
        if not is_mapping(provider_entry.node):
            collector.wrong_type(
                provider_entry.node, provider_entry.line, f"{where}.{provider_entry.key}", "a mapping of model key → thresholds"
            )
            continue
        models = dict(provider.models)
        for model_entry in mapping_entries(provider_entry.node, collector, f"{where}.{provider_entry.key}"):
            who = f"{where}.{provider_entry.key}.{model_entry.key}"
            model = models.get(model_entry.key)
            if model is None:
                collector.error(
                    model_entry.line,
                    f"{where}: provider {provider_entry.key!r} has no model {model_entry.key!r}"
                    f"{did_you_mean(model_entry.key, models)}; ignored",
                )
                continue
            overridden = _overridden_model(who, model_entry.line, model_entry.node, model, collector)
            if overridden is not None:
                models[model_entry.key] = overridden
        result[provider.key] = dataclasses.replace(provider, models=models)
    return result


def _overridden_model(who: str, line: int, node: Any, model: ModelInfo, collector: ProblemCollector) -> ModelInfo | None:
    """``model`` with the thresholds of ``node``; ``None`` (nothing changed) when they are not usable."""
    if not is_mapping(node):
        collector.wrong_type(node, line, who, f"a mapping of {' and/or '.join(THRESHOLD_KEYS)}")
        return None
    settings: dict[str, int] = {}
    for entry in mapping_entries(node, collector, who):
        if entry.key not in THRESHOLD_KEYS:
            collector.warning(entry.line, f"{who}: unknown key {entry.key!r} ignored{did_you_mean(entry.key, THRESHOLD_KEYS)}")
            continue
        value = try_node_value(entry.node, collector)
        if is_invalid(value):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            collector.error(entry.line, f"{who}: `{entry.key}` must be a positive number of tokens, got {value!r}; override ignored")
            return None
        settings[entry.key] = value
    if not settings:
        return None
    overridden = dataclasses.replace(
        model,
        optimal_max_tokens=settings.get("optimal_max_tokens", model.optimal_max_tokens),
        critical_max_tokens=settings.get("critical_max_tokens", model.critical_max_tokens),
    )
    mistake = threshold_mistake(overridden)
    if mistake is not None:
        severity, message = mistake
        outcome = "override unused" if severity == "warning" else "override ignored"
        (collector.warning if severity == "warning" else collector.error)(line, f"{who}: {message}; {outcome}")
        return None
    return overridden


def threshold_mistake(model: ModelInfo) -> tuple[str, str] | None:
    """Why ``model``'s thresholds cannot work as written (severity, message), or ``None``."""
    thresholds = context_thresholds(model)
    if thresholds is None:
        return "warning", "the model has no `context_length` (or `input_length`), so it gets no context level"
    if thresholds.critical > thresholds.limit:
        return "error", f"`critical_max_tokens` {thresholds.critical} is beyond the model's window of {thresholds.limit} tokens"
    if thresholds.optimal >= thresholds.critical:
        return "error", f"the caution threshold ({thresholds.optimal}) must be below the critical one ({thresholds.critical})"
    return None
