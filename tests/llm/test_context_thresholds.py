"""Per-model context-health thresholds overridden in ``.minds/llm.yaml`` (``context_health:``), issue 32.

Bug: the thresholds came from the catalog only; changing them for a built-in model meant copying its
whole provider into ``llm.yaml`` (an entry there replaces the built-in one, models, prices and all).
Now ``context_health: {provider: {model: {optimal_max_tokens, critical_max_tokens}}}`` overrides just
them, and every mistake in it is a problem with its line, never a failed load.
"""

from __future__ import annotations

import textwrap

from dominds.llm.catalog_yaml import load_catalog
from dominds.llm.context_thresholds import ContextThresholds, context_thresholds
from dominds.problems import LLM_CONFIG_ERROR
from dominds.rtws import Rtws

OWN_PROVIDER = """\
providers:
  lab:
    apiType: openai-compatible
    baseUrl: http://127.0.0.1:8080/v1
    apiKeyEnvVar: null
    models:
      qwen: {context_length: 32768, optimal_max_tokens: 24000, critical_max_tokens: 30000}
      tiny: {}
"""


def load(rtws: Rtws, text: str):  # type: ignore[no-untyped-def]
    text = textwrap.dedent(text)
    rtws.llm_yaml.write_text(text, encoding="utf-8")
    catalog, problems = load_catalog(rtws)
    return catalog, problems, text


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_builtin_models_thresholds_are_overridden_without_replacing_its_provider(tmp_rtws: Rtws) -> None:
    catalog, problems, _ = load(tmp_rtws, """\
        context_health:
          scripted:
            demo: {optimal_max_tokens: 20000, critical_max_tokens: 50000}
          anthropic:
            claude-sonnet-4-6: {critical_max_tokens: 150000}
        """)  # fmt: skip
    assert problems == []
    assert context_thresholds(catalog.model("scripted", "demo")) == ContextThresholds(200_000, 20_000, 50_000)
    sonnet = catalog.model("anthropic", "claude-sonnet-4-6")
    assert sonnet is not None and sonnet.pricing is not None, "the rest of the built-in model is kept"
    thresholds = context_thresholds(sonnet)
    assert thresholds is not None and (thresholds.optimal, thresholds.critical) == (100_000, 150_000)
    builtin = load_catalog(Rtws(tmp_rtws.root.parent / "elsewhere"))[0]
    assert builtin.providers.keys() == catalog.providers.keys(), "no provider added or replaced"
    assert context_thresholds(builtin.model("scripted", "demo")) == ContextThresholds(200_000, 100_000, 180_000)


def test_a_model_of_the_files_own_provider_is_overridden_too(tmp_rtws: Rtws) -> None:
    catalog, problems, _ = load(tmp_rtws, OWN_PROVIDER + "context_health:\n  lab:\n    qwen: {optimal_max_tokens: 16000}\n")
    assert problems == []
    assert context_thresholds(catalog.model("lab", "qwen")) == ContextThresholds(32_768, 16_000, 30_000)


