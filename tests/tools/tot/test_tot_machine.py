"""The pure ToT state machine: id grammar, rules, round semantics, the end gate and the final report."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dominds.tools.tot import machine
from dominds.tools.tot.machine import CommitResult, NodeState, ProposedNode, Session, TotError
from dominds.tools.tot.sessions import final_report, progress

NOW = "2026-01-01T00:00:00.000+00:00"
D, V, X, OK, S = NodeState.DRILL, NodeState.VERIFY, NodeState.DEAD, NodeState.VALID, NodeState.SPEC


def node(node_id: str, parent: str | None = None) -> ProposedNode:
    return ProposedNode(node_id, parent, f"title {node_id}", f"plan {node_id}")


def grow(session: Session, batch: dict[str, tuple[str | None, NodeState]]) -> dict[str, object]:
    """Propose then commit ``{id: (parent, state)}`` as one batch."""
    machine.propose(session, [node(i, parent) for i, (parent, _) in batch.items()], NOW)
    return machine.commit(session, [CommitResult(i, state, f"found {i}") for i, (_, state) in batch.items()], NOW)


def rejected(call: Callable[..., object], *args: object) -> list[str]:
    with pytest.raises(TotError) as info:
        call(*args)
    return [v.code for v in info.value.violations]


@pytest.fixture
def session() -> Session:
    return machine.new_session("s1", "why is the build slow?", 2, NOW)


@pytest.fixture
def drilled(session: Session) -> Session:
    """R1.A DRILL, R1.B DEAD, R2.A1 DRILL, R2.A2 DEAD: round 2, R2.A1 wants children."""
    grow(session, {"R1.A": (None, D), "R1.B": (None, X)})
    grow(session, {"R2.A1": ("R1.A", D), "R2.A2": ("R1.A", X)})
    return session


@pytest.mark.parametrize(
    ("node_id", "parent"),
    [("R1.C", None), ("R1.Zeta9", None), ("R2.A3", "R1.A"), ("R2.A10", "R1.A"), ("R3.A1a", "R2.A1"), ("R3.A1bx", "R2.A1")],
)
def test_right_ids_are_accepted(drilled: Session, node_id: str, parent: str | None) -> None:
    result = machine.propose(drilled, [node(node_id, parent)], NOW)
    assert result["approved"] == [node_id]


@pytest.mark.parametrize(
    ("node_id", "parent"),
    [
        ("R1.A.1", None),  # the seed's WRONG list
        ("R1.A.child", None),
        ("R2-A1", "R1.A"),
        ("R0.A", None),
        ("R01.A", None),
        ("r1.a", None),
        ("R1.", None),
        ("R2.B1", "R1.A"),  # suffix does not extend the parent's (the origin accepted this)
        ("R2.A", "R1.A"),  # suffix not longer than the parent's
        ("R3.A9", "R1.A"),  # round skips one
        ("R1.A5", "R1.A"),  # same round as the parent
        ("R2.Q", None),  # a root outside round 1
    ],
)
def test_malformed_ids_and_broken_lineage_are_invalid_id_format(drilled: Session, node_id: str, parent: str | None) -> None:
    assert "INVALID_ID_FORMAT" in rejected(machine.propose, drilled, [node(node_id, parent)], NOW)
    assert not drilled.pending


def test_a_rejected_batch_stores_nothing_and_reports_every_violation(session: Session) -> None:
    batch = [node("R1.A"), node("R1.B.1"), node("R2.C1", "R1.C"), node("R1.A")]
    codes = rejected(machine.propose, session, batch, NOW)
    assert codes == ["INVALID_ID_FORMAT", "PARENT_NOT_FOUND", "DUPLICATE_IN_BATCH"]
    assert session.pending == {}


def test_two_phase_commit_needs_a_proposal_and_allows_a_partial_commit(session: Session) -> None:
    assert rejected(machine.commit, session, [CommitResult("R1.A", D, "x")], NOW) == ["NOT_PROPOSED"]
    machine.propose(session, [node("R1.A"), node("R1.B")], NOW)
    result = machine.commit(session, [CommitResult("R1.A", D, "lead")], NOW)
    assert result["committed"] == ["R1.A"] and list(session.pending) == ["R1.B"]
    assert rejected(machine.commit, session, [CommitResult("R1.A", D, "again")], NOW) == ["DUPLICATE_ID"]
    assert rejected(machine.propose, session, [node("R1.A")], NOW) == ["DUPLICATE_ID"]


def test_a_pending_parent_is_not_found(session: Session) -> None:
    machine.propose(session, [node("R1.A"), node("R1.B")], NOW)
    with pytest.raises(TotError) as info:
        machine.propose(session, [node("R2.A1", "R1.A")], NOW)
    assert info.value.code == "PARENT_NOT_FOUND"
    assert "proposed but not committed" in info.value.violations[0].message
    assert info.value.hint == machine.HINTS["PARENT_NOT_FOUND"]


@pytest.mark.parametrize("terminal", [X, OK, S])
def test_terminal_parents_take_no_children_until_reclassified(session: Session, terminal: NodeState) -> None:
    grow(session, {"R1.A": (None, terminal), "R1.B": (None, D)})
    assert rejected(machine.propose, session, [node("R2.A1", "R1.A")], NOW) == ["TERMINAL_PARENT"]
    result = machine.reclassify(session, "R1.A", V, NOW)
    assert (result["previous"], result["state"]) == (terminal.value, "VERIFY")
    assert machine.propose(session, [node("R2.A1", "R1.A")], NOW)["approved"] == ["R2.A1"]


def test_a_parent_made_terminal_after_the_proposal_blocks_the_commit(session: Session) -> None:
    grow(session, {"R1.A": (None, D), "R1.B": (None, D)})
    machine.propose(session, [node("R2.B1", "R1.B")], NOW)
    # R1.A has no children, so it may become terminal; R1.B has a pending child, so it may not
    machine.reclassify(session, "R1.A", X, NOW)
    assert rejected(machine.reclassify, session, "R1.B", X, NOW) == ["HAS_CHILDREN"]
    session.nodes["R1.B"].state = X  # as if another process had changed it
    assert rejected(machine.commit, session, [CommitResult("R2.B1", D, "x")], NOW) == ["TERMINAL_PARENT"]


def test_insufficient_roots_counts_committed_pending_and_batch_roots() -> None:
    session = machine.new_session("s", "q", 3, NOW)
    assert rejected(machine.propose, session, [node("R1.A"), node("R1.B")], NOW) == ["INSUFFICIENT_ROOTS"]
    machine.propose(session, [node("R1.A"), node("R1.B"), node("R1.C")], NOW)
    machine.commit(session, [CommitResult("R1.A", D, "lead")], NOW)
    # R1.B and R1.C are still pending, so round 1 has its three roots and children may follow
    assert machine.propose(session, [node("R2.A1", "R1.A")], NOW)["approved"] == ["R2.A1"]


def test_the_largest_min_roots_fits_in_one_batch() -> None:
    """The origin deadlocked for minRoots > 5; the range stops at the batch size instead."""
    session = machine.new_session("s", "q", machine.MIN_ROOTS_RANGE[1], NOW)
    roots: dict[str, tuple[str | None, NodeState]] = {f"R1.{c}": (None, X) for c in "ABCDE"}
    assert len(roots) == machine.MAX_BATCH
    assert grow(session, roots)["committed"] == list(roots)


def test_batches_hold_at_most_five_nodes_in_both_phases(session: Session) -> None:
    six = [node(f"R1.{c}") for c in "ABCDEF"]
    assert rejected(machine.propose, session, six, NOW) == ["BATCH_OVERFLOW"]
    machine.propose(session, six[:5], NOW)
    machine.propose(session, six[5:], NOW)
    results = [CommitResult(n.id, X, "no") for n in six]
    assert rejected(machine.commit, session, results, NOW) == ["BATCH_OVERFLOW"]


def test_all_terminal_before_round_three_requires_recovery_by_lateral_roots(session: Session) -> None:
    grow(session, {"R1.A": (None, X), "R1.B": (None, X)})
    assert machine.recovery_required(session) and progress(session)["next"].startswith("RECOVERY_REQUIRED")
    assert rejected(machine.end, session, NOW) == ["RECOVERY_REQUIRED"]
    assert rejected(machine.propose, session, [node("R2.A1", "R1.A")], NOW) == ["TERMINAL_PARENT", "RECOVERY_REQUIRED"]
    grow(session, {"R1.F": (None, D)})  # a lateral root is still round 1
    assert machine.current_round(session) == 1 and not machine.recovery_required(session)
    grow(session, {"R2.F1": ("R1.F", V), "R2.F2": ("R1.F", X)})
    grow(session, {"R3.F1a": ("R2.F1", OK)})
    machine.end(session, NOW)
    assert final_report(session)["validPaths"][0]["path"] == ["R1.F", "R2.F1", "R3.F1a"]


def test_closed_leaves_under_an_open_drill_node_also_require_recovery(drilled: Session) -> None:
    machine.reclassify(drilled, "R2.A1", X, NOW)  # every leaf is terminal, R1.A is DRILL with its 2 children
    assert machine.recovery_required(drilled)
    assert machine.propose(drilled, [node("R2.A3", "R1.A")], NOW)["approved"] == ["R2.A3"]  # a third child


def test_children_quota_per_state(session: Session) -> None:
    grow(session, {"R1.A": (None, D), "R1.B": (None, V), "R1.C": (None, X)})
    needs = {n["nodeId"]: n["required"] - n["children"] for n in machine.children_needed(session)}
    assert needs == {"R1.A": 2, "R1.B": 1}
    grow(session, {"R2.A1": ("R1.A", OK), "R2.B1": ("R1.B", D)})
    needs = {n["nodeId"]: n["required"] - n["children"] for n in machine.children_needed(session)}
    assert needs == {"R1.A": 1, "R2.B1": 2}


def test_end_gate_needs_round_three_children_and_no_pending(drilled: Session) -> None:
    assert rejected(machine.end, drilled, NOW) == ["MIN_ROUNDS", "CHILDREN_MISSING"]
    grow(drilled, {"R3.A1a": ("R2.A1", OK)})
    with pytest.raises(TotError) as info:
        machine.end(drilled, NOW)
    assert [(v.code, v.node_id) for v in info.value.violations] == [("CHILDREN_MISSING", "R2.A1")]
    machine.propose(drilled, [node("R3.A1b", "R2.A1")], NOW)
    assert rejected(machine.end, drilled, NOW) == ["PROPOSALS_PENDING", "CHILDREN_MISSING"]
    machine.commit(drilled, [CommitResult("R3.A1b", S, "maybe")], NOW)
    assert progress(drilled)["canEnd"] is True
    machine.end(drilled, NOW)
    assert drilled.ended_at == NOW


def test_an_ended_session_is_read_only_and_ending_again_changes_nothing(drilled: Session) -> None:
    grow(drilled, {"R3.A1a": ("R2.A1", OK), "R3.A1b": ("R2.A1", X)})
    machine.end(drilled, NOW)
    machine.end(drilled, "later")
    assert drilled.ended_at == NOW
    assert rejected(machine.propose, drilled, [node("R1.Z")], NOW) == ["SESSION_ENDED"]
    assert rejected(machine.reclassify, drilled, "R1.A", V, NOW) == ["SESSION_ENDED"]


def test_reclassify_unknown_node_and_terminal_with_children(drilled: Session) -> None:
    assert rejected(machine.reclassify, drilled, "R9.Q", D, NOW) == ["NODE_NOT_FOUND"]
    assert rejected(machine.reclassify, drilled, "R1.A", OK, NOW) == ["HAS_CHILDREN"]
    assert machine.reclassify(drilled, "R1.A", V, NOW)["state"] == "VERIFY"  # open to open is fine


def test_final_report_has_valid_paths_theories_tree_and_markdown(drilled: Session) -> None:
    grow(drilled, {"R3.A1a": ("R2.A1", OK), "R3.A1b": ("R2.A1", S)})
    machine.end(drilled, NOW)
    report = final_report(drilled)
    assert report["status"] == "ENDED" and report["endedAt"] == NOW
    assert report["validPaths"] == [
        {"path": ["R1.A", "R2.A1", "R3.A1a"], "titles": ["title R1.A", "title R2.A1", "title R3.A1a"], "findings": "found R3.A1a"}
    ]
    assert report["theories"] == [{"nodeId": "R3.A1b", "title": "title R3.A1b", "findings": "found R3.A1b"}]
    assert (report["rounds"], report["totalNodes"], report["deadEnds"]) == (3, 6, 2)
    assert [r["id"] for r in report["tree"]] == ["R1.A", "R1.B"]
    assert [c["id"] for c in report["tree"][0]["children"][0]["children"]] == ["R3.A1a", "R3.A1b"]
    md = report["markdown"]
    assert "1. R1.A title R1.A -> R2.A1 title R2.A1 -> R3.A1a title R3.A1a" in md
    assert "    - **R3.A1b** `SPEC` title R3.A1b: found R3.A1b" in md


def test_every_error_carries_a_one_line_hint() -> None:
    for code, hint in machine.HINTS.items():
        error = TotError.of(code, "something happened.")
        assert (error.code, error.hint) == (code, hint)
        assert hint and "\n" not in hint
        assert f"{code}: something happened. Fix: {hint}" in str(error)


def test_session_record_round_trips_through_its_camel_case_json(drilled: Session) -> None:
    data = drilled.model_dump(mode="json", by_alias=True)
    assert data["version"] == machine.FORMAT_VERSION
    assert {"sessionId", "minRoots", "createdAt"} <= data.keys()
    assert "plannedAction" in data["nodes"]["R1.A"]
    assert Session.model_validate(data) == drilled
