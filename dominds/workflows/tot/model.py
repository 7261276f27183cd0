"""ThoughtNode and ThoughtTree exactly as seed 000 defines them ("核心数据结构"), with their JSON form.

``to_dict`` writes the seed's keys in the seed's order and nothing else; anything task-specific
(the numbers left in Game 24, why a node was pruned) lives in ``metadata``, as the seed intends.
Node ids follow the origin's convention: ``root``, then ``node_1``, ``node_1_2``, ``node_3_1_1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

NodeStatus = Literal["pending", "expanded", "pruned", "terminal"]
Strategy = Literal["BFS", "DFS"]
ROOT_ID = "root"


@dataclass
class Evaluation:
    score: float
    """0-10 (the seed's scale)."""
    confidence: float
    """0-1."""
    reasoning: str

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "confidence": self.confidence, "reasoning": self.reasoning}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Evaluation:
        return cls(float(raw["score"]), float(raw["confidence"]), str(raw["reasoning"]))


@dataclass
class ThoughtNode:
    id: str
    parent_id: str | None
    depth: int
    """0 for the root."""
    content: str
    action_type: str
    children_ids: list[str] = field(default_factory=list)
    evaluation: Evaluation | None = None
    status: NodeStatus = "pending"
    metadata: dict[str, Any] = field(default_factory=dict)
    """Task-specific facts; the explorer adds ``prune_reason`` when it prunes a node."""

    @property
    def score(self) -> float | None:
        return self.evaluation.score if self.evaluation is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "children_ids": list(self.children_ids),
            "depth": self.depth,
            "content": self.content,
            "action_type": self.action_type,
            "evaluation": self.evaluation.to_dict() if self.evaluation is not None else None,
            "status": self.status,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ThoughtNode:
        evaluation = raw.get("evaluation")
        return cls(
            id=str(raw["id"]),
            parent_id=raw.get("parent_id"),
            depth=int(raw["depth"]),
            content=str(raw["content"]),
            action_type=str(raw["action_type"]),
            children_ids=[str(c) for c in raw.get("children_ids", [])],
            evaluation=Evaluation.from_dict(evaluation) if isinstance(evaluation, dict) else None,
            status=raw.get("status", "pending"),
            metadata=dict(raw.get("metadata") or {}),
        )


@dataclass(frozen=True)
class SearchConfig:
    """The seed's ``search_config``.

    ``branching_factor`` is *b*, the number of states kept: the beam width per BFS layer, or the
    alternatives DFS tries under one parent. How many candidates a generator is asked for is a
    separate setting (``num_candidates`` of ``generate_thoughts``), see settings.py.
    """

    strategy: Strategy
    max_depth: int
    branching_factor: int
    pruning_threshold: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "max_depth": self.max_depth,
            "branching_factor": self.branching_factor,
            "pruning_threshold": self.pruning_threshold,
        }


@dataclass
class SearchState:
    current_depth: int = 0
    frontier: list[str] = field(default_factory=list)
    """Nodes waiting to be expanded."""
    best_path: list[str] = field(default_factory=list)
    """Ids from the root to the current best node."""

    def to_dict(self) -> dict[str, Any]:
        return {"current_depth": self.current_depth, "frontier": list(self.frontier), "best_path": list(self.best_path)}


@dataclass
class ThoughtTree:
    task_id: str
    problem: str
    task_type: str
    search_config: SearchConfig
    nodes: dict[str, ThoughtNode]
    root_id: str = ROOT_ID
    search_state: SearchState = field(default_factory=SearchState)

    @classmethod
    def start(cls, task_id: str, problem: str, task_type: str, config: SearchConfig, root_metadata: dict[str, Any]) -> ThoughtTree:
        root = ThoughtNode(ROOT_ID, None, 0, problem, "problem", metadata=root_metadata)
        return cls(task_id, problem, task_type, config, {ROOT_ID: root}, ROOT_ID, SearchState(frontier=[ROOT_ID]))

    @property
    def root(self) -> ThoughtNode:
        return self.nodes[self.root_id]

    def add_child(self, parent: ThoughtNode, content: str, action_type: str, metadata: dict[str, Any]) -> ThoughtNode:
        """A new pending child; the explorer, not the generator, chooses its id."""
        index = len(parent.children_ids) + 1
        node_id = f"node_{index}" if parent.id == self.root_id else f"{parent.id}_{index}"
        node = ThoughtNode(node_id, parent.id, parent.depth + 1, content, action_type, metadata=metadata)
        self.nodes[node_id] = node
        parent.children_ids.append(node_id)
        return node

    def path_to(self, node_id: str) -> list[ThoughtNode]:
        path: list[ThoughtNode] = []
        current: str | None = node_id
        while current is not None:
            node = self.nodes[current]
            path.append(node)
            current = node.parent_id
        return path[::-1]

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ThoughtTree:
        """A tree as ``to_dict`` wrote it (a run's ``tot-run.json``), to resume its search."""
        config, state = raw["search_config"], raw.get("search_state") or {}
        return cls(
            task_id=str(raw["task_id"]),
            problem=str(raw["problem"]),
            task_type=str(raw["task_type"]),
            search_config=SearchConfig(
                config["strategy"], int(config["max_depth"]), int(config["branching_factor"]), float(config["pruning_threshold"])
            ),
            nodes={str(k): ThoughtNode.from_dict(v) for k, v in raw["nodes"].items()},
            root_id=str(raw.get("root_id") or ROOT_ID),
            search_state=SearchState(
                int(state.get("current_depth", 0)), list(state.get("frontier", [])), list(state.get("best_path", []))
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "problem": self.problem,
            "task_type": self.task_type,
            "search_config": self.search_config.to_dict(),
            "nodes": {node_id: node.to_dict() for node_id, node in self.nodes.items()},
            "root_id": self.root_id,
            "search_state": self.search_state.to_dict(),
        }