def test_each_mistake_is_a_problem_with_its_line_and_that_override_is_ignored(tmp_rtws: Rtws) -> None:
    catalog, problems, text = load(tmp_rtws, OWN_PROVIDER + textwrap.dedent("""\
        context_helth: {}
        context_health:
          labb:
            qwen: {optimal_max_tokens: 1000}
          lab:
            qwenn: {optimal_max_tokens: 1000}
            qwen: {critcal_max_tokens: 20000}
            tiny: {optimal_max_tokens: 1000}
          scripted:
            demo: {critical_max_tokens: 250000}
          anthropic:
            claude-sonnet-4-6: {optimal_max_tokens: 0}
            claude-haiku-4-5: {critical_max_tokens: 50000}
            claude-opus-4-5: {optimal_max_tokens: "lots"}
            claude-haiku-5-5: [1, 2]
        """))  # fmt: skip
    by_line = {p.line: p for p in problems}
    assert all(p.kind == LLM_CONFIG_ERROR and p.source == ".minds/llm.yaml" for p in problems)

    def said(needle: str, *words: str, severity: str = "error") -> None:
        problem = by_line.get(line_of(text, needle))
        assert problem is not None, (needle, [(p.line, p.message) for p in problems])
        assert problem.severity == severity and all(w in problem.message for w in words), problem.message

    said("context_helth", "unknown key 'context_helth'", "did you mean 'context_health'?", severity="warning")
    said("labb:", "unknown provider 'labb'", "did you mean 'lab'?")
    said("qwenn:", "provider 'lab' has no model 'qwenn'", "did you mean 'qwen'?")
    said("critcal_max_tokens", "unknown key 'critcal_max_tokens'", "did you mean 'critical_max_tokens'?", severity="warning")
    said("tiny: {opt", "no `context_length`", severity="warning")
    said("demo:", "`critical_max_tokens` 250000 is beyond the model's window of 200000 tokens")
    said("claude-sonnet-4-6:", "`optimal_max_tokens` must be a positive number of tokens, got 0")
    said("claude-haiku-4-5:", "caution threshold (100000) must be below the critical one (50000)")
    said("claude-opus-4-5:", "must be a positive number of tokens, got 'lots'")
    said("claude-haiku-5-5:", "must be a mapping")
    assert len(problems) == 10, [(p.line, p.message) for p in problems]
    builtin = load_catalog(Rtws(tmp_rtws.root.parent / "elsewhere"))[0]
    for provider, model in (("scripted", "demo"), ("anthropic", "claude-sonnet-4-6"), ("anthropic", "claude-haiku-4-5")):
        assert catalog.model(provider, model) == builtin.model(provider, model), f"{provider}/{model} unchanged"
    qwen = catalog.model("lab", "qwen")
    assert qwen is not None and (qwen.optimal_max_tokens, qwen.critical_max_tokens) == (24_000, 30_000), "typo: unchanged"


def test_a_providers_own_model_entry_with_thresholds_that_cannot_work_is_a_problem_too(tmp_rtws: Rtws) -> None:
    """The sibling: thresholds written on a model under ``providers:`` were never checked either (a
    critical threshold below the default caution one meant the caution level never came)."""
    catalog, problems, text = load(tmp_rtws, """\
        providers:
          lab:
            apiType: openai-compatible
            baseUrl: http://127.0.0.1:8080/v1
            apiKeyEnvVar: null
            models:
              small: {context_length: 32768, critical_max_tokens: 30000, optimal_max_tokens: 31000}
              wide: {context_length: 8192, critical_max_tokens: 9000, optimal_max_tokens: 4000}
              fine: {context_length: 8192, critical_max_tokens: 7000, optimal_max_tokens: 4000}
        """)  # fmt: skip
    messages = {p.line: p.message for p in problems}
    assert messages == {
        line_of(text, "small:"): "provider 'lab' model 'small': the caution threshold (31000) must be below the critical one "
        "(30000); its thresholds are ignored",
        line_of(text, "wide:"): "provider 'lab' model 'wide': `critical_max_tokens` 9000 is beyond the model's window of 8192 "
        "tokens; its thresholds are ignored",
    }, messages
    assert context_thresholds(catalog.model("lab", "small")) == ContextThresholds(32_768, 26_214, 29_491)
    assert context_thresholds(catalog.model("lab", "fine")) == ContextThresholds(8_192, 4_000, 7_000)


def test_a_small_windows_default_caution_comes_before_its_critical_level(tmp_rtws: Rtws) -> None:
    """Bug: the default caution threshold was the smaller of 100,000 and the whole window, above the
    default critical one (90 %) for every window under 111K tokens: a 32K local model went from healthy
    straight to critical, never told to save its progress early. Now it is 80 % of a small window."""
    catalog, problems, _ = load(tmp_rtws, OWN_PROVIDER)
    assert problems == []
    assert context_thresholds(catalog.model("lab", "tiny")) is None, "no window, no level"
    small = catalog.model("lab", "qwen")
    assert small is not None
    from dataclasses import replace

    defaults = context_thresholds(replace(small, optimal_max_tokens=None, critical_max_tokens=None))
    assert defaults == ContextThresholds(32_768, 26_214, 29_491)
    for provider in load_catalog(Rtws(tmp_rtws.root.parent / "elsewhere"))[0].providers.values():
        for model in provider.models.values():  # the built-in models (all over 111K) keep 100,000
            thresholds = context_thresholds(model)
            assert thresholds is not None and thresholds.optimal == 100_000 < thresholds.critical, model.key
