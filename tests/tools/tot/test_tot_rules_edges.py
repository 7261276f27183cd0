"""Edges of the ToT rules (``tools/tot/machine.py``) the module-wide mutation sample (issue 38, round 3)
left untested: a rejection's JSON (what the tool returns to the model) and recovery at round 3 exactly.
"""

from __future__ import annotations

import pytest

from dominds.tools.tot import machine
from dominds.tools.tot.machine import CommitResult, NodeState, ProposedNode, Session, TotError

NOW = "2026-01-01T00:00:00.000+00:00"


def _grow(session: Session, batch: dict[str, tuple[str | None, NodeState]]) -> None:
    machine.propose(session, [ProposedNode(i, parent, f"title {i}", f"plan {i}") for i, (parent, _) in batch.items()], NOW)
    machine.commit(session, [CommitResult(i, state, f"found {i}") for i, (_, state) in batch.items()], NOW)


def test_a_rejection_is_returned_as_rejected_with_every_violation() -> None:
    session = machine.new_session("s1", "why?", 2, NOW)
    with pytest.raises(TotError) as info:
        machine.propose(session, [ProposedNode("R1.A.1", None, "t", "p"), ProposedNode("R2.C1", "R1.C", "t", "p")], NOW)
    payload = info.value.to_json()
    assert payload["status"] == "REJECTED"
    assert [e["code"] for e in payload["errors"]] == ["INVALID_ID_FORMAT", "PARENT_NOT_FOUND", "INSUFFICIENT_ROOTS"]
    assert payload["errors"][0] == info.value.violations[0].to_json() and payload["errors"][0]["hint"]


def test_every_branch_closed_in_round_three_is_an_end_not_a_recovery() -> None:
    """``recovery_required`` is for a tree stuck *before* round 3 (``<``, not ``<=``): closed at round 3 it
    may end."""
    session = machine.new_session("s1", "why?", 2, NOW)
    _grow(session, {"R1.A": (None, NodeState.DRILL), "R1.B": (None, NodeState.DEAD)})
    _grow(session, {"R2.A1": ("R1.A", NodeState.VERIFY), "R2.A2": ("R1.A", NodeState.DEAD)})
    _grow(session, {"R3.A1a": ("R2.A1", NodeState.VALID)})
    assert machine.current_round(session) == 3
    assert not machine.recovery_required(session)
    machine.end(session, NOW)
    assert session.ended_at == NOW


def test_one_node_committed_twice_in_a_batch_is_rejected_and_nothing_committed() -> None:
    """Without the duplicate check the second result popped a proposal already taken: a ``KeyError``
    halfway through the batch, the first result committed."""
    session = machine.new_session("s1", "why?", 2, NOW)
    machine.propose(session, [ProposedNode("R1.A", None, "t", "p"), ProposedNode("R1.B", None, "t", "p")], NOW)
    twice = [CommitResult("R1.A", NodeState.DRILL, "f"), CommitResult("R1.A", NodeState.DEAD, "f")]
    with pytest.raises(TotError) as info:
        machine.commit(session, twice, NOW)
    assert [v.code for v in info.value.violations] == ["DUPLICATE_IN_BATCH"]
    assert session.nodes == {} and sorted(session.pending) == ["R1.A", "R1.B"]


def test_reclassifying_a_node_only_proposed_says_to_commit_it_first() -> None:
    session = machine.new_session("s1", "why?", 2, NOW)
    machine.propose(session, [ProposedNode("R1.A", None, "t", "p"), ProposedNode("R1.B", None, "t", "p")], NOW)
    with pytest.raises(TotError) as info:
        machine.reclassify(session, "R1.A", NodeState.DEAD, NOW)
    assert info.value.code == "NODE_NOT_FOUND" and "only proposed; tot_commit it" in info.value.violations[0].message
    with pytest.raises(TotError) as never:
        machine.reclassify(session, "R1.Z", NodeState.DEAD, NOW)
    assert "only proposed" not in never.value.violations[0].message
