"""The parameters each provider declares (``dominds/llm/params.py``) and how a member's are checked."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dominds.llm.params import (
    API_PARAMS,
    SECTIONS,
    api_mistakes,
    merged_params,
    model_problems,
    section_mistakes,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_sections_override_the_top_level_in_the_order_the_api_reads_them() -> None:
    params = {
        "max_tokens": 100,
        "general": {"max_tokens": 200},
        "anthropic": {"max_tokens": 300, "top_k": 3},
        "openai": {"temperature": 0.5},
        "codex": {"temperature": 0.1},
    }
    assert merged_params(params, "anthropic") == {"max_tokens": 300, "top_k": 3}
    assert merged_params(params, "openai-compatible") == {"max_tokens": 200, "temperature": 0.5}
    assert merged_params(params, "openai-responses") == {"max_tokens": 200, "temperature": 0.1}
    assert merged_params({"max_tokens": 100}, "openai-compatible") == {"max_tokens": 100}


def test_misplaced_and_unknown_names_get_hints() -> None:
    mistakes = section_mistakes({"temperature": 1, "anthropic": {"temprature": 1}, "gemini": {}, "openai": 3})
    assert "'temperature' is not read here; put it under anthropic or openai or codex:" in mistakes
    assert "`anthropic.temprature` is not a known anthropic parameter" in mistakes
    assert "'gemini' is not read here" in mistakes and "`openai` must be a mapping of parameters" in mistakes


def test_every_declared_parameter_is_documented() -> None:
    configuration = (DOCS / "configuration.md").read_text()
    row = next(line for line in configuration.splitlines() if line.startswith("| `model_params` |"))
    for section, params in SECTIONS.items():
        assert f"`{section}:" in row or f"`{section}: " in row or section in row, section
        for name in params:
            assert name in row, f"{section}.{name} is not in docs/configuration.md"


def test_refused_and_ignored_depend_on_the_api_type() -> None:
    params = {"openai": {"frequency_penalty": 1, "reasoning_summary": "auto"}}
    assert api_mistakes(params, "openai-compatible") == ([], ["`openai.reasoning_summary` is not sent by apiType openai-compatible: it is ignored"])
    assert api_mistakes(params, "openai-responses") == ([], ["`openai.frequency_penalty` is not sent by apiType openai-responses: it is ignored"])
    assert api_mistakes({"max_tokens": 0}, "anthropic")[0] == ["`max_tokens` must be an integer ≥ 1 and ≤ 10000000"]


def test_yaml_off_is_taken_as_meant_for_prompt_caching() -> None:
    assert api_mistakes({"anthropic": {"prompt_caching": False}}, "anthropic") == ([], [])
    assert api_mistakes({"anthropic": {"prompt_caching": True}}, "anthropic")[0]


def test_a_model_entry_narrows_what_its_api_accepts() -> None:
    adaptive = {"thinking": "adaptive", "sampling": False, "effort": ["low", "medium", "high"]}
    assert model_problems({"anthropic": {"thinking": {"type": "adaptive"}, "effort": "high"}}, "anthropic", "m", adaptive) == []
    problems = model_problems({"anthropic": {"thinking_budget": 2048, "top_p": 0.9, "effort": "max"}}, "anthropic", "m", adaptive)
    assert len(problems) == 3
    assert model_problems({"anthropic": {"thinking": {"budget_tokens": 2048}}}, "anthropic", "m", {"thinking": "extended"}) == []


KNOWN_NAMES = sorted({name for params in SECTIONS.values() for name in params} | {"type", "budget_tokens", "effort"})
VALUES = st.recursive(
    st.one_of(st.none(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5), st.booleans()),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KNOWN_NAMES) | st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(st.sampled_from(KNOWN_NAMES) | st.text(max_size=12), VALUES, max_size=6))
def test_any_parameters_are_judged_without_raising(params: dict[str, object]) -> None:
    """Hand-written team.yaml can hold anything: the checks answer with messages, never an exception."""
    for section in ("anthropic", "openai", "general"):
        model_params = {section: params, "max_tokens": params.get("max_tokens")}
        section_mistakes(model_params)
        for api_type in API_PARAMS:
            api_mistakes(model_params, api_type)
            model_problems(model_params, api_type, "m", {"thinking": "adaptive", "effort": [], "sampling": False})
