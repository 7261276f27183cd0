"""Reading the provider catalog: the built-in ``defaults.yaml`` overlaid by the rtws ``.minds/llm.yaml``.

An rtws provider replaces the built-in one with the same key as a whole (no field-by-field merge, so
what the file says is exactly what runs); rtws providers come first, in file order. The root key
``context_health:`` then overrides the context-health thresholds of single models, built-in or not
(``context_thresholds.py``).

Loading never raises: mistakes become ``Problem``s (kind ``llm_workspace_config_error``) with their
line. A provider entry whose required fields are broken is left out, so a member naming it gets a
clear "unknown provider" problem rather than a half-configured provider.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from dominds.llm import BUILTIN_CATALOG_PATH
from dominds.llm.catalog import API_TYPES, BUILTIN_SOURCE, Catalog, ModelInfo, ProviderConfig
from dominds.llm.context_thresholds import ROOT_KEY as CONTEXT_HEALTH_KEY
from dominds.llm.context_thresholds import apply_threshold_overrides, threshold_mistake
from dominds.llm.pricing import ModelPricing, parse_pricing
from dominds.llm.retry import RETRY_SETTINGS
from dominds.problems import (
    LLM_CONFIG_ERROR,
    Problem,
    ProblemCollector,
    YamlEntry,
    compose_yaml,
    did_you_mean,
    is_invalid,
    is_mapping,
    is_null,
    mapping_entries,
    node_line,
    try_node_value,
)
from dominds.rtws import Rtws

_DEFAULTS_PATH = BUILTIN_CATALOG_PATH


def load_catalog(rtws: Rtws) -> tuple[Catalog, list[Problem]]:
    """Built-in providers overlaid by ``.minds/llm.yaml``; a missing file means built-ins only."""
    builtin, problems = _builtin_providers()
    path = rtws.llm_yaml
    collector = ProblemCollector(LLM_CONFIG_ERROR, ".minds/llm.yaml")
    rtws_providers: dict[str, ProviderConfig] = {}
    threshold_overrides: list[YamlEntry] = []
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = None
    except (OSError, UnicodeDecodeError) as exc:
        collector.error(None, f"cannot read the file: {exc}; built-in providers only")
        text = None
    if text is not None:
        rtws_providers = parse_providers_yaml(text, collector, threshold_overrides=threshold_overrides)
    merged = dict(rtws_providers)
    for key, provider in builtin.items():
        merged.setdefault(key, provider)
    for entry in threshold_overrides:  # after the merge: a built-in model's thresholds can be overridden too
        merged = apply_threshold_overrides(entry.node, entry.line, merged, collector)
    return Catalog(merged), [*problems, *collector.problems]


def builtin_catalog() -> Catalog:
    """The built-in providers alone (what ``defaults.yaml`` ships)."""
    return Catalog(dict(_builtin_providers()[0]))


@functools.cache
def _builtin_providers() -> tuple[dict[str, ProviderConfig], tuple[Problem, ...]]:
    # The package file never changes while we run, so parse it once.
    collector = ProblemCollector(LLM_CONFIG_ERROR, BUILTIN_SOURCE)
    providers = parse_providers_yaml(_DEFAULTS_PATH.read_text(encoding="utf-8"), collector)
    return providers, tuple(collector.problems)


def parse_providers_yaml(
    text: str, collector: ProblemCollector, *, threshold_overrides: list[YamlEntry] | None = None
) -> dict[str, ProviderConfig]:
    """Parse an ``llm.yaml`` document (``providers: {key: ProviderConfig}``) into valid providers.

    With ``threshold_overrides``, the document may also have a ``context_health:`` key, whose entry is
    appended there (it applies to the merged catalog; the built-in defaults have none)."""
    root_keys = ("providers", CONTEXT_HEALTH_KEY) if threshold_overrides is not None else ("providers",)
    root = compose_yaml(text, collector)
    if root is None or is_null(root):
        return {}
    if not is_mapping(root):
        collector.wrong_type(root, node_line(root), "llm.yaml", "a mapping with `providers:`", "file ignored")
        return {}
    providers: dict[str, ProviderConfig] = {}
    for entry in mapping_entries(root, collector, "llm.yaml"):
        if entry.key == CONTEXT_HEALTH_KEY and threshold_overrides is not None:
            threshold_overrides.append(entry)
            continue
        if entry.key != "providers":
            keys = " and ".join(f"`{k}`" for k in root_keys)
            collector.warning(
                entry.line, f"unknown key {entry.key!r} ignored{did_you_mean(entry.key, root_keys)}; the root keys are {keys}"
            )
            continue
        if is_null(entry.node):
            continue
        if not is_mapping(entry.node):
            collector.wrong_type(
                entry.node, entry.line, "`providers`", "a mapping of provider key → settings"
            )
            continue
        for provider_entry in mapping_entries(entry.node, collector, "providers"):
            provider = _parse_provider(
                provider_entry.key, provider_entry.line, provider_entry.node, collector
            )
            if provider is not None:
                providers[provider.key] = provider
    return providers


_PROVIDER_KEYS = (
    "name", "apiType", "baseUrl", "apiKeyEnvVar", "tech_spec_url", "api_mgmt_url", "model_param_options", "models",
    "reasoning_pass_back",
    "retry",
)  # fmt: skip
_MODEL_INT_KEYS = (
    "context_length", "input_length", "output_length", "optimal_max_tokens", "critical_max_tokens",
)  # fmt: skip


def _parse_provider(key: str, line: int, node: Any, collector: ProblemCollector) -> ProviderConfig | None:
    who = f"provider {key!r}"
    if not is_mapping(node):
        collector.wrong_type(node, line, who, "a mapping of settings")
        return None
    fields: dict[str, Any] = {}
    lines: dict[str, int] = {}
    models_entry: YamlEntry | None = None
    for entry in mapping_entries(node, collector, who):
        if entry.key not in _PROVIDER_KEYS:
            collector.warning(
                entry.line,
                f"{who}: unknown key {entry.key!r} ignored{did_you_mean(entry.key, _PROVIDER_KEYS)}",
            )
            continue
        if entry.key == "models":
            models_entry = entry
            continue
        value = try_node_value(entry.node, collector)
        if not is_invalid(value):
            fields[entry.key], lines[entry.key] = value, entry.line
    api_type = fields.get("apiType")
    if api_type is None:
        collector.error(
            line, f"{who}: `apiType` is required (one of {', '.join(API_TYPES)}); provider ignored"
        )
        return None
    if api_type not in API_TYPES:
        hint = "; the offline provider is `scripted`" if api_type == "mock" else ""
        collector.error(
            lines["apiType"],
            f"{who}: unknown apiType {api_type!r} (one of {', '.join(API_TYPES)}){hint}; provider ignored",
        )
        return None
    strings = {
        k: _optional_str(fields, lines, k, who, collector)
        for k in ("name", "baseUrl", "tech_spec_url", "api_mgmt_url")
    }
    key_var = _optional_str(fields, lines, "apiKeyEnvVar", who, collector)
    options = fields.get("model_param_options")
    if options is not None and not isinstance(options, dict):
        collector.error(
            lines["model_param_options"], f"{who}: `model_param_options` must be a mapping; ignored"
        )
        options = None
    pass_back = fields.get("reasoning_pass_back", False)
    if not isinstance(pass_back, bool | str):
        collector.error(
            lines["reasoning_pass_back"],
            f"{who}: `reasoning_pass_back` must be true, false or a field name (e.g. reasoning_content); ignored",
        )
        pass_back = False
    models = _parse_models(who, line, models_entry, collector)
    if models is None:
        return None
    retry = _retry_settings(fields.get("retry"), lines.get("retry", line), who, collector)
    return ProviderConfig(
        reasoning_pass_back=pass_back,
        key=key,
        name=strings["name"] or key,
        api_type="openai-compatible" if api_type == "openai" else api_type,
        base_url=strings["baseUrl"],
        api_key_env_var=key_var or None,
        models=models,
        source=collector.source,
        tech_spec_url=strings["tech_spec_url"],
        api_mgmt_url=strings["api_mgmt_url"],
        model_param_options=options or {},
        retry=retry,
    )


def _retry_settings(raw: object, line: int, who: str, collector: ProblemCollector) -> dict[str, float]:
    """A provider's ``retry:`` mapping, each setting a positive number of seconds (others reported, ignored)."""
    if raw is None:
        return {}
    names = RETRY_SETTINGS
    if not isinstance(raw, dict):
        collector.error(line, f"{who}: `retry` must be a mapping of {', '.join(names)}; ignored")
        return {}
    settings: dict[str, float] = {}
    for key, value in raw.items():
        if key not in RETRY_SETTINGS:
            collector.warning(line, f"{who}: unknown `retry` key {key!r} ignored{did_you_mean(str(key), names)}")
        elif isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            collector.error(line, f"{who}: `retry.{key}` must be a positive number of seconds, got {value!r}; ignored")
        else:
            settings[key] = float(value)
    return settings


