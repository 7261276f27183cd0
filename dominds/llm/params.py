"""The parameters each provider API accepts in a member's ``model_params``, and how they are checked.

A member's ``model_params``::

    max_tokens: 16000            # every provider: the output limit of one reply
    general: {max_tokens: …}     # the same, in a section
    anthropic: {…}               # read by apiType anthropic
    openai: {…}                  # read by openai-compatible and openai-responses
    codex: {…}                   # read by openai-responses after `openai` (Codex models)

Each API type declares here which sections it reads and which parameters each accepts, with a check of
the value. This module is light (no SDK import): the team loader, ``dominds check`` and the generators
all read the same declaration, so a documented parameter is never refused by one and accepted by another.
A catalog model may narrow what its API accepts (``thinking``, ``effort``, ``sampling`` in its entry):
``model_problems`` checks a member's parameters against both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Check = Callable[[Any], str | None]
"""``None`` when the value is fine, else what is wrong with it (``"must be …"``)."""


@dataclass(frozen=True)
class Param:
    check: Check
    doc: str


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def number(low: float, high: float) -> Check:
    def check(value: Any) -> str | None:
        return None if _is_number(value) and low <= value <= high else f"must be a number from {low:g} to {high:g}"

    return check


def integer(low: int, high: int | None = None) -> Check:
    def check(value: Any) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high)
        return None if ok else f"must be an integer ≥ {low}" + (f" and ≤ {high}" if high is not None else "")

    return check


def one_of(*values: str) -> Check:
    def check(value: Any) -> str | None:
        return None if value in values else f"must be one of {', '.join(values)}"

    return check


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def string(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "must be a non-empty string"


def strings(max_items: int) -> Check:
    def check(value: Any) -> str | None:
        items = [value] if isinstance(value, str) else value
        ok = isinstance(items, list) and 0 < len(items) <= max_items and all(isinstance(s, str) and s for s in items)
        return None if ok else f"must be a string or a list of at most {max_items} non-empty strings"

    return check


def mapping(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be a mapping"


def fields(known: Mapping[str, Check], required: tuple[str, ...] = ()) -> Check:
    """A mapping whose keys are ``known`` (each checked) and which has every ``required`` key."""

    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return "must be a mapping"
        for name in required:
            if name not in value:
                return f"needs `{name}`"
        for name, item in value.items():
            if name not in known:
                return f"has an unknown key `{name}` (known: {', '.join(known)})"
            problem = known[name](item)
            if problem:
                return f"`{name}` {problem}"
        return None

    return check


EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
"""Anthropic ``output_config.effort``."""
OPENAI_EFFORT_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""OpenAI ``reasoning.effort`` / ``reasoning_effort`` (a model accepts a subset)."""
MAX_TOKENS = integer(1, 10_000_000)


def _anthropic_thinking(value: Any) -> str | None:
    if not isinstance(value, dict) or not value:
        return "must be a mapping such as {type: adaptive} or {budget_tokens: 4096}"
    kind = value.get("type", "enabled" if "budget_tokens" in value else None)
    known = {"type", "budget_tokens", "display"}
    if set(value) - known:
        return f"has an unknown key `{sorted(set(value) - known)[0]}` (known: type, budget_tokens, display)"
    if kind not in ("enabled", "adaptive", "disabled", "between_tools"):
        return "`type` must be one of enabled, adaptive, disabled, between_tools"
    if kind == "enabled" and integer(1024)(value.get("budget_tokens")):
        return "`budget_tokens` must be an integer ≥ 1024 (type enabled)"
    if kind != "enabled" and "budget_tokens" in value:
        return f"`budget_tokens` only goes with type enabled, not {kind}"
    if "display" in value and value["display"] not in ("summarized", "omitted"):
        return "`display` must be summarized or omitted"
    return None


def _prompt_caching(value: Any) -> str | None:
    # YAML reads a bare `off` as false: take it as meant.
    return None if value is False or value in ("conversation", "system", "off") else "must be conversation, system or off"


