"""Every seed-000 message type against its schema: the seed's own examples pass, broken ones fail,
errors have the seed's shape, and teammate replies are repaired only where that is safe."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dominds.workflows.tot.model import Evaluation, SearchConfig, ThoughtNode, ThoughtTree
from dominds.workflows.tot.protocol import error_reply, message, reply_from_text
from dominds.workflows.tot.schemas import (
    ERROR_CODES,
    PAYLOAD_SCHEMAS,
    json_schema,
    message_errors,
    tree_errors,
)

NODE = ThoughtNode("node_1_1", "node_1", 2, "13 - 9 = 4, 剩余: 4, 4, 10", "subtraction", evaluation=Evaluation(7.5, 0.8, "产生了4的倍数")).to_dict()
CONFIG = SearchConfig("BFS", 2, 4, 6.5).to_dict()
TREE = ThoughtTree.start("tot-20251030-143056-a3f7b2", "用4、9、10、13得到24", "math_reasoning", SearchConfig("BFS", 3, 5, 5.0), {}).to_dict()

# one valid payload per type; where the seed gives an example, it is that example
VALID: dict[str, tuple[str, str, dict[str, Any]]] = {
    "decompose_task": ("orchestrator", "decomposer", {"problem": "用4、9、10、13得到24", "task_type": "math_reasoning"}),
    "decomposition_result": ("decomposer", "orchestrator", {
        "thought_granularity": "single_equation",
        "intermediate_steps": ["Step 1: 选择两个数字进行运算", "Step 2: 用结果与第三个数字运算", "Step 3: 得到目标数字24"],
        "depth_estimate": 3, "constraints": ["必须使用所有数字各一次", "只能用+-×÷"], "success_criteria": "最终结果等于24",
    }),
    "generate_thoughts": ("explorer", "generator", {
        "parent_node": NODE, "generation_strategy": "sequential_proposal", "num_candidates": 5,
        "context": {"problem": "p", "goal": "24", "constraints": []},
    }),
    "generated_thoughts": ("generator", "explorer", {"candidates": [
        {"temp_id": "cand_1", "content": "13 - 9 = 4, 剩余: 4, 4, 10", "action_type": "subtraction"},
        {"temp_id": "cand_2", "content": "10 + 4 = 14, 剩余: 9, 13, 14", "action_type": "addition"},
    ]}),
    "evaluate_thoughts": ("explorer", "evaluator", {
        "candidates": [NODE], "evaluation_strategy": "comparative_voting", "evaluation_criteria": ["correctness"],
        "context": {"problem": "p", "goal": "24", "current_depth": 1, "max_depth": 3},
    }),
    "evaluation_results": ("evaluator", "explorer", {
        "evaluations": [{"node_id": "node_1_1", "score": 7.5, "confidence": 0.8, "reasoning": "产生了4的倍数，剩余数字可组合成24",
                         "dimension_scores": {"correctness": 10, "progress": 5}}],
        "ranking": ["node_1_1", "node_1_2"], "pruning_suggestions": [],
    }),
    "initialize_search": ("orchestrator", "explorer", {
        "problem": "p", "task_type": "architecture_design", "search_config": CONFIG, "decomposition_result": {},
    }),
    "search_complete": ("explorer", "orchestrator", {
        "best_path": [NODE], "tree": TREE, "stats": {"total_nodes": 9, "total_backtracks": 0, "llm_calls": 4},
    }),
    "synthesize_solution": ("explorer", "synthesizer", {"best_path": [NODE], "problem": "p", "task_type": "math_reasoning"}),
    "final_solution": ("synthesizer", "explorer", {
        "answer": "(10 - (13 - 9)) × 4 = 24",
        "reasoning_trace": ["步骤1: 用13减9得到4", "步骤2: 用10减去上一步的4得到6", "步骤3: 用6乘以剩余的4得到24"],
        "confidence": 1.0, "verification": {"is_valid": True},
    }),
}  # fmt: skip

BROKEN: dict[str, tuple[str, Any]] = {
    "decompose_task": ("task_type", "poetry"),
    "decomposition_result": ("depth_estimate", "three"),
    "generate_thoughts": ("generation_strategy", "brainstorm"),
    "generated_thoughts": ("candidates", [{"temp_id": "cand_1", "content": ""}]),
    "evaluate_thoughts": ("candidates", [{"id": "node_1"}]),
    "evaluation_results": ("evaluations", [{"node_id": "n", "score": 11, "confidence": 0.5, "reasoning": ""}]),
    "initialize_search": ("search_config", {**CONFIG, "strategy": "A*"}),
    "search_complete": ("stats", {"total_nodes": 9}),
    "synthesize_solution": ("best_path", "root → node_1"),
    "final_solution": ("confidence", 1.5),
}


def test_every_message_type_has_a_schema_and_a_response_pair() -> None:
    assert set(PAYLOAD_SCHEMAS) == set(VALID) == set(BROKEN)


@pytest.mark.parametrize("kind", sorted(VALID))
def test_the_seeds_examples_are_valid_and_a_broken_field_is_not(kind: str) -> None:
    sender, to, payload = VALID[kind]
    assert message_errors(message(kind, sender, to, "tot-1", payload)) == []
    field, bad = BROKEN[kind]
    broken = copy.deepcopy(payload)
    broken[field] = bad
    problems = message_errors(message(kind, sender, to, "tot-1", broken))
    assert problems and all(p.startswith(f"payload.{field}") for p in problems), problems


def test_the_envelope_is_checked_and_types_are_strict() -> None:
    ok = message("decompose_task", "orchestrator", "decomposer", "t", VALID["decompose_task"][2])
    assert message_errors({k: v for k, v in ok.items() if k != "task_id"}) == ["message.task_id: Field required"]
    assert message_errors({**ok, "from": "critic"})[0].startswith("message.from")
    assert message_errors({**ok, "type": "solve"})[0].startswith("message.type")
    assert message_errors("not a message")
    score_as_text = copy.deepcopy(VALID["evaluation_results"][2])
    score_as_text["evaluations"][0]["score"] = "7.5"
    assert message_errors(message("evaluation_results", "evaluator", "explorer", "t", score_as_text))


def test_errors_have_the_seeds_shape_and_codes() -> None:
    request = message("evaluate_thoughts", "explorer", "evaluator", "t", VALID["evaluate_thoughts"][2])
    for code in ERROR_CODES:
        reply = error_reply(request, code, "why", recoverable=False)
        assert reply["error"] == {"code": code, "message": "why", "recoverable": False}
        assert (reply["type"], reply["from"], reply["to"]) == ("evaluation_results", "evaluator", "explorer")
        assert message_errors(reply) == [], "an error reply needs no payload"
    assert message_errors({**reply, "error": {"code": "OOPS", "message": "x", "recoverable": True}})
    assert message_errors({**reply, "error": {"code": "INVALID_FORMAT", "message": "x"}})


def test_thought_nodes_and_trees_serialise_with_exactly_the_seeds_keys() -> None:
    assert list(NODE) == ["id", "parent_id", "children_ids", "depth", "content", "action_type", "evaluation", "status", "metadata"]
    assert list(NODE["evaluation"]) == ["score", "confidence", "reasoning"]
    assert list(TREE) == ["task_id", "problem", "task_type", "search_config", "nodes", "root_id", "search_state"]
    assert list(TREE["search_state"]) == ["current_depth", "frontier", "best_path"]
    assert ThoughtNode.from_dict(NODE).to_dict() == NODE
    assert tree_errors(TREE) == [] and tree_errors({**TREE, "root_id": None})


def test_json_schemas_are_exported_for_other_implementations() -> None:
    schema = json_schema("generate_thoughts")
    node = schema["$defs"]["ThoughtNodeSchema"]
    assert set(node["required"]) == set(NODE)
    assert set(json_schema("final_solution")["required"]) == {"answer", "reasoning_trace", "confidence", "verification"}


REQUEST = message("evaluate_thoughts", "explorer", "evaluator", "t", VALID["evaluate_thoughts"][2])
EVALUATION = '{"node_id": "node_1_1", "score": 6, "confidence": 0.7, "reasoning": "ok"}'


@pytest.mark.parametrize(
    "text",
    [
        f'```json\n{{"evaluations": [{EVALUATION}], "ranking": ["node_1_1"], "pruning_suggestions": []}}\n```',
        f'Here you go: {{"type": "evaluation_results", "payload": {{"evaluations": [{EVALUATION},],}}}} hope it helps',
        f"{{“evaluations”: [{EVALUATION}]}}",  # smart quotes, no envelope, no ranking
    ],
)
def test_replies_are_repaired_when_the_intent_is_unambiguous(text: str) -> None:
    reply = reply_from_text(REQUEST, text)
    assert isinstance(reply, dict) and message_errors(reply) == []
    assert reply["payload"]["ranking"] == ["node_1_1"] and reply["task_id"] == "t" and reply["from"] == "evaluator"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("All three look promising, node_1_1 most of all.", "no JSON object"),
        ('{"evaluations": [}', "not valid JSON"),
        ('{"type": "final_solution", "payload": {}}', "expected 'evaluation_results'"),
        ('{"verdict": "good"}', "no payload"),
    ],
)
def test_replies_that_cannot_be_read_say_why(text: str, why: str) -> None:
    reply = reply_from_text(REQUEST, text)
    assert isinstance(reply, str) and why in reply