def _parse_models(
    who: str, provider_line: int, models_entry: YamlEntry | None, collector: ProblemCollector
) -> dict[str, ModelInfo] | None:
    """The ``models`` mapping of a provider; ``None`` (provider ignored) when it is unusable."""
    if models_entry is None or is_null(models_entry.node):
        collector.error(
            provider_line, f"{who}: `models` is required (a mapping of model key → info); provider ignored"
        )
        return None
    if not is_mapping(models_entry.node):
        expected = "a mapping of model key → info (e.g. `my-model: {context_length: 8192}`)"
        collector.wrong_type(
            models_entry.node, models_entry.line, f"{who}: `models`", expected, "provider ignored"
        )
        return None
    models: dict[str, ModelInfo] = {}
    for entry in mapping_entries(models_entry.node, collector, f"{who} models"):
        if is_null(entry.node):
            models[entry.key] = ModelInfo(key=entry.key)
        elif not is_mapping(entry.node):
            collector.wrong_type(
                entry.node, entry.line, f"{who}: model {entry.key!r}", "a mapping (or empty)"
            )
        else:
            value = try_node_value(entry.node, collector)
            if not is_invalid(value):
                models[entry.key] = _model_info(
                    entry.key, value, entry.line, f"{who} model {entry.key!r}", collector
                )
    if not models:
        collector.error(models_entry.line, f"{who}: no usable model; provider ignored")
        return None
    return models


