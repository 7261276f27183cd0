"""Search settings: the seed's task-type table, the origin's defaults, and user overrides.

Two numbers the seed calls "branching factor" are kept apart here:

- ``branching_factor`` (*b*, the seed's ``search_config`` field): states **kept**. BFS keeps the
  top *b* of each layer (the ToT paper's beam, ``n_select_sample``); DFS tries at most *b*
  alternatives under one parent (never more than the origin's 3).
- ``num_candidates`` (*k*, the seed's ``generate_thoughts.num_candidates``): candidates
  **generated** per expanded node. Sequential proposal asks for *k* in one call; independent
  sampling makes *k* calls of one.

The seed's usage example ("branching_factor=5", generate 5, keep top-3) uses one word for both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from dominds.workflows.tot.game24 import parse_puzzle
from dominds.workflows.tot.model import SearchConfig, Strategy

DFS_MAX_ALTERNATIVES = 3
"""The origin explorer tries at most 3 alternatives per parent before backtracking further."""
EARLY_STOP_SCORE = 9.5
"""A terminal node scoring at least this is a solution: the search stops (origin explorer)."""
HOPELESS_SCORE = 4.0
"""BFS stops when every node it keeps scores below this (origin "Early Termination")."""
MAX_DEPTH_LIMIT = 10
"""Upper bound for any depth (a decomposer's estimate or a user's); a guard against runaway trees."""


@dataclass(frozen=True)
class SearchSettings:
    """Everything the explorer needs to know about how to search."""

    strategy: Strategy
    max_depth: int
    branching_factor: int
    """States kept (see the module docstring)."""
    pruning_threshold: float
    num_candidates: int
    """Candidates generated per expansion (see the module docstring)."""
    generation_strategy: str
    evaluation_strategy: str
    evaluation_samples: int = 1
    """Independent scorings per candidate, averaged (the ToT paper samples its value prompt 3 times)."""
    thought_granularity: str = "step"
    evaluation_criteria: tuple[str, ...] = ()
    max_nodes: int = 5000
    """Guard: the search stops with a warning once the tree holds this many nodes."""

    def search_config(self) -> SearchConfig:
        return SearchConfig(self.strategy, self.max_depth, self.branching_factor, self.pruning_threshold)

    def describe(self) -> dict[str, Any]:
        return {
            **self.search_config().to_dict(),
            "num_candidates": self.num_candidates,
            "generation_strategy": self.generation_strategy,
            "evaluation_strategy": self.evaluation_strategy,
            "evaluation_samples": self.evaluation_samples,
        }


def _defaults(
    granularity: str, strategy: Strategy, depth: int, b: int, k: int, threshold: float, gen: str, ev: str, criteria: tuple[str, ...]
) -> SearchSettings:
    return SearchSettings(strategy, depth, b, threshold, k, gen, ev, 1, granularity, criteria)


_SEQ, _IND = "sequential_proposal", "independent_sampling"
_SCORE, _VOTE = "independent_scoring", "comparative_voting"
TASK_TYPE_DEFAULTS: dict[str, SearchSettings] = {
    # granularity, strategy and evaluation: the seed's table; b, depth and threshold: the origin
    # orchestrator's (a range in the origin becomes its value named in the seed's own examples, else
    # its lower end; debugging's "variable" depth starts at 3 and the decomposer's estimate decides);
    # k: what each task's ToT-paper prompt produces (8 proposals for Game 24, 5 plans).
    "math_reasoning": _defaults("equation", "BFS", 3, 5, 8, 5.0, _SEQ, _SCORE, ("correctness", "progress", "feasibility")),
    "creative_writing": _defaults("paragraph", "BFS", 2, 3, 5, 6.0, _IND, _VOTE, ("coherence", "creativity", "constraint_satisfaction")),
    "planning": _defaults("action_step", "DFS", 3, 3, 3, 5.5, _SEQ, _SCORE, ("logical_order", "risk", "completeness")),
    "debugging": _defaults("hypothesis", "DFS", 3, 2, 3, 5.0, _SEQ, _SCORE, ("falsifiability", "likelihood", "actionability")),
    "architecture_design": _defaults("component", "BFS", 2, 4, 4, 6.5, _IND, _VOTE, ("suitability", "trade_offs", "feasibility")),
}


@dataclass(frozen=True)
class SearchOverrides:
    """What a user set explicitly (CLI flags, the panel's form); ``None`` = the default applies."""

    strategy: Strategy | None = None
    max_depth: int | None = None
    branching_factor: int | None = None
    pruning_threshold: float | None = None
    num_candidates: int | None = None
    generation_strategy: str | None = None
    evaluation_strategy: str | None = None
    evaluation_samples: int | None = None


class SettingsError(ValueError):
    """An override out of range; the message names it."""


def resolve_settings(task_type: str, overrides: SearchOverrides, depth_estimate: float | None = None) -> SearchSettings:
    """The defaults of ``task_type``, then the decomposer's depth estimate, then the user's overrides."""
    base = TASK_TYPE_DEFAULTS[task_type]
    if depth_estimate is not None and overrides.max_depth is None:
        base = replace(base, max_depth=max(1, min(MAX_DEPTH_LIMIT, round(depth_estimate))))
    chosen = {k: v for k, v in vars(overrides).items() if v is not None}
    settings = replace(base, **chosen)
    checks = [
        (1 <= settings.max_depth <= MAX_DEPTH_LIMIT, f"depth must be 1..{MAX_DEPTH_LIMIT}"),
        (settings.branching_factor >= 1, "branching must be at least 1"),
        (settings.num_candidates >= 1, "candidates must be at least 1"),
        (0.0 <= settings.pruning_threshold <= 10.0, "threshold must be within 0..10"),
        (settings.evaluation_samples >= 1, "evaluation samples must be at least 1"),
        (settings.strategy in ("BFS", "DFS"), "strategy must be BFS or DFS"),
        (settings.generation_strategy in (_SEQ, _IND), f"generation strategy must be {_SEQ} or {_IND}"),
        (settings.evaluation_strategy in (_SCORE, _VOTE), f"evaluation strategy must be {_SCORE} or {_VOTE}"),
    ]
    for ok, why in checks:
        if not ok:
            raise SettingsError(why)
    return settings


_TYPE_KEYWORDS = (
    ("debugging", r"\b(bug|debug|crash|exception|error|fails?|failing|traceback)\b|报错|崩溃|调试"),
    ("creative_writing", r"\b(write|story|poem|essay|novel|passage)\b|写一|故事|诗|文章"),
    ("architecture_design", r"\b(architecture|design|system|component|service|module)s?\b|架构|设计|组件"),
    ("planning", r"\b(plan|schedule|roadmap|steps?|itinerary)\b|计划|规划|安排"),
)


def classify_task(problem: str) -> str:
    """The task type of ``problem`` when the user named none: a Game-24 puzzle or keywords, else math.

    The origin's orchestrator asked an LLM; a keyword rule is predictable, and ``--task-type``
    settles any doubt.
    """
    if parse_puzzle(problem) is not None:
        return "math_reasoning"
    lowered = problem.lower()
    for task_type, pattern in _TYPE_KEYWORDS:
        if re.search(pattern, lowered):
            return task_type
    return "math_reasoning" if re.search(r"\d", problem) else "planning"
