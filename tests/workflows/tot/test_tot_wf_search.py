"""BFS and DFS on scripted candidate and score tables: frontier per layer, pruned sets, early stops,
backtrack counts, guards, and what each generation/evaluation strategy costs in calls."""

from __future__ import annotations

from dataclasses import replace

from tot_wf_kit import TableBackend, explore

from dominds.workflows.tot.settings import SearchSettings

BFS = SearchSettings("BFS", 3, 2, 5.0, 3, "sequential_proposal", "independent_scoring")
DFS = SearchSettings("DFS", 3, 3, 5.0, 4, "sequential_proposal", "independent_scoring")


def pruned(tree, reason: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {n.content for n in tree.nodes.values() if n.status == "pruned" and n.metadata["prune_reason"] == reason}


def contents(tree, ids: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    return [tree.nodes[i].content for i in ids]


BFS_TABLE = TableBackend(
    candidates={
        "P": ["A", "B", "C"],
        "A": ["A1", "A2", "A3"],
        "B": ["B1", "B2", "B3"],
        "A2": ["A2x"],
        "B1": ["B1x"],
    },
    scores={"A": 8, "B": 6, "C": 3, "A1": 7, "A2": 9, "A3": 4.5, "B1": 9, "B2": 5, "B3": 2, "A2x": 9.6, "B1x": 6},
)


async def test_bfs_keeps_the_top_b_per_layer_prunes_below_the_threshold_and_stops_on_a_solution() -> None:
    outcome, tree = await explore(replace(BFS_TABLE, requests=[]), BFS)
    kept = [contents(tree, layer.kept) for layer in outcome.layers]
    assert kept == [["A", "B"], ["A2", "B1"], ["A2x", "B1x"]], "ties (A2, B1 at 9) keep generation order"
    assert pruned(tree, "below_threshold") == {"C", "A3", "B3"}
    assert pruned(tree, "beam") == {"A1", "B2"}
    assert outcome.solved and contents(tree, tree.search_state.best_path) == ["P", "A", "A2", "A2x"]
    assert tree.nodes[tree.search_state.best_path[-1]].status == "terminal"
    assert outcome.stats() == {"total_nodes": 12, "total_backtracks": 0, "llm_calls": 5 + 11}
    assert [n.id for n in outcome.best_path] == ["root", "node_1", "node_1_2", "node_1_2_1"], "origin id convention"


async def test_bfs_stops_early_at_a_terminal_node_scoring_at_least_9_5() -> None:
    table = replace(BFS_TABLE, requests=[], terminal={"A2"}, scores={**BFS_TABLE.scores, "A2": 9.7})
    outcome, tree = await explore(table, replace(BFS, max_depth=4))
    assert len(outcome.layers) == 2 and outcome.solved
    assert contents(tree, tree.search_state.best_path) == ["P", "A", "A2"]
    assert not any(r["payload"]["parent_node"]["content"] == "A2" for r in table.of_type("generate_thoughts"))


async def test_bfs_stops_when_every_kept_node_scores_below_4_and_reports_an_exhausted_search() -> None:
    table = TableBackend({"P": ["A", "B"], "A": ["A1"]}, {"A": 3, "B": 2, "A1": 3})
    outcome, _ = await explore(table, replace(BFS, pruning_threshold=0.0))
    assert len(outcome.layers) == 1 and not outcome.solved and outcome.error is None
    assert any("4.0" in w for w in outcome.warnings)
    exhausted, tree = await explore(replace(table, requests=[]), BFS)  # threshold 5: nothing survives layer 1
    assert exhausted.error is not None and exhausted.error.code == "SEARCH_EXHAUSTED"
    assert pruned(tree, "below_threshold") == {"A", "B"}


async def test_dfs_backtracks_best_first_with_at_most_3_alternatives_per_parent() -> None:
    table = TableBackend(
        candidates={"P": ["X", "Y", "Z", "W"], "X": ["X1", "X2"], "Y": ["Y1"], "Y1": ["Y1a"], "W": ["W1"], "W1": ["W1a"]},
        scores={"X": 8, "Y": 7, "Z": 2, "W": 6, "X1": 4, "X2": 3, "Y1": 7, "Y1a": 8, "W1": 9, "W1a": 9.8},
    )
    outcome, tree = await explore(table, replace(DFS, branching_factor=5))  # b is capped at the origin's 3
    expanded = [r["payload"]["parent_node"]["content"] for r in table.of_type("generate_thoughts")]
    assert expanded == ["P", "X", "Y", "Y1", "W", "W1"]
    # X1, X2 (pruned), X (exhausted), Y1a (leaf below 9.5), Y1, Y (exhausted) = 6 abandoned alternatives
    assert outcome.total_backtracks == 6
    assert outcome.solved and contents(tree, tree.search_state.best_path) == ["P", "W", "W1", "W1a"]
    assert pruned(tree, "below_threshold") == {"Z", "X1", "X2"}
    assert tree.nodes[tree.search_state.best_path[-1]].status == "terminal"


async def test_dfs_tries_only_b_alternatives_and_reports_exhaustion() -> None:
    table = TableBackend({"P": ["A", "B", "C"], "A": ["A1"], "B": ["B1"]}, {"A": 8, "B": 7, "C": 6, "A1": 1, "B1": 2})
    outcome, tree = await explore(table, replace(DFS, branching_factor=2))
    assert pruned(tree, "alternatives_limit") == {"C"}
    assert outcome.total_backtracks == 4  # A1, A, B1, B
    assert outcome.error is not None and outcome.error.code == "SEARCH_EXHAUSTED" and not outcome.solved


async def test_a_thought_repeating_its_path_is_pruned_as_a_cycle() -> None:
    table = TableBackend({"P": ["A"], "A": ["P", "A1"]}, {"A": 8, "A1": 7})
    outcome, tree = await explore(table, replace(BFS, max_depth=2))
    assert pruned(tree, "cycle") == {"P"}
    evaluated = [c["content"] for r in table.of_type("evaluate_thoughts") for c in r["payload"]["candidates"]]
    assert "P" not in evaluated and any("循环" in w for w in outcome.warnings)


async def test_generation_strategies_cost_k_calls_or_one() -> None:
    sampling = TableBackend({"P": ["A", "B", "A"]}, {"A": 8, "B": 7})
    outcome, tree = await explore(sampling, replace(BFS, max_depth=1, generation_strategy="independent_sampling"))
    requests = sampling.of_type("generate_thoughts")
    assert [r["payload"]["num_candidates"] for r in requests] == [1, 1, 1]
    assert sorted(n.content for n in tree.nodes.values() if n.depth == 1) == ["A", "B"], "a duplicate sample is one candidate"
    proposal = TableBackend({"P": ["A", "B", "C"]}, {"A": 8, "B": 7, "C": 6})
    await explore(proposal, replace(BFS, max_depth=1))
    assert [r["payload"]["num_candidates"] for r in proposal.of_type("generate_thoughts")] == [3]


async def test_evaluation_strategies_cost_one_call_per_candidate_or_per_layer() -> None:
    scoring = replace(BFS_TABLE, requests=[])
    await explore(scoring, replace(BFS, max_depth=2))
    assert [len(r["payload"]["candidates"]) for r in scoring.of_type("evaluate_thoughts")] == [1] * 9
    voting = replace(BFS_TABLE, requests=[])
    await explore(voting, replace(BFS, max_depth=2, evaluation_strategy="comparative_voting"))
    assert [len(r["payload"]["candidates"]) for r in voting.of_type("evaluate_thoughts")] == [3, 6]


async def test_a_failed_proposal_is_retried_with_fewer_candidates_then_skipped() -> None:
    table = TableBackend({"P": ["A", "B", "C"]}, {"A": 8, "B": 7, "C": 6}, fail_generation_for={"P": 1})
    _, tree = await explore(table, replace(BFS, max_depth=1))
    assert [r["payload"]["num_candidates"] for r in table.of_type("generate_thoughts")] == [3, 1]
    assert [n.content for n in tree.nodes.values() if n.depth == 1] == ["A"]
    failing = TableBackend({"P": ["A"]}, {"A": 8}, fail_generation_for={"P": 2})
    outcome, _ = await explore(failing, replace(BFS, max_depth=1))
    assert outcome.error is not None and outcome.error.code == "SEARCH_EXHAUSTED"


async def test_pruning_suggestions_count_only_when_the_evaluator_is_confident() -> None:
    table = TableBackend({"P": ["A", "B"]}, {"A": 8, "B": 7}, confidence={"A": 0.9, "B": 0.5}, suggest={"A", "B"})
    _, tree = await explore(table, replace(BFS, max_depth=1))
    assert pruned(tree, "evaluator_suggestion") == {"A"}
    assert tree.search_state.best_path == ["root", "node_2"]


async def test_evaluation_samples_are_averaged() -> None:
    class Alternating(TableBackend):
        async def answer(self, request, correction):  # type: ignore[no-untyped-def]
            if request["type"] == "evaluate_thoughts":  # 6 on odd calls, 8 on even ones
                self.scores = {"A": 6.0 if len(self.of_type("evaluate_thoughts")) % 2 == 0 else 8.0}
            return await super().answer(request, correction)

    table = Alternating({"P": ["A"]}, {"A": 0})
    _, tree = await explore(table, replace(BFS, max_depth=1, evaluation_samples=2))
    assert len(table.of_type("evaluate_thoughts")) == 2 and tree.nodes["node_1"].score == 7.0


async def test_the_tree_stops_growing_at_max_nodes() -> None:
    table = TableBackend({"P": ["A", "B"], "A": ["A1", "A2"], "B": ["B1"]}, {"A": 8, "B": 7, "A1": 7, "A2": 6, "B1": 6})
    outcome, tree = await explore(table, replace(DFS, max_nodes=3))
    assert len(tree.nodes) == 3 and len(table.of_type("generate_thoughts")) == 1
    assert sum("上限" in w for w in outcome.warnings) == 1