def _model_info(key: str, raw: dict[str, Any], line: int, who: str, collector: ProblemCollector) -> ModelInfo:
    # Model entries are free-form (UI hints, generator knobs); only the keys we compute with are checked.
    ints: dict[str, int | None] = {}
    for name in _MODEL_INT_KEYS:
        value = raw.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            collector.error(line, f"{who}: `{name}` must be a positive integer, got {value!r}; ignored")
            value = None
        ints[name] = value
    name_value = raw.get("name")
    if name_value is not None and not isinstance(name_value, str):
        collector.error(line, f"{who}: `name` must be a string; ignored")
        name_value = None
    extra = {k: v for k, v in raw.items() if k not in (*_MODEL_INT_KEYS, "name", "pricing")}
    model = ModelInfo(
        key=key,
        name=name_value,
        pricing=_pricing(raw.get("pricing"), line, who, collector),
        extra=extra,
        **ints,
    )
    if model.optimal_max_tokens or model.critical_max_tokens:  # thresholds that could never work: the defaults
        mistake = threshold_mistake(model)
        if mistake is not None:
            severity, message = mistake
            report = collector.warning if severity == "warning" else collector.error
            report(line, f"{who}: {message}; its thresholds are ignored")
            model = dataclasses.replace(model, optimal_max_tokens=None, critical_max_tokens=None)
    return model


def _pricing(raw: object, line: int, who: str, collector: ProblemCollector) -> ModelPricing | None:
    if raw is None:
        return None
    pricing = parse_pricing(raw)
    if isinstance(pricing, str):
        collector.error(line, f"{who}: {pricing}; ignored")
        return None
    return pricing


def _optional_str(
    fields: dict[str, Any], lines: dict[str, int], key: str, who: str, collector: ProblemCollector
) -> str | None:
    value = fields.get(key)
    if value is None or isinstance(value, str):
        return value
    collector.error(lines[key], f"{who}: `{key}` must be a string, got {type(value).__name__}; ignored")
    return None
