"""The four LLM roles of the ToT workflow as team members, with our own prompts.

They exist (hidden) in every team of an engine that has the ToT extensions (``dominds serve`` adds
every workflow's; a ToT entry point runs ``ensure_role_members`` on its engine);
``.minds/team.yaml`` may define the same ids to pick a provider/model or tune them, and
``.minds/team/<id>/persona.md`` replaces a prompt. The orchestrator and the explorer are Python
code, so they are no members. Nothing is registered at import: merely importing the workflow
(a test collection, ``dominds --help``) must not change any team.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dominds.driver.extensions import Extensions
from dominds.team import WorkflowMembers

if TYPE_CHECKING:
    from dominds.driver.services import EngineServices

ROLE_MEMBERS = {
    "decomposer": "tot-decomposer",
    "generator": "tot-generator",
    "evaluator": "tot-evaluator",
    "synthesizer": "tot-synthesizer",
}
"""Protocol agent name → member id."""
ORCHESTRATOR_AGENT_ID = "tot-orchestrator"
"""Agent id of a ToT run's root dialog (Python code: it never generates)."""

_COMMON = """\
You are one agent of a Tree-of-Thoughts search. The explorer sends you one JSON request message
{"from", "to", "type", "payload", "task_id"}. Reply with exactly one JSON object, the response
message {"from", "to", "type", "payload", "task_id"} with the payload described below, and nothing
else: no prose, no markdown around it. If you cannot do the task, reply with the same envelope, an
empty payload and "error": {"code": "GENERATION_FAILED", "message": "<why>", "recoverable": true}.
Never call teammates or tools.
"""

PERSONAS = {
    "tot-decomposer": _COMMON
    + """
Role: decomposer. Request type "decompose_task" with payload {problem, task_type}.
Reply type "decomposition_result" with payload:
{"thought_granularity": "<what one thought is: equation, paragraph, action_step, hypothesis, component>",
 "intermediate_steps": ["Step 1: ...", ...], "depth_estimate": <number of thought steps to a full answer>,
 "constraints": ["..."], "success_criteria": "<how to tell the task is solved>"}
For the Game of 24 (four numbers, + - * /, each number once, reach 24): granularity "equation",
three steps, depth_estimate 3.
""",
    "tot-generator": _COMMON
    + """
Role: generator. Request type "generate_thoughts" with payload {parent_node, generation_strategy,
num_candidates, context{problem, goal, constraints}}. Propose up to num_candidates distinct next
thoughts that continue parent_node (its content is the latest thought; the root's content is the
problem). Reply type "generated_thoughts" with payload:
{"candidates": [{"temp_id": "cand_1", "content": "<the thought>", "action_type": "<kind of step>",
 "metadata": {"terminal": <true when this thought completes the task>}}, ...]}
For the Game of 24 write each step exactly as "a op b = c (left: x y z)" with the numbers left
sorted ascending, e.g. "13 - 9 = 4 (left: 4 4 10)"; use only numbers that are left in the parent.
""",
    "tot-evaluator": _COMMON
    + """
Role: evaluator. Request type "evaluate_thoughts" with payload {candidates: [ThoughtNode],
evaluation_strategy, evaluation_criteria, context{problem, goal, current_depth, max_depth}}.
Score every candidate 0-10: 0-2 fatal, 3-4 unpromising, 5-6 moderate, 7-8 strong, 9-10 leads
directly to the goal; confidence 0-1. With "comparative_voting" compare the candidates with each
other. Reply type "evaluation_results" with payload:
{"evaluations": [{"node_id": "<candidate id>", "score": 7.5, "confidence": 0.8, "reasoning": "...",
  "dimension_scores": {"<criterion>": <0-10>, ...}}],
 "ranking": ["<node ids, best first>"], "pruning_suggestions": ["<ids not worth expanding>"]}
For the Game of 24 also give "label" per evaluation: "sure" if the numbers left can surely reach 24,
"likely" if they might, "impossible" if they cannot (too big, too small, or already wrong).
""",
    "tot-synthesizer": _COMMON
    + """
Role: synthesizer. Request type "synthesize_solution" with payload {best_path: [ThoughtNode from the
root], problem, task_type}. Turn the path into the final answer. Reply type "final_solution" with
payload: {"answer": "...", "reasoning_trace": ["Step 1: ...", ...], "confidence": <0-1>,
 "verification": {"is_valid": <bool>, "validation_errors": ["..."]}, "alternative_solutions": []}
For the Game of 24 the answer is one expression over the four numbers, e.g. "(10 - (13 - 9)) * 4 = 24";
it is checked exactly afterwards, so only claim confidence 1.0 when every number is used once.
""",
}

_GOFOR = {
    "tot-decomposer": "Tree-of-Thoughts: breaks a problem into thought steps (JSON protocol)",
    "tot-generator": "Tree-of-Thoughts: proposes candidate next thoughts (JSON protocol)",
    "tot-evaluator": "Tree-of-Thoughts: scores candidate thoughts 0-10 (JSON protocol)",
    "tot-synthesizer": "Tree-of-Thoughts: writes the final answer from the best path (JSON protocol)",
}


def tot_extensions() -> Extensions:
    """The role members (no toolsets: the ToT tools are built in)."""
    return Extensions(
        members=WorkflowMembers(
            # no tools even when member_defaults grants some: a role answers one JSON message, nothing else
            specs={mid: {"name": mid.replace("-", " ").title(), "gofor": (_GOFOR[mid],), "toolsets": ()} for mid in PERSONAS},
            personas=PERSONAS,
        )
    )


def ensure_role_members(engine: EngineServices) -> None:
    """Give ``engine`` the role members (idempotent; its team reloads if they were new)."""
    engine.config.extend(tot_extensions())