ANTHROPIC_PARAMS: Mapping[str, Param] = {
    "max_tokens": Param(MAX_TOKENS, "output limit of one reply (default: the model's, up to 32000)"),
    "temperature": Param(number(0, 1), "sampling temperature (models with `sampling: false` refuse it)"),
    "top_p": Param(number(0, 1), "nucleus sampling"),
    "top_k": Param(integer(1), "top-k sampling"),
    "stop_sequences": Param(strings(8191), "texts that end the reply"),
    "thinking": Param(_anthropic_thinking, "{type: adaptive} / {type: enabled, budget_tokens: N} / {type: disabled}"),
    "thinking_budget": Param(integer(1024), "shorthand for thinking: {type: enabled, budget_tokens: N}"),
    "effort": Param(one_of(*EFFORT_LEVELS), "output_config.effort"),
    "output_config": Param(fields({"effort": one_of(*EFFORT_LEVELS)}), "sent as output_config ({effort})"),
    "prompt_caching": Param(
        _prompt_caching,
        "cache breakpoints: on the system prompt and the growing conversation (default), the system prompt only, none",
    ),
    "cache_ttl": Param(one_of("5m", "1h"), "lifetime of the cache entries written (1h costs more to write)"),
    "reasoning_split": Param(boolean, "passed through for Anthropic-compatible servers that read it"),
}
"""``model_params.anthropic`` (apiType ``anthropic``)."""

_OPENAI_COMMON: Mapping[str, Param] = {
    "max_tokens": Param(MAX_TOKENS, "output limit of one reply"),
    "temperature": Param(number(0, 2), "sampling temperature"),
    "top_p": Param(number(0, 1), "nucleus sampling"),
    "reasoning_effort": Param(one_of(*OPENAI_EFFORT_LEVELS), "reasoning effort of reasoning models"),
    "verbosity": Param(one_of("low", "medium", "high"), "how long the answer is"),
    "parallel_tool_calls": Param(boolean, "may the model call several tools at once"),
    "user": Param(string, "an end-user id for abuse monitoring"),
    "extra_body": Param(mapping, "sent as is in the request body (server-specific parameters)"),
}

OPENAI_CHAT_PARAMS: Mapping[str, Param] = {
    **_OPENAI_COMMON,
    "max_completion_tokens": Param(MAX_TOKENS, "the output limit under its newer name"),
    "frequency_penalty": Param(number(-2, 2), "penalise repeated tokens"),
    "presence_penalty": Param(number(-2, 2), "penalise tokens already present"),
    "seed": Param(integer(-(2**63)), "best-effort determinism"),
    "logprobs": Param(boolean, "return log probabilities"),
    "top_logprobs": Param(integer(0, 20), "how many alternatives per token"),
    "stop": Param(strings(4), "texts that end the reply"),
    "logit_bias": Param(mapping, "token id → bias"),
    "top_k": Param(integer(1), "top-k sampling (vLLM, Ollama, llama.cpp)"),
    "min_p": Param(number(0, 1), "min-p sampling (vLLM, Ollama, llama.cpp)"),
    "repetition_penalty": Param(number(0, 10), "repetition penalty (vLLM, llama.cpp)"),
}
"""``model_params.openai`` as apiType ``openai-compatible`` (Chat Completions) reads it."""

OPENAI_RESPONSES_PARAMS: Mapping[str, Param] = {
    **_OPENAI_COMMON,
    "max_output_tokens": Param(MAX_TOKENS, "the output limit under the Responses API's name"),
    "reasoning_summary": Param(one_of("auto", "concise", "detailed", "none"), "reasoning summaries shown as thinking"),
    "service_tier": Param(one_of("auto", "default", "flex", "priority"), "processing tier"),
    "prompt_cache_key": Param(string, "groups requests that share a prefix (default: the dialog id)"),
    "prompt_cache_retention": Param(one_of("30m", "12h", "in_memory", "24h"), "how long cached prefixes are kept"),
    "truncation": Param(one_of("auto", "disabled"), "what the API does with a context that does not fit"),
}
"""``model_params.openai`` (then ``codex``) as apiType ``openai-responses`` reads it."""


@dataclass(frozen=True)
class ApiParams:
    """What one API type reads from ``model_params``."""

    sections: tuple[str, ...]
    """Sections read, later ones winning; ``general`` first."""
    params: Mapping[str, Param]


API_PARAMS: Mapping[str, ApiParams] = {
    "anthropic": ApiParams(("general", "anthropic"), ANTHROPIC_PARAMS),
    "openai-compatible": ApiParams(("general", "openai"), OPENAI_CHAT_PARAMS),
    "openai-responses": ApiParams(("general", "openai", "codex"), OPENAI_RESPONSES_PARAMS),
    "scripted": ApiParams(("general",), {"max_tokens": Param(MAX_TOKENS, "ignored by scripted replies")}),
}
"""Every API type's declaration (``openai`` is an alias of ``openai-compatible`` in the catalog)."""

SECTIONS: Mapping[str, Mapping[str, Param]] = {
    "general": {"max_tokens": Param(MAX_TOKENS, "output limit of one reply")},
    "anthropic": ANTHROPIC_PARAMS,
    "openai": {**OPENAI_CHAT_PARAMS, **OPENAI_RESPONSES_PARAMS},
    "codex": OPENAI_RESPONSES_PARAMS,
}
"""Each section with every parameter some API type reads from it (used when the API is not known yet)."""


