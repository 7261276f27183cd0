"""The provider catalog (providers and their models) and the choice of provider/model for a member.

The catalog is the built-in ``defaults.yaml`` overlaid by the rtws ``.minds/llm.yaml``; reading those
files is ``catalog_yaml.py``'s job. Catalog order is rtws providers first (file order), then the
remaining built-ins; automatic provider choice (``resolve_member_llm``) walks it in that order.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from dominds.llm.params import api_mistakes, model_problems, section_mistakes
from dominds.llm.pricing import ModelPricing

API_TYPES = ("scripted", "anthropic", "openai-compatible", "openai-responses", "openai")
"""API types a generator exists for; ``openai`` is accepted as a synonym of ``openai-compatible``
(Chat Completions); OpenAI's own API is best served by ``openai-responses``."""
FALLBACK_PROVIDER = "scripted"
"""Chosen when a member pins no provider and no provider's API key is set."""
BUILTIN_SOURCE = "<builtin>/llm/defaults.yaml"
"""``Problem.source`` for the built-in defaults (not a file of the rtws)."""


def model_params_mistakes(params: Mapping[Any, Any]) -> list[str]:
    """Names in a member's ``model_params`` that no API reads (see ``params.py``)."""
    return section_mistakes(params)


def provider_params_mistakes(
    params: Mapping[str, Any], provider: ProviderConfig, model_key: str | None
) -> tuple[list[str], list[str]]:
    """What ``provider`` (its API type) and its model ``model_key`` would refuse, and would ignore, in a
    member's ``model_params`` (``params.py`` declares each API's parameters)."""
    refused, ignored = api_mistakes(params, provider.api_type)
    model = provider.models.get(model_key) if model_key else None
    if model is not None and model_key is not None:
        refused += model_problems(params, provider.api_type, model_key, model.request_info())
    return refused, ignored


@dataclass(frozen=True)
class ModelInfo:
    """One model of a provider, as ``providers.<p>.models.<key>`` describes it."""

    key: str
    """The model id sent to the API (the mapping key)."""
    name: str | None = None
    context_length: int | None = None
    """Context window in tokens; the context-health check measures against it."""
    input_length: int | None = None
    output_length: int | None = None
    optimal_max_tokens: int | None = None
    critical_max_tokens: int | None = None
    pricing: ModelPricing | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Keys this module does not interpret, kept for generators and the UI."""

    def request_info(self) -> dict[str, Any]:
        """What a generator may need to know about the model (``GenerationRequest.model_info``)."""
        known = {"context_length": self.context_length, "output_length": self.output_length}
        return {**self.extra, **{k: v for k, v in known.items() if v is not None}}


@dataclass(frozen=True)
class ProviderConfig:
    """One provider entry of the catalog."""

    key: str
    name: str
    api_type: str
    """Which generator talks to it: ``scripted``, ``anthropic`` or ``openai-compatible``."""
    base_url: str | None
    """API endpoint; for ``scripted``, the response-database directory relative to the rtws."""
    api_key_env_var: str | None
    """Environment variable holding the key; ``None`` = keyless (never picked automatically)."""
    models: Mapping[str, ModelInfo]
    """Models in file order; the first is used when a member names the provider but no model."""
    source: str = BUILTIN_SOURCE
    """Where the entry comes from: ``BUILTIN_SOURCE`` or ``.minds/llm.yaml``."""
    tech_spec_url: str | None = None
    api_mgmt_url: str | None = None
    model_param_options: Mapping[str, Any] = field(default_factory=dict)
    reasoning_pass_back: bool | str = False
    """Chat Completions only: send a thinking model's reasoning back on the assistant messages that made
    tool calls (``true`` = in ``reasoning_content``, a string = in that field); off by default."""
    retry: Mapping[str, float] = field(default_factory=dict)
    """The ``retry:`` settings (``window_s``, ``base_delay_s``, ``max_delay_s``, ``max_retry_after_s``);
    unset ones keep the defaults of ``llm/retry.py``."""


@dataclass(frozen=True)
class Catalog:
    """Providers by key, in resolution order (rtws providers first, then built-ins)."""

    providers: Mapping[str, ProviderConfig]

    def provider(self, key: str) -> ProviderConfig | None:
        return self.providers.get(key)

    def model(self, provider_key: str, model_key: str) -> ModelInfo | None:
        provider = self.providers.get(provider_key)
        return None if provider is None else provider.models.get(model_key)

    def choice_problem(self, provider_key: str | None, model_key: str | None) -> tuple[str, str] | None:
        """Which of ``provider``/``model`` the catalog lacks, and a message; ``None`` when both exist.

        With no provider, the model must exist under some provider.
        """
        if provider_key is not None:
            provider = self.providers.get(provider_key)
            if provider is None:
                return "provider", f"unknown provider {provider_key!r}; known: {', '.join(self.providers)}"
            if model_key is not None and model_key not in provider.models:
                models = ", ".join(provider.models)
                return "model", f"provider {provider_key!r} has no model {model_key!r}; its models: {models}"
        elif model_key is not None and not any(model_key in p.models for p in self.providers.values()):
            return "model", f"no provider has a model {model_key!r}"
        return None


@dataclass(frozen=True)
class ResolvedLlm:
    """The provider and model a member's generations go to."""

    provider_key: str
    provider: ProviderConfig
    model_key: str
    model: ModelInfo


class LlmResolutionError(Exception):
    """A member's provider/model cannot be resolved; the message says what to change."""


class MemberLlmChoice(Protocol):
    """What resolution needs from a team member (``dominds.team.Member`` fits)."""

    @property
    def id(self) -> str: ...
    @property
    def provider(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...


# ---------------------------------------------------------------- resolution


def resolve_member_llm(
    member: MemberLlmChoice, catalog: Catalog, env: Mapping[str, str] | None = None
) -> ResolvedLlm:
    """The provider and model ``member`` generates with.

    Provider: the member's own (``member_defaults`` already merged into it by the team loader),
    else the first provider in catalog order whose ``apiKeyEnvVar`` is set to a non-empty value in
    ``env`` (default ``os.environ``), else ``scripted``. Keyless providers are never picked
    automatically. Model: the member's, else the provider's first model.
    Raises ``LlmResolutionError`` with a message naming the member and what to fix.
    """
    environ = os.environ if env is None else env
    provider_key = member.provider or _auto_provider(catalog, environ)
    if provider_key is None:
        raise LlmResolutionError(
            f"member {member.id!r}: no provider: none is set in team.yaml, no API-key variable of a "
            f"provider is set, and the fallback {FALLBACK_PROVIDER!r} is not in the catalog"
        )
    provider = catalog.provider(provider_key)
    model_key = member.model or (next(iter(provider.models), None) if provider else None)
    problem = catalog.choice_problem(provider_key, model_key)
    if problem is not None or provider is None or model_key is None:
        why = problem[1] if problem else f"provider {provider_key!r} has no models"
        auto = "" if member.provider else " (provider chosen automatically; set `provider:` to choose)"
        raise LlmResolutionError(f"member {member.id!r}: {why}{auto}")
    return ResolvedLlm(provider_key, provider, model_key, provider.models[model_key])


def _auto_provider(catalog: Catalog, env: Mapping[str, str]) -> str | None:
    for key, provider in catalog.providers.items():
        if provider.api_key_env_var and env.get(provider.api_key_env_var):
            return key
    return FALLBACK_PROVIDER if FALLBACK_PROVIDER in catalog.providers else None
