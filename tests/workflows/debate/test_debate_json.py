"""Agent JSON: fenced, bare, repaired; the seed's own commented examples; fallbacks when nothing is left."""

from __future__ import annotations

import json

import pytest

from dominds.workflows.debate.agents import fallback_output, first_sentence, parse_agent_output, reused_output
from dominds.workflows.debate.jsonfix import extract_json_object, repair_json
from dominds.workflows.debate.protocol import AgentOutput, PositionSummary


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Sure!\n```json\n{"a": 1}\n```\nAnything else?', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('The answer is {"a": {"b": [1, 2]}} as requested.', {"a": {"b": [1, 2]}}),
        ('{"a": 1}{"b": 2}', {"a": 1}),  # glued objects: the first
        ('{"a": [1, 2,], "b": 3,}', {"a": [1, 2], "b": 3}),  # trailing commas
        ('{"delta": +0.05}', {"delta": 0.05}),  # the seed's §8 writes a leading plus
        ('{"a": 1, // a comment\n /* block */ "b": [0.1, 0.2, ...], "c": {...}}', {"a": 1, "b": [0.1, 0.2], "c": {}}),
        ("{conclusion: “三个月”, 'why': ['x'], ok: True, none: None, sev: high}",
         {"conclusion": "三个月", "why": ["x"], "ok": True, "none": None, "sev": "high"}),
        ('{"content": "他说“你好”", "n": 1}', {"content": "他说“你好”", "n": 1}),  # curly quotes inside a string stay
        ('```json\n{"content": "cut off", "metadata": {"position": {"conclusion": "x", "key_reasons": ["a"',
         {"content": "cut off", "metadata": {"position": {"conclusion": "x", "key_reasons": ["a"]}}}),  # truncated
        ('{"a": 1, "dangling', {"a": 1, "dangling": None}),
        ('{"a": 1, "b":', {"a": 1, "b": None}),
        ('"{\\"agent_id\\": \\"planner\\"}"', {"agent_id": "planner"}),  # escaped twice
        ('{"text": "line one\nline two"}', {"text": "line one\nline two"}),  # a raw newline in a string
        ('{"n": 1e3}', {"n": 1000.0}),
    ],
)
def test_extraction_and_repair(text: str, expected: dict[str, object]) -> None:
    assert extract_json_object(text) == expected


@pytest.mark.parametrize("text", ["", "no json at all", "[1, 2, 3]", "```json\n```"])
def test_nothing_to_extract(text: str) -> None:
    assert extract_json_object(text) is None


# Excerpts of the seed's examples, as written there: comments, placeholders and a leading plus
SEED_HOST = """{
  "agent_id": "host",
  "metadata": {
    "decision": {
      "action": "string",  // "continue" | "converge" | "force_opposition" | "terminate"
      "next_agents": ["planner", "critic"],  // 下一轮发言的Agent
    }
  }
}"""
SEED_EMBEDDINGS = """{"success": true, "data": {"embeddings": [
      [0.12, 0.34, ...],  // 768维向量
      [0.15, 0.32, ...]
    ], "mean_similarity": 0.87}}"""
SEED_STATE = '{"agents": {"planner": {"status": "completed", "last_output": {...}}}, "history": [{"round": 1, "outputs": [...]}]}'
SEED_POSITION = '{"confidence": 0.85,  // 0-1之间\n "changes_from_last_round": {"confidence_delta": +0.05}}'


def test_the_seeds_own_examples_parse_after_repair() -> None:
    host = extract_json_object(SEED_HOST)
    assert host is not None and host["metadata"]["decision"] == {"action": "string", "next_agents": ["planner", "critic"]}
    embeddings = extract_json_object(SEED_EMBEDDINGS)
    assert embeddings is not None and embeddings["data"]["embeddings"] == [[0.12, 0.34], [0.15, 0.32]]
    state = extract_json_object(SEED_STATE)
    assert state == {"agents": {"planner": {"status": "completed", "last_output": {}}}, "history": [{"round": 1, "outputs": []}]}
    assert extract_json_object(SEED_POSITION) == {"confidence": 0.85, "changes_from_last_round": {"confidence_delta": 0.05}}
    assert json.loads(repair_json('{"x": [...]}')) == {"x": []}


def test_a_parsed_answer_gets_the_hosts_bookkeeping() -> None:
    text = '```json\n{"agent_id": "critic", "round": 7, "output_type": "x", "content": "Fine plan.", ' \
           '"position": {"conclusion": "Go", "key_reasons": "one reason", "confidence": 3}}\n```'
    previous = AgentOutput("planner", 1, "plan", "", {"position": PositionSummary("Wait", [], [], 0.5).to_json()}, "t")
    output = parse_agent_output("planner", 2, text, previous, max_chars=1000)
    assert (output.agent_id, output.round, output.output_type, output.fallback) == ("planner", 2, "plan", None)
    position = output.position
    assert position is not None and position.key_reasons == ["one reason"] and position.confidence == 1.0
    assert position.changes_from_last_round == {"conclusion_changed": True, "reasons_added": ["one reason"], "confidence_delta": 0.5}


def test_a_position_is_inferred_from_content_and_long_content_is_clipped() -> None:
    output = parse_agent_output("critic", 1, json.dumps({"content": "Too risky. " + "x" * 500}), None, max_chars=100)
    assert output.metadata["position_inferred"] is True
    assert output.position is not None and output.position.conclusion == "Too risky."
    assert len(output.content) == 100 and output.content.endswith("…")


def test_broken_json_becomes_a_fallback_output() -> None:
    output = parse_agent_output("planner", 1, "I think we should start with vocabulary. Then mocks.", None, max_chars=1000)
    assert output.fallback == "unparsable_json" and output.metadata["fallback"] is True
    assert output.position is not None and output.position.conclusion == "I think we should start with vocabulary."
    assert output.position.confidence == 0.5
    empty_reporter = parse_agent_output("reporter", 3, '{"content": ""}', None, max_chars=1000)
    assert empty_reporter.fallback == "unparsable_json" and "position" not in empty_reporter.metadata
    nothing = fallback_output("critic", 2, "", "no_answer", None, max_chars=100)
    assert nothing.position is not None and nothing.position.conclusion == "(critic gave no usable answer)"


def test_a_reused_output_keeps_its_origin_round() -> None:
    original = AgentOutput("critic", 1, "critique", "c", {"position": {"conclusion": "x"}}, "t")
    once = reused_output(original, 2)
    twice = reused_output(once, 3)
    assert (twice.round, twice.fallback, twice.metadata["reused_from_round"]) == (3, "reused_last_output", 1)
    assert first_sentence("## Title\nbody") == "Title" and first_sentence("结论是可行。其余") == "结论是可行"