def merged_params(model_params: Mapping[str, Any], api_type: str) -> dict[str, Any]:
    """A member's parameters for one API: top-level ``max_tokens`` < each section the API reads, in order."""
    merged: dict[str, Any] = {}
    if model_params.get("max_tokens") is not None:
        merged["max_tokens"] = model_params["max_tokens"]
    api = API_PARAMS.get(api_type)
    for name in api.sections if api is not None else ("general",):
        value = model_params.get(name)
        if isinstance(value, dict):
            merged.update(value)
    return merged


def section_mistakes(params: Mapping[Any, Any]) -> list[str]:
    """Names in a member's ``model_params`` that no API type reads (values: ``api_mistakes``)."""
    mistakes = []
    for key, value in params.items():
        name = str(key)
        if name == "max_tokens":
            continue
        section = SECTIONS.get(name)
        if section is None:
            homes = [s for s, names in SECTIONS.items() if name in names]
            mistakes.append(
                f"{name!r} is not read here" + (f"; put it under {' or '.join(homes)}:" if homes else "")
            )
        elif not isinstance(value, dict):
            mistakes.append(f"`{name}` must be a mapping of parameters")
        else:
            mistakes.extend(
                f"`{name}.{n}` is not a known {name} parameter" for n in sorted(set(map(str, value)) - set(section))
            )
    return mistakes


def api_mistakes(model_params: Mapping[str, Any], api_type: str) -> tuple[list[str], list[str]]:
    """What a provider of ``api_type`` would refuse, and what it would ignore, in a member's ``model_params``.

    Refused: a value the API does not take. Ignored: a parameter of the section that this API type does
    not send (another API reading the same section does). Names no API knows are ``section_mistakes``'.
    """
    refused: list[str] = []
    ignored: list[str] = []
    api = API_PARAMS.get(api_type)
    if api is None:
        return refused, ignored
    for section_name in api.sections:
        values = model_params.get(section_name)
        if not isinstance(values, dict):
            continue
        for raw_name, value in values.items():
            name = str(raw_name)
            param = api.params.get(name)
            if param is None:
                if name in SECTIONS.get(section_name, {}):
                    ignored.append(f"`{section_name}.{name}` is not sent by apiType {api_type}: it is ignored")
                continue
            problem = param.check(value)
            if problem:
                refused.append(f"`{section_name}.{name}` {problem}")
    top = model_params.get("max_tokens")
    if top is not None and MAX_TOKENS(top):
        refused.append(f"`max_tokens` {MAX_TOKENS(top)}")
    return refused, ignored


def model_problems(model_params: Mapping[str, Any], api_type: str, model_key: str, model: Mapping[str, Any]) -> list[str]:
    """What ``model`` (its catalog entry's ``thinking`` / ``effort`` / ``sampling``) refuses in the parameters."""
    if api_type != "anthropic":
        return []
    params = merged_params(model_params, api_type)
    out = []
    thinking_kind = model.get("thinking")
    requested = params.get("thinking")
    manual = bool(params.get("thinking_budget")) or (
        isinstance(requested, dict) and requested.get("type", "enabled" if "budget_tokens" in requested else None) == "enabled"
    )
    if manual and thinking_kind in ("adaptive", "adaptive_always"):
        out.append(
            f"model {model_key!r} thinks adaptively: a thinking budget (`thinking: {{budget_tokens}}`, "
            "`thinking_budget`) is refused; use `thinking: {type: adaptive}` and `effort` instead"
        )
    if thinking_kind == "adaptive_always" and isinstance(requested, dict) and requested.get("type") == "disabled":
        out.append(f"model {model_key!r} always thinks: `thinking: {{type: disabled}}` is refused")
    if thinking_kind == "extended" and isinstance(requested, dict) and requested.get("type") == "adaptive":
        out.append(f"model {model_key!r} has no adaptive thinking: use `thinking: {{budget_tokens: N}}`")
    output_config = params.get("output_config")
    effort = params.get("effort") or (output_config.get("effort") if isinstance(output_config, dict) else None)
    levels = model.get("effort")
    if effort and isinstance(levels, list) and effort not in levels:
        allowed = ", ".join(map(str, levels)) if levels else "none (the model has no effort setting)"
        out.append(f"model {model_key!r} takes effort {allowed}, not {effort!r}")
    if model.get("sampling") is False:
        for name in ("temperature", "top_p", "top_k"):
            if name in params:
                out.append(f"model {model_key!r} refuses sampling parameters: remove `anthropic.{name}`")
    return out
