"""Provider catalog: built-ins, the rtws overlay, problems in llm.yaml, and member provider resolution."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import pytest

from dominds.llm.catalog import BUILTIN_SOURCE, Catalog, LlmResolutionError, resolve_member_llm
from dominds.llm.catalog_yaml import builtin_catalog, load_catalog
from dominds.llm.pricing import ModelPricing
from dominds.problems import LLM_CONFIG_ERROR
from dominds.rtws import Rtws
from dominds.team import load_team


@dataclass(frozen=True)
class Choice:
    id: str = "m"
    provider: str | None = None
    model: str | None = None


def write_llm(rtws: Rtws, text: str) -> str:
    text = textwrap.dedent(text).lstrip("\n")
    rtws.llm_yaml.write_text(text, encoding="utf-8")
    return text


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_builtin_defaults_load_cleanly(tmp_rtws: Rtws) -> None:
    catalog, problems = load_catalog(tmp_rtws)
    assert problems == []
    assert list(catalog.providers) == ["scripted", "anthropic", "openai", "local-openai"]
    scripted = catalog.providers["scripted"]
    assert (scripted.api_type, scripted.base_url, scripted.api_key_env_var) == (
        "scripted",
        ".minds/scripted",
        None,
    )
    assert list(scripted.models) == ["demo"]
    anthropic = catalog.providers["anthropic"]
    assert anthropic.api_key_env_var == "ANTHROPIC_API_KEY" and anthropic.source == BUILTIN_SOURCE
    for model in anthropic.models.values():
        assert model.context_length and model.pricing is not None and model.pricing.cache_write is not None
    assert catalog.providers["openai"].api_type == "openai-responses"
    local = catalog.providers["local-openai"]
    assert local.base_url == "http://127.0.0.1:11434/v1" and local.api_key_env_var is None
    assert all(m.pricing is not None for p in catalog.providers.values() for m in p.models.values())


def test_every_builtin_model_of_a_real_provider_names_its_source_and_when_it_was_checked() -> None:
    """Issue 16: the catalog's figures are traceable to the provider's official page and a date."""
    for provider in builtin_catalog().providers.values():
        if provider.api_key_env_var is None:
            continue  # scripted, local servers: no price list to cite
        for key, model in provider.models.items():
            source = str(model.extra.get("source", ""))
            assert source.startswith(("https://platform.claude.com/", "https://developers.openai.com/")), key
            assert str(model.extra.get("checked", "")).startswith("2026-"), key


def test_the_default_claude_has_the_1m_context_of_its_official_page() -> None:
    """Issue 16: claude-sonnet-4-6 was listed with 200k; its page says 1M tokens and 128K output."""
    catalog = builtin_catalog()
    assert next(iter(catalog.providers["anthropic"].models)) == "claude-sonnet-4-6"
    sonnet = catalog.model("anthropic", "claude-sonnet-4-6")
    assert sonnet is not None and (sonnet.context_length, sonnet.output_length) == (1_000_000, 128_000)
    for key in ("claude-sonnet-5-5", "claude-opus-5-5", "claude-fable-5-1", "claude-haiku-5-5"):
        model = catalog.model("anthropic", key)
        assert model is not None and model.context_length == 1_000_000, key
    assert sonnet.optimal_max_tokens is None, "a 16K 'optimal' made the context health cautious at 16K of 1M"


def test_pricing_cost_counts_cache_tokens() -> None:
    price = ModelPricing(input=3.0, output=15.0, cache_read=0.3, cache_write=None)
    # 1M input + 0.1M output + 1M cache reads + 1M cache writes (billed as input)
    assert price.cost_usd(1_000_000, 100_000, 1_000_000, 1_000_000) == pytest.approx(3 + 1.5 + 0.3 + 3)


def test_long_cache_writes_and_long_requests_have_their_own_rates() -> None:
    haiku = builtin_catalog().model("anthropic", "claude-haiku-5-5")
    assert haiku is not None and haiku.pricing is not None
    short = haiku.pricing.cost_usd(50_000, 1_000, 40_000, 10_000, 10_000, per_request=True)
    assert short == pytest.approx((50_000 * 0.10 + 1_000 * 0.50 + 40_000 * 0.01 + 10_000 * 0.20) / 1e6)
    # above 100K prompt tokens (cache included) every token of the request pays the long rates
    long = haiku.pricing.cost_usd(50_000, 1_000, 60_000, 0, per_request=True)
    assert long == pytest.approx((50_000 * 0.50 + 1_000 * 2.50 + 60_000 * 0.05) / 1e6)
    # counts added up over many requests cannot know each prompt's size: base rates (a lower bound)
    assert haiku.pricing.cost_usd(50_000, 1_000, 60_000, 0) == pytest.approx((50_000 * 0.10 + 1_000 * 0.50 + 60_000 * 0.01) / 1e6)


def test_a_bad_long_context_tier_is_a_problem_with_its_line(tmp_rtws: Rtws) -> None:
    write_llm(
        tmp_rtws,
        """
        providers:
          p:
            apiType: openai-compatible
            models:
              m: {pricing: {input: 1, output: 2, long_context: {input: 2, output: 4}}}
        """,
    )
    catalog, problems = load_catalog(tmp_rtws)
    [problem] = problems
    assert "long_context: {threshold_tokens" in problem.message and problem.line == 5  # the model's line
    assert catalog.model("p", "m") is not None and catalog.model("p", "m").pricing is None  # type: ignore[union-attr]


def test_rtws_provider_replaces_builtin_wholesale_and_comes_first(tmp_rtws: Rtws) -> None:
    write_llm(
        tmp_rtws,
        """
        providers:
          my-proxy:
            apiType: openai-compatible
            baseUrl: http://127.0.0.1:9999/v1
            apiKeyEnvVar: PROXY_KEY
            models: {small: {context_length: 8192}}
          anthropic:
            name: Anthropic via gateway
            apiType: anthropic
            baseUrl: https://gateway.example/anthropic
            apiKeyEnvVar: GATEWAY_KEY
            models:
              claude-haiku-4-5:
        """,
    )
    catalog, problems = load_catalog(tmp_rtws)
    assert problems == []
    assert list(catalog.providers) == ["my-proxy", "anthropic", "scripted", "openai", "local-openai"]
    anthropic = catalog.providers["anthropic"]
    assert anthropic.source == ".minds/llm.yaml" and anthropic.api_key_env_var == "GATEWAY_KEY"
    assert list(anthropic.models) == ["claude-haiku-4-5"]  # the built-in models are not merged in
    assert anthropic.models["claude-haiku-4-5"].pricing is None
    assert catalog.model("my-proxy", "small") is not None and catalog.model("my-proxy", "big") is None


def test_bad_llm_yaml_gives_located_problems_and_keeps_good_providers(tmp_rtws: Rtws) -> None:
    text = write_llm(
        tmp_rtws,
        """
        provider: oops
        providers:
          listed:
            apiType: openai-compatible
            models:
              - default
          untyped:
            models: {x: {}}
          mocked:
            apiType: mock
            models: {x: {}}
          fine:
            apiType: anthropic
            apiKeyEnvVar: FINE_KEY
            colour: blue
            models:
              good: {context_length: -5, pricing: {input: 1}, note: free-form keys are kept}
        """,
    )
    catalog, problems = load_catalog(tmp_rtws)
    assert all(p.kind == LLM_CONFIG_ERROR and p.source == ".minds/llm.yaml" for p in problems)
    found = {(p.line, p.severity): p.message for p in problems}
    assert "unknown key 'provider'" in found[(line_of(text, "provider: oops"), "warning")]
    assert "got a list" in found[(line_of(text, "- default") - 1, "error")]  # the `models:` key
    assert "`apiType` is required" in found[(line_of(text, "untyped"), "error")]
    assert "the offline provider is `scripted`" in found[(line_of(text, "apiType: mock"), "error")]
    assert "'colour'" in found[(line_of(text, "colour"), "warning")]
    good_line = line_of(text, "good:")
    assert [p.message for p in problems if p.line == good_line] == [
        "provider 'fine' model 'good': `context_length` must be a positive integer, got -5; ignored",
        "provider 'fine' model 'good': `pricing` must be {input, output, cache_read?, cache_write?, "
        "cache_write_long?, long_context?}, each price a non-negative number (USD per million tokens); "
        "long_context: {threshold_tokens, input, output, …}; ignored",
    ]
    assert len(problems) == 7
    assert not {"listed", "untyped", "mocked"} & set(catalog.providers)
    good = catalog.model("fine", "good")
    assert (
        good is not None and good.context_length is None and good.extra == {"note": "free-form keys are kept"}
    )


def test_llm_yaml_syntax_error_keeps_builtins(tmp_rtws: Rtws) -> None:
    write_llm(tmp_rtws, "providers:\n  x: {apiType: scripted\n")
    catalog, problems = load_catalog(tmp_rtws)
    [problem] = problems
    assert problem.line == 3 and "YAML syntax error" in problem.message
    assert "scripted" in catalog.providers and "x" not in catalog.providers


# ---------------------------------------------------------------- resolution


def test_member_provider_wins_and_model_defaults_to_first() -> None:
    catalog = builtin_catalog()
    resolved = resolve_member_llm(Choice(provider="anthropic"), catalog, {})
    assert (resolved.provider_key, resolved.model_key) == ("anthropic", "claude-sonnet-4-6")
    assert resolved.provider is catalog.providers["anthropic"] and resolved.model.key == "claude-sonnet-4-6"


def test_without_any_key_the_fallback_is_scripted() -> None:
    resolved = resolve_member_llm(Choice(), builtin_catalog(), {"ANTHROPIC_API_KEY": ""})
    assert (resolved.provider_key, resolved.model_key) == ("scripted", "demo")


def test_first_provider_with_a_key_in_catalog_order(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = builtin_catalog()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert resolve_member_llm(Choice(), catalog).provider_key == "openai"  # default env = os.environ
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert resolve_member_llm(Choice(), catalog).provider_key == "anthropic"  # earlier in order
    assert resolve_member_llm(Choice(provider="openai"), catalog).provider_key == "openai"


def test_rtws_providers_are_tried_before_builtins(tmp_rtws: Rtws, monkeypatch: pytest.MonkeyPatch) -> None:
    write_llm(
        tmp_rtws,
        """
        providers:
          keyless-local: {apiType: openai-compatible, apiKeyEnvVar: null, models: {m: {}}}
          team-gateway: {apiType: anthropic, apiKeyEnvVar: GATEWAY_KEY, models: {g: {}}}
        """,
    )
    catalog, problems = load_catalog(tmp_rtws)
    assert problems == []
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("GATEWAY_KEY", "gw")
    resolved = resolve_member_llm(Choice(), catalog)
    assert (resolved.provider_key, resolved.model_key) == ("team-gateway", "g")  # keyless one skipped
    monkeypatch.delenv("GATEWAY_KEY")
    assert resolve_member_llm(Choice(), catalog).provider_key == "anthropic"


def test_member_defaults_feed_resolution(tmp_rtws: Rtws, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_rtws.team_yaml.write_text(
        "member_defaults: {provider: local-openai}\nmembers:\n  a: {}\n  b: {provider: openai, model: gpt-5-mini}\n"
    )
    catalog, _ = load_catalog(tmp_rtws)
    team, problems = load_team(tmp_rtws, [], catalog=catalog)
    assert problems == []
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")  # pinned providers ignore keys
    assert resolve_member_llm(team.members["a"], catalog).provider_key == "local-openai"
    assert resolve_member_llm(team.members["b"], catalog).model_key == "gpt-5-mini"


def test_resolution_errors_say_what_to_fix() -> None:
    catalog = builtin_catalog()
    with pytest.raises(LlmResolutionError, match="member 'm': unknown provider 'nope'; known: scripted, "):
        resolve_member_llm(Choice(provider="nope"), catalog, {})
    with pytest.raises(LlmResolutionError, match="provider 'openai' has no model 'gpt-1'; its models: gpt-6.2-sol, "):
        resolve_member_llm(Choice(provider="openai", model="gpt-1"), catalog, {})
    # a model of another provider, with the provider chosen automatically (scripted)
    with pytest.raises(LlmResolutionError, match="no model 'gpt-5'.*chosen automatically"):
        resolve_member_llm(Choice(model="gpt-5"), catalog, {})
    only_keyless = Catalog({"local-openai": catalog.providers["local-openai"]})
    with pytest.raises(LlmResolutionError, match="fallback 'scripted' is not in the catalog"):
        resolve_member_llm(Choice(), only_keyless, {})


def test_a_providers_retry_window_is_read_from_llm_yaml_and_bad_settings_are_problems(tmp_rtws: Rtws) -> None:
    """``retry:`` of a provider sets its retry window (issue 32: the policy could not be configured)."""
    tmp_rtws.llm_yaml.write_text(
        textwrap.dedent(
            """\
            providers:
              local:
                apiType: openai-compatible
                baseUrl: http://127.0.0.1:8080/v1
                apiKeyEnvVar: null
                retry: {window_s: 7200, max_delay_s: 300, base_delay_s: -1, waitForever: true}
                models: {qwen: {context_length: 32768}}
            """
        )
    )
    catalog, problems = load_catalog(tmp_rtws)
    local = catalog.provider("local")
    assert local is not None and dict(local.retry) == {"window_s": 7200.0, "max_delay_s": 300.0}
    messages = [p.message for p in problems]
    assert any("`retry.base_delay_s` must be a positive number of seconds" in m for m in messages), messages
    assert any("unknown `retry` key 'waitForever'" in m for m in messages), messages
    from dominds.llm.retry import RetryPolicy

    policy = RetryPolicy().configured(local.retry)
    assert (policy.window, policy.max_delay, policy.base_delay) == (7200.0, 300.0, RetryPolicy().base_delay)
    assert RetryPolicy().window >= 1800, "the default window waits out half an hour of outage"
