"""The host's decision rules: a table over round × consensus × stubborn flags × max rounds, at the thresholds."""

from __future__ import annotations

import pytest

from dominds.workflows.debate.host import (
    HostInputs,
    consensus_is_stable,
    consensus_label,
    critic_focus,
    decide,
    stubborn_agents,
    trend_label,
)

# (round, max_rounds, consensus, earlier trend, stubborn, budget spent) → (action, next_agents, early_stop)
TABLE = [
    # §5.1 converge only strictly above 0.90, in any round, even the last one (the origin would terminate)
    (1, 5, 0.9001, [], (), False, ("converge", ["reporter"], False)),
    (1, 5, 0.90, [], (), False, ("continue", ["planner", "critic"], False)),
    (5, 5, 0.95, [0.5, 0.8, 0.6, 0.8], (), False, ("converge", ["reporter"], False)),
    (3, 5, 0.99, [0.5, 0.7], ("planner",), False, ("converge", ["reporter"], False)),
    # §5.3 force_opposition at or below 0.70, round 1 included (the origin waits for round 2)
    (1, 5, 0.70, [], (), False, ("force_opposition", ["critic", "planner"], False)),
    (1, 5, 0.7001, [], (), False, ("continue", ["planner", "critic"], False)),
    (2, 5, 0.10, [0.9], (), False, ("force_opposition", ["critic", "planner"], False)),
    # §5.2 continue in between
    (2, 5, 0.85, [0.6], (), False, ("continue", ["planner", "critic"], False)),
    # §7.2 / §10.3 terminate at the round limit when not converged
    (5, 5, 0.90, [0.5, 0.8, 0.6, 0.8], (), False, ("terminate", ["reporter"], False)),
    (5, 5, 0.20, [0.5, 0.8, 0.6, 0.8], ("critic",), False, ("terminate", ["reporter"], False)),
    (1, 1, 0.80, [], (), False, ("terminate", ["reporter"], False)),
    (4, 3, 0.80, [0.5, 0.6, 0.9], (), False, ("terminate", ["reporter"], False)),
    # the run's token budget ends it like the round limit
    (2, 5, 0.80, [0.5], (), True, ("terminate", ["reporter"], False)),
    (2, 5, 0.95, [0.5], (), True, ("converge", ["reporter"], False)),
    # §9.4 early stop: two round-to-round changes of at most 0.05
    (3, 5, 0.60, [0.60, 0.60], (), False, ("converge", ["reporter"], True)),
    (3, 5, 0.85, [0.80, 0.85], (), False, ("converge", ["reporter"], True)),
    (3, 5, 0.86, [0.79, 0.85], (), False, ("continue", ["planner", "critic"], False)),
    (2, 5, 0.60, [0.60], (), False, ("force_opposition", ["critic", "planner"], False)),
    # stubborn agents never change the action
    (3, 5, 0.80, [0.5, 0.6], ("planner",), False, ("continue", ["planner", "critic"], False)),
    (3, 5, 0.50, [0.9, 0.7], ("planner", "critic"), False, ("force_opposition", ["critic", "planner"], False)),
]


@pytest.mark.parametrize(("round_no", "max_rounds", "consensus", "earlier", "stubborn", "budget", "expected"), TABLE)
def test_decision_table(round_no, max_rounds, consensus, earlier, stubborn, budget, expected) -> None:  # type: ignore[no-untyped-def]
    decision = decide(HostInputs(round_no, max_rounds, consensus, [*earlier, consensus], stubborn, (), budget))
    assert (decision.action, decision.next_agents, decision.early_stop) == expected
    if decision.action in ("continue", "force_opposition"):
        assert [c["target_agent"] for c in decision.commands] == list(stubborn)
        assert all(c["action"] == "update_command" for c in decision.commands)
    else:
        assert decision.commands == [], "a debate that ends gets no update commands"


def test_each_action_carries_its_seed_instruction_block() -> None:
    converge = decide(HostInputs(2, 5, 0.95, [0.8, 0.95]))
    assert converge.instructions["next_step"] == "reporter_summary"
    assert converge.must_address == ["remaining uncertainties", "worst case"]
    oppose = decide(HostInputs(1, 5, 0.4, [0.4]))
    assert oppose.instructions == {
        "role": "devils_advocate",
        "requirement": oppose.instructions["requirement"],
        "target": "planner",
    }
    go_on = decide(HostInputs(3, 5, 0.8, [0.5, 0.6, 0.8], focus=("writing practice",)))
    assert go_on.instructions["rounds_remaining"] == 2 and go_on.must_address == ["writing practice"]
    stop = decide(HostInputs(5, 5, 0.5, [0.5, 0.8, 0.5, 0.8, 0.5]))
    assert stop.instructions["action"] == "force_summary" and stop.instructions["status"] == "max_rounds_reached"
    assert "disagreement" in stop.instructions["reporter_instruction"]
    budget = decide(HostInputs(2, 5, 0.8, [0.5, 0.8], budget_exhausted=True))
    assert budget.instructions["status"] == "token_budget_reached"


@pytest.mark.parametrize(
    ("series", "expected"),
    [
        ({"planner": [0.99, 0.99]}, ["planner"]),
        ({"planner": [0.99]}, []),  # one round is not a streak (round 3 is the earliest flag)
        ({"planner": [0.98, 0.99]}, []),  # strictly above 0.98
        ({"planner": [0.99, None]}, []),  # a reused output breaks the streak
        ({"planner": [0.5, 0.99, 0.999], "critic": [0.999, 0.97]}, ["planner"]),
        ({"planner": [], "critic": [0.99, 0.99, 0.99]}, ["critic"]),
    ],
)
def test_stubborn_needs_two_consecutive_rounds_above_the_threshold(series, expected) -> None:  # type: ignore[no-untyped-def]
    assert stubborn_agents(series) == expected


def test_stability_labels_and_focus() -> None:
    assert consensus_is_stable([0.5, 0.55, 0.6]) and not consensus_is_stable([0.5, 0.5501, 0.6])
    assert not consensus_is_stable([0.6, 0.6]), "two points are one change, not two rounds"
    assert [consensus_label(x) for x in (0.86, 0.85, 0.71, 0.70)] == ["high", "medium", "medium", "low"]
    assert [trend_label(t) for t in ([0.5], [0.5, 0.56], [0.5, 0.55], [0.6, 0.5])] == [
        "insufficient data", "rising", "stable", "falling"
    ]
    critique = {
        "suggestions": [{"issue": "A", "priority": "high"}, {"issue": "B", "priority": "low"}],
        "risks": [{"risk": "C", "severity": "HIGH"}, {"risk": "A", "severity": "high"}, {"risk": "D", "severity": "high"},
                  {"risk": "E", "severity": "high"}],
    }
    assert critic_focus(critique) == ["A", "C", "D"]
    assert critic_focus("not a dict") == []
