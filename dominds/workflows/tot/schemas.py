"""The schemas of seed 000's messages, and the one function that checks a message against them.

Every message is the seed's envelope ``{from, to, type, payload, task_id}`` plus an optional
``error{code, message, recoverable}``. A message that carries an error may have an empty payload;
otherwise the payload must match its type's schema. Required fields are those the seed's own
examples always show; fields its examples leave out (``metadata`` of a candidate, ``dimension_scores``,
``validation_errors``, ``alternative_solutions``) are optional. Extra fields are allowed: an LLM
that adds a note does not break the protocol, a missing or mistyped field does.

The schemas are pydantic models in strict mode (a string is not a number, ``true`` is not an
integer), which is JSON Schema's typing; ``json_schema(type)`` exports the JSON Schema. Models
rather than schema documents because a run checks hundreds of messages and jsonschema took about
a second per run for that, pydantic a few milliseconds.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

AGENTS: Final = ("orchestrator", "decomposer", "generator", "evaluator", "explorer", "synthesizer")
TASK_TYPES: Final = ("math_reasoning", "creative_writing", "planning", "debugging", "architecture_design")
GENERATION_STRATEGIES: Final = ("independent_sampling", "sequential_proposal")
EVALUATION_STRATEGIES: Final = ("independent_scoring", "comparative_voting")

INVALID_FORMAT: Final = "INVALID_FORMAT"
GENERATION_FAILED: Final = "GENERATION_FAILED"
EVALUATION_TIMEOUT: Final = "EVALUATION_TIMEOUT"
SEARCH_EXHAUSTED: Final = "SEARCH_EXHAUSTED"
ERROR_CODES: Final = (INVALID_FORMAT, GENERATION_FAILED, EVALUATION_TIMEOUT, SEARCH_EXHAUSTED)

RESPONSE_TYPES: Final = {
    "decompose_task": "decomposition_result",
    "generate_thoughts": "generated_thoughts",
    "evaluate_thoughts": "evaluation_results",
    "initialize_search": "search_complete",
    "synthesize_solution": "final_solution",
}
"""Request type → the type of its response."""

Agent = Literal["orchestrator", "decomposer", "generator", "evaluator", "explorer", "synthesizer"]
TaskType = Literal["math_reasoning", "creative_writing", "planning", "debugging", "architecture_design"]
Score = Annotated[float, Field(ge=0, le=10)]
Unit = Annotated[float, Field(ge=0, le=1)]


class _Schema(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class ProtocolErrorSchema(_Schema):
    code: Literal["INVALID_FORMAT", "GENERATION_FAILED", "EVALUATION_TIMEOUT", "SEARCH_EXHAUSTED"]
    message: str
    recoverable: bool


class EnvelopeSchema(_Schema):
    sender: Agent = Field(alias="from")
    to: Agent
    type: Literal[
        "decompose_task", "decomposition_result", "generate_thoughts", "generated_thoughts", "evaluate_thoughts",
        "evaluation_results", "initialize_search", "search_complete", "synthesize_solution", "final_solution",
    ]  # fmt: skip
    payload: dict[str, Any]
    task_id: str
    error: ProtocolErrorSchema | None = None


# ---------------------------------------------------------------- core structures


class EvaluationSchema(_Schema):
    score: Score
    confidence: Unit
    reasoning: str


class ThoughtNodeSchema(_Schema):
    id: str
    parent_id: str | None
    children_ids: list[str]
    depth: Annotated[int, Field(ge=0)]
    content: str
    action_type: str
    evaluation: EvaluationSchema | None
    status: Literal["pending", "expanded", "pruned", "terminal"]
    metadata: dict[str, Any]


class SearchConfigSchema(_Schema):
    strategy: Literal["BFS", "DFS"]
    max_depth: Annotated[int, Field(ge=1)]
    branching_factor: Annotated[int, Field(ge=1)]
    pruning_threshold: Score


class SearchStateSchema(_Schema):
    current_depth: int
    frontier: list[str]
    best_path: list[str]


class ThoughtTreeSchema(_Schema):
    task_id: str
    problem: str
    task_type: TaskType
    search_config: SearchConfigSchema
    nodes: dict[str, ThoughtNodeSchema]
    root_id: str
    search_state: SearchStateSchema


# ---------------------------------------------------------------- payloads, in the seed's order


class DecomposeTask(_Schema):
    problem: str
    task_type: TaskType


class DecompositionResult(_Schema):
    thought_granularity: str
    intermediate_steps: list[str]
    depth_estimate: Annotated[float, Field(ge=1)]
    constraints: list[str]
    success_criteria: str


class GenerationContext(_Schema):
    problem: str
    goal: str
    constraints: list[str]


class GenerateThoughts(_Schema):
    parent_node: ThoughtNodeSchema
    generation_strategy: Literal["independent_sampling", "sequential_proposal"]
    num_candidates: Annotated[int, Field(ge=1)]
    context: GenerationContext


class Candidate(_Schema):
    temp_id: str
    content: Annotated[str, Field(min_length=1)]
    action_type: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class GeneratedThoughts(_Schema):
    candidates: list[Candidate]


class EvaluationContext(_Schema):
    problem: str
    goal: str
    current_depth: int
    max_depth: int


class EvaluateThoughts(_Schema):
    candidates: list[ThoughtNodeSchema]
    evaluation_strategy: Literal["independent_scoring", "comparative_voting"]
    evaluation_criteria: list[str]
    context: EvaluationContext


class CandidateEvaluation(EvaluationSchema):
    node_id: str
    dimension_scores: dict[str, float] = Field(default_factory=dict)


class EvaluationResults(_Schema):
    evaluations: list[CandidateEvaluation]
    ranking: list[str]
    pruning_suggestions: list[str]


class InitializeSearch(_Schema):
    problem: str
    task_type: TaskType
    search_config: SearchConfigSchema
    decomposition_result: dict[str, Any]


class SearchStats(_Schema):
    total_nodes: int
    total_backtracks: int
    llm_calls: int


class SearchComplete(_Schema):
    best_path: list[ThoughtNodeSchema]
    tree: ThoughtTreeSchema
    stats: SearchStats


class SynthesizeSolution(_Schema):
    best_path: list[ThoughtNodeSchema]
    problem: str
    task_type: TaskType


class Verification(_Schema):
    is_valid: bool
    validation_errors: list[str] = Field(default_factory=list)


class FinalSolution(_Schema):
    answer: str
    reasoning_trace: list[str]
    confidence: Unit
    verification: Verification
    alternative_solutions: list[str] = Field(default_factory=list)


PAYLOAD_SCHEMAS: Final[dict[str, type[_Schema]]] = {
    "decompose_task": DecomposeTask,
    "decomposition_result": DecompositionResult,
    "generate_thoughts": GenerateThoughts,
    "generated_thoughts": GeneratedThoughts,
    "evaluate_thoughts": EvaluateThoughts,
    "evaluation_results": EvaluationResults,
    "initialize_search": InitializeSearch,
    "search_complete": SearchComplete,
    "synthesize_solution": SynthesizeSolution,
    "final_solution": FinalSolution,
}


def _problems(schema: type[_Schema], instance: Any, where: str) -> list[str]:
    try:
        schema.model_validate(instance)
    except ValidationError as exc:
        out = []
        for error in exc.errors(include_url=False):
            path = ".".join(str(p) for p in error["loc"])
            out.append(f"{where}{'.' + path if path else ''}: {error['msg']}")
        return out
    return []


def message_errors(message: Any) -> list[str]:
    """Why ``message`` is not a valid seed-000 message; empty when it is."""
    errors = _problems(EnvelopeSchema, message, "message")
    if errors or message.get("error") is not None:
        return errors
    return _problems(PAYLOAD_SCHEMAS[message["type"]], message["payload"], "payload")


def tree_errors(tree: Any) -> list[str]:
    """Why ``tree`` is not a valid ThoughtTree."""
    return _problems(ThoughtTreeSchema, tree, "tree")


def json_schema(message_type: str) -> dict[str, Any]:
    """The JSON Schema of one message type's payload (for documentation and other implementations)."""
    return PAYLOAD_SCHEMAS[message_type].model_json_schema(by_alias=True)
