"""The explorer: BFS and DFS over a ThoughtTree, asking the generator and evaluator through the channel.

BFS (origin ``tot-explorer.md`` Step 3): expand every frontier node, evaluate the whole layer, prune
below the threshold, keep the top *b* (ties keep generation order), stop early when a terminal node
scores at least 9.5 or every kept node scores below 4.0.

DFS (Steps 3 and 6): expand a node, rank its children by score, try at most min(*b*, 3) of them
best-first; a child below the threshold is pruned, a child whose subtree holds no solution is left.
Each abandoned alternative is one **backtrack**. A terminal node scoring at least 9.5 is a solution.
The origin generates one candidate at a time; here a node's *k* candidates are made and scored at
once, then tried best-first, which visits the same alternatives in a better order.

Resuming (a run cut by a crash, ``runner.resume_tot_run``): the explorer is given the tree the run had
saved and walks it again from the root. A node already expanded there keeps its children (the generator
is not asked again) and a candidate already scored keeps its score (the evaluator is not asked again), so
the walk repeats every decision the cut run made, for free, and asks the roles only where it had stopped.

Guards: a candidate repeating a thought already on its path is pruned (``cycle``); depth never
exceeds ``max_depth``; the tree stops growing at ``max_nodes``. Role failures never raise: a node
whose generation fails is skipped, a candidate left unevaluated is pruned (``evaluation_failed``),
and the errors stay in the channel's record.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from dominds.workflows.tot import game24
from dominds.workflows.tot.channel import Channel
from dominds.workflows.tot.model import Evaluation, ThoughtNode, ThoughtTree
from dominds.workflows.tot.protocol import Message, ProtocolError, message, reply_error
from dominds.workflows.tot.schemas import SEARCH_EXHAUSTED
from dominds.workflows.tot.settings import (
    DFS_MAX_ALTERNATIVES,
    EARLY_STOP_SCORE,
    HOPELESS_SCORE,
    SearchSettings,
)

TreeObserver = Callable[[str, dict[str, Any]], None]
"""Called with an event kind and its JSON-ready data: ``search_started`` (from the orchestrator; its
``tree`` is the live ThoughtTree object), ``layer_started``, ``expanded``, ``evaluated``, ``layer_done``
(a LayerReport, per BFS layer or DFS expansion), ``backtrack``, ``search_done``, then ``solution`` and
``run_done`` from the orchestrator."""
CONFIDENT = 0.7
"""The origin evaluator: never prune on a suggestion made with less confidence than this."""


@dataclass(frozen=True)
class SearchGoal:
    goal: str
    constraints: list[str]


@dataclass
class LayerReport:
    """What one BFS layer (or one DFS expansion) did."""

    depth: int
    expanded: list[str]
    candidates: list[str]
    kept: list[str]
    pruned: list[str]
    best_score: float | None

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class SearchOutcome:
    tree: ThoughtTree
    best_path: list[ThoughtNode]
    solved: bool
    """A terminal node scored at least 9.5."""
    total_backtracks: int
    llm_calls: int
    layers: list[LayerReport] = field(default_factory=list)
    error: ProtocolError | None = None
    warnings: list[str] = field(default_factory=list)
    depth_limited: bool = False
    """The best path (the one the answer comes from) stopped only because it reached ``max_depth``."""

    def stats(self) -> dict[str, int]:
        return {"total_nodes": len(self.tree.nodes), "total_backtracks": self.total_backtracks, "llm_calls": self.llm_calls}


class Explorer:
    def __init__(
        self,
        tree: ThoughtTree,
        settings: SearchSettings,
        goal: SearchGoal,
        channel: Channel,
        observer: TreeObserver | None = None,
    ) -> None:
        self.tree = tree
        self.settings = settings
        self.goal = goal
        self.channel = channel
        self.observer = observer or (lambda kind, data: None)
        self.log = channel.logs.agent("explorer")
        self.backtracks = 0
        self.layers: list[LayerReport] = []
        self.warnings: list[str] = []
        self._suggested: set[str] = set()
        self._solution: ThoughtNode | None = None
        self._puzzle = game24.parse_puzzle(tree.problem)
        self._calls_before = channel.calls
        self._depth_cut: set[str] = set()
        """Nodes that ended a path only because they reached ``max_depth``."""

    async def run(self) -> SearchOutcome:
        s = self.settings
        self.log.log("info", "🔍 [Explorer] 初始化完成", s.describe())
        if s.strategy == "BFS":
            exhausted = await self._bfs()
        else:
            exhausted = not await self._dfs(self.tree.root) and not self._reached_leaf()
        best = self._best_node()
        self.tree.search_state.best_path = [n.id for n in self.tree.path_to(best.id)]
        self.tree.search_state.frontier = [n.id for n in self.tree.nodes.values() if n.status == "pending" and n.id != self.tree.root_id]
        outcome = SearchOutcome(
            self.tree, self.tree.path_to(best.id), self._solution is not None, self.backtracks,
            self.channel.calls - self._calls_before, self.layers, None, self.warnings, best.id in self._depth_cut,
        )  # fmt: skip
        if exhausted and self._solution is None:
            outcome.error = ProtocolError(SEARCH_EXHAUSTED, "no candidate survived to a complete path", False)
            self.log.log("error", f"❌ [Explorer] {SEARCH_EXHAUSTED}: {outcome.error.message}")
        self.log.log("info", "🏁 [Explorer] 搜索完成", {**outcome.stats(), "solved": outcome.solved, "best_path": self.tree.search_state.best_path})
        self.observer("search_done", {"solved": outcome.solved, "best_path": self.tree.search_state.best_path})
        return outcome

    # ---------------------------------------------------------------- BFS

    async def _bfs(self) -> bool:
        """Returns whether the search ran out of states (a layer kept nothing)."""
        frontier = [self.tree.root]
        depth = 0
        while frontier and depth < self.settings.max_depth:
            if self._too_big():
                break
            depth += 1
            self.log.log("progress", f"⏳ [Explorer - 第{depth}层] 准备扩展 {len(frontier)} 个节点")
            self.observer("layer_started", {"depth": depth, "frontier": [n.id for n in frontier]})
            groups = await asyncio.gather(*(self._generate_children(parent, depth) for parent in frontier))
            layer = [node for group in groups for node in group]
            await self._evaluate(layer, depth)
            kept = self._select(layer, self.settings.branching_factor)
            for node in kept:  # one expanded in a resumed tree stays so: its children are reused
                node.status = "terminal" if self._is_terminal(node) else ("expanded" if node.status == "expanded" else "pending")
            self.tree.search_state.current_depth = depth
            self._report(depth, [p.id for p in frontier], layer, kept)
            frontier = [n for n in kept if n.status != "terminal"]
            if not kept:
                return True
            solution = next((n for n in kept if n.status == "terminal" and (n.score or 0) >= EARLY_STOP_SCORE), None)
            if solution is not None:
                self._solution = solution
                self.log.log("info", f"🎯 [Explorer] 提前终止: {solution.id} 评分 {solution.score} ≥ {EARLY_STOP_SCORE}")
                return False
            if all((n.score or 0) < HOPELESS_SCORE for n in kept):
                self._warn(f"⚠️ [Explorer] 提前终止: 第{depth}层所有节点评分低于 {HOPELESS_SCORE}")
                return False
        return False

    def _select(self, layer: Sequence[ThoughtNode], keep: int) -> list[ThoughtNode]:
        """Prune below the threshold (and confident suggestions), then keep the ``keep`` best."""
        survivors = []
        for node in layer:
            if node.status == "pruned":
                continue
            reason = self._prune_reason(node)
            if reason:
                self._prune(node, reason)
            else:
                survivors.append(node)
        ranked = sorted(survivors, key=lambda n: -(n.score or 0.0))  # stable: ties keep generation order
        for node in ranked[keep:]:
            self._prune(node, "beam")
        return ranked[:keep]

    # ---------------------------------------------------------------- DFS

    async def _dfs(self, node: ThoughtNode) -> bool:
        """Whether a solution lies under ``node``."""
        if self._too_big():
            return False
        depth = node.depth + 1
        self.log.log("progress", f"⏳ [Explorer - 第{depth}层] 扩展 {node.id}")
        children = await self._generate_children(node, depth)
        await self._evaluate(children, depth)
        ranked = sorted((c for c in children if c.status != "pruned"), key=lambda c: -(c.score or 0.0))
        limit = min(self.settings.branching_factor, DFS_MAX_ALTERNATIVES)
        alternatives = ranked[:limit]
        for child in ranked:
            reason = self._prune_reason(child)
            if reason or child not in alternatives:
                self._prune(child, reason or "alternatives_limit")
        self._report(depth, [node.id], children, [c for c in alternatives if c.status != "pruned"])
        for child in alternatives:  # best first; pruned ones rank last, each is one abandoned alternative
            if child.status == "pruned":
                self._backtrack(child, str(child.metadata["prune_reason"]))
            elif self._is_terminal(child):
                child.status = "terminal"
                if (child.score or 0.0) >= EARLY_STOP_SCORE:
                    self._solution = child
                    return True
                self._backtrack(child, "leaf below the solution score")
            elif await self._dfs(child):
                return True
            else:
                self._backtrack(child, "no solution below")
        return False

    def _backtrack(self, child: ThoughtNode, why: str) -> None:
        self.backtracks += 1
        self.log.log("progress", f"↩️ [Explorer] 回溯 #{self.backtracks}: 放弃 {child.id} ({why})")
        self.observer("backtrack", {"node_id": child.id, "reason": why, "total_backtracks": self.backtracks})

    def _reached_leaf(self) -> bool:
        return any(n.status == "terminal" for n in self.tree.nodes.values())

    # ---------------------------------------------------------------- generation and evaluation

    async def _generate_children(self, parent: ThoughtNode, round_no: int) -> list[ThoughtNode]:
        if parent.status == "expanded":  # in a resumed tree: its children were made before the cut
            made = [self.tree.nodes[c] for c in parent.children_ids if c in self.tree.nodes]
            self.log.log("progress", f"♻️ [Explorer] 复用 {parent.id} 的 {len(made)} 个子节点 (恢复运行)")
            self.observer("expanded", {"node_id": parent.id, "children": [c.to_dict() for c in made], "reused": True})
            return made
        k = self.settings.num_candidates
        sizes = [k] if self.settings.generation_strategy == "sequential_proposal" else [1] * k
        replies = await asyncio.gather(*(self._ask_generator(parent, n, round_no) for n in sizes))
        on_path = {n.content.strip() for n in self.tree.path_to(parent.id)}
        seen: set[str] = set()
        children: list[ThoughtNode] = []
        for reply, wanted in zip(replies, sizes, strict=True):
            if reply_error(reply) is not None:
                continue
            for candidate in reply["payload"]["candidates"][:wanted]:
                content = str(candidate["content"]).strip()
                if content in seen:  # the same thought twice from one parent is one candidate
                    continue
                seen.add(content)
                child = self.tree.add_child(parent, content, str(candidate["action_type"]), dict(candidate.get("metadata") or {}))
                if content in on_path:
                    self._prune(child, "cycle")
                    self._warn(f"⚠️ [Explorer] 检测到循环: {child.id} 重复了路径上的思维")
                children.append(child)
        parent.status = "expanded"
        if all(reply_error(r) is not None for r in replies):
            self._warn(f"⚠️ [Explorer] 跳过 {parent.id}: 生成失败")
        self.observer("expanded", {"node_id": parent.id, "children": [c.to_dict() for c in children]})
        return children

    async def _ask_generator(self, parent: ThoughtNode, count: int, round_no: int) -> Message:
        reply = await self.channel.exchange(self._generate_request(parent, count), round_no)
        error = reply_error(reply)
        if error is not None and error.recoverable and count > 1:
            # the origin's first remedy for a failed generation: ask again for fewer candidates
            reply = await self.channel.exchange(self._generate_request(parent, max(1, count // 2)), round_no)
        return reply

    def _generate_request(self, parent: ThoughtNode, count: int) -> Message:
        payload = {
            "parent_node": parent.to_dict(),
            "generation_strategy": self.settings.generation_strategy,
            "num_candidates": count,
            "context": {"problem": self.tree.problem, "goal": self.goal.goal, "constraints": list(self.goal.constraints)},
        }
        return message("generate_thoughts", "explorer", "generator", self.tree.task_id, payload)

    async def _evaluate(self, nodes: Sequence[ThoughtNode], depth: int) -> None:
        pending = [n for n in nodes if n.status != "pruned" and n.evaluation is None]  # scored before a cut: kept
        if not pending:
            return
        if self.settings.evaluation_strategy == "comparative_voting":
            batches = [pending]
        else:
            batches = [[n] for n in pending for _ in range(self.settings.evaluation_samples)]
        replies = await asyncio.gather(*(self.channel.exchange(self._evaluate_request(b, depth), depth) for b in batches))
        found: dict[str, list[dict[str, Any]]] = {}
        wanted = {n.id for n in pending}
        for reply in replies:
            if reply_error(reply) is not None:
                continue
            for evaluation in reply["payload"]["evaluations"]:
                if evaluation["node_id"] in wanted:
                    found.setdefault(evaluation["node_id"], []).append(evaluation)
            self._suggested.update(reply["payload"]["pruning_suggestions"])
        for node in pending:
            if node.id in found:
                node.evaluation = _combine(found[node.id])
            else:
                self._prune(node, "evaluation_failed")
        self.observer("evaluated", {"nodes": [n.to_dict() for n in pending]})

    def _evaluate_request(self, batch: Sequence[ThoughtNode], depth: int) -> Message:
        payload = {
            "candidates": [n.to_dict() for n in batch],
            "evaluation_strategy": self.settings.evaluation_strategy,
            "evaluation_criteria": list(self.settings.evaluation_criteria),
            "context": {"problem": self.tree.problem, "goal": self.goal.goal, "current_depth": depth, "max_depth": self.settings.max_depth},
        }
        return message("evaluate_thoughts", "explorer", "evaluator", self.tree.task_id, payload)

    # ---------------------------------------------------------------- shared

    def _prune_reason(self, node: ThoughtNode) -> str | None:
        if (node.score or 0.0) < self.settings.pruning_threshold:
            return "below_threshold"
        if node.id in self._suggested and node.evaluation is not None and node.evaluation.confidence >= CONFIDENT:
            return "evaluator_suggestion"
        return None

    def _prune(self, node: ThoughtNode, reason: str) -> None:
        node.status = "pruned"
        node.metadata["prune_reason"] = reason

    def _is_terminal(self, node: ThoughtNode) -> bool:
        if node.metadata.get("terminal") is True:
            return True
        if self._puzzle is not None:  # Game 24: one number left ends the path, whoever wrote the step
            step = game24.parse_step(node.content)
            if step is not None and len(step.remaining) == 1:
                return True
        if node.depth >= self.settings.max_depth:
            self._depth_cut.add(node.id)
            return True
        return False

    def _too_big(self) -> bool:
        if len(self.tree.nodes) < self.settings.max_nodes:
            return False
        warning = f"⚠️ [Explorer] 节点数达到上限 {self.settings.max_nodes}, 停止扩展"
        if warning not in self.warnings:  # DFS asks at every node; once is enough
            self._warn(warning)
        return True

    def _warn(self, text: str) -> None:
        self.warnings.append(text)
        self.log.log("warning", text)

    def _best_node(self) -> ThoughtNode:
        """The solution; else the deepest, best-scored surviving node; else the best pruned one; else the root."""
        if self._solution is not None:
            return self._solution
        scored = [n for n in self.tree.nodes.values() if n.evaluation is not None]
        alive = [n for n in scored if n.status != "pruned"] or scored
        return max(alive, key=lambda n: (n.depth, n.score or 0.0)) if alive else self.tree.root

    def _report(self, depth: int, expanded: list[str], layer: Sequence[ThoughtNode], kept: Sequence[ThoughtNode]) -> None:
        scores = [n.score for n in layer if n.score is not None]
        report = LayerReport(
            depth, expanded, [n.id for n in layer], [n.id for n in kept],
            [n.id for n in layer if n.status == "pruned"], max(scores) if scores else None,
        )  # fmt: skip
        self.layers.append(report)
        self.log.log(
            "progress",
            f"✓ [Explorer - 第{depth}层] 候选 {len(layer)} 个, 保留 {len(kept)} 个, 剪枝 {len(report.pruned)} 个",
            {"kept": report.kept, "pruned": report.pruned, "best_score": report.best_score},
        )
        self.observer("layer_done", report.to_dict())


def _combine(evaluations: list[dict[str, Any]]) -> Evaluation:
    """Samples of one node's evaluation → one: the paper's label weights when every sample has a label."""
    labels = [e.get("label") for e in evaluations]
    known = [label for label in labels if label in game24.LABEL_WEIGHTS]
    if len(known) == len(labels):
        score = game24.score_from_labels(known)
    else:
        score = round(fmean(float(e["score"]) for e in evaluations), 2)
    reasoning = " | ".join(dict.fromkeys(str(e["reasoning"]) for e in evaluations))
    return Evaluation(score, round(fmean(float(e["confidence"]) for e in evaluations), 3), reasoning)
