"""The host's decision rules (seed §5, §7.2, §9.4, §10.3) as one pure function, and what feeds it.

Precedence, first match wins (docs/debate.md explains each choice against the seed and the origin):

1. consensus > 0.90 → ``converge`` (§5.1). Checked before the round limit: a debate that agreed in its
   last round converged; the origin says ``terminate`` there.
2. round ≥ max rounds, or the run's token budget is spent → ``terminate`` with §7.2's ``force_summary``.
3. consensus stable (|Δ| ≤ 0.05) over the last two rounds → ``converge`` early (§9.4), with the
   disagreement-version summary when consensus is not high.
4. consensus ≤ 0.70 → ``force_opposition`` (§5.3), **in round 1 too** (the origin waits for round 2).
5. otherwise ``continue`` (§5.2).

Stubborn agents (§5.4: self-similarity > 0.98 in each of the last two rounds) never change the action;
they add an ``update_command`` for that agent when the debate goes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dominds.workflows.debate.protocol import HostDecision

STUBBORN_REQUIREMENT = (
    "You must do at least one of: change a key assumption, lower your confidence, "
    "or point out a flaw in the other side's reasoning."
)
DEVILS_ADVOCATE_REQUIREMENT = "Argue only from the opposing side; do not reuse earlier arguments."
DISAGREEMENT_SUMMARY = (
    "Write the disagreement version of the conclusion: what both sides agree on, where and why they "
    "still differ, and what the user should decide or check."
)
UNCERTAINTY_SUMMARY = "List the remaining uncertainties and the worst case."


@dataclass(frozen=True)
class Thresholds:
    """The seed's numbers. None of them is calibrated (docs/debate.md, "Known limits")."""

    converge_above: float = 0.90
    oppose_at_or_below: float = 0.70
    stubborn_above: float = 0.98
    stubborn_rounds: int = 2
    stable_delta: float = 0.05
    """Early stop when every round-to-round change in the window is at most this (§9.4 "no significant change")."""
    stable_rounds: int = 2
    report_high_above: float = 0.85
    report_medium_above: float = 0.70


@dataclass(frozen=True)
class HostInputs:
    """Everything a decision depends on; the decision table tests enumerate these."""

    round: int
    max_rounds: int
    consensus: float
    trend: Sequence[float]
    """Consensus per completed round, this round's last."""
    stubborn: Sequence[str] = ()
    focus: Sequence[str] = ()
    """Points the next round must address (the Critic's high-priority issues)."""
    budget_exhausted: bool = False


def consensus_is_stable(trend: Sequence[float], thresholds: Thresholds = Thresholds()) -> bool:
    window = list(trend[-(thresholds.stable_rounds + 1) :])
    if len(window) < thresholds.stable_rounds + 1:
        return False
    return all(round(abs(b - a), 4) <= thresholds.stable_delta for a, b in zip(window, window[1:], strict=False))


def decide(inputs: HostInputs, thresholds: Thresholds = Thresholds()) -> HostDecision:
    c, t = inputs.consensus, thresholds
    if c > t.converge_above:
        return HostDecision(
            "converge",
            f"consensus {c:.2f} > {t.converge_above:.2f}",
            ["reporter"],
            must_address=["remaining uncertainties", "worst case"],
            instructions={"to_all_agents": UNCERTAINTY_SUMMARY, "next_step": "reporter_summary"},
        )
    if inputs.round >= inputs.max_rounds or inputs.budget_exhausted:
        why = (
            f"round {inputs.round} reached the limit of {inputs.max_rounds} rounds"
            if inputs.round >= inputs.max_rounds
            else "the run's token budget is spent"
        )
        return HostDecision(
            "terminate",
            f"{why} without consensus (consensus {c:.2f})",
            ["reporter"],
            instructions={
                "status": "max_rounds_reached" if inputs.round >= inputs.max_rounds else "token_budget_reached",
                "action": "force_summary",
                "reporter_instruction": DISAGREEMENT_SUMMARY,
            },
        )
    if consensus_is_stable(inputs.trend, t):
        recent = ", ".join(f"{x:.2f}" for x in inputs.trend[-(t.stable_rounds + 1) :])
        return HostDecision(
            "converge",
            f"consensus stopped moving ({recent}): early stop",
            ["reporter"],
            instructions={"to_all_agents": UNCERTAINTY_SUMMARY, "next_step": "reporter_summary",
                          "reporter_instruction": DISAGREEMENT_SUMMARY},
            early_stop=True,
        )
    commands = [update_command(agent, t) for agent in inputs.stubborn]
    if c <= t.oppose_at_or_below:
        return HostDecision(
            "force_opposition",
            f"consensus {c:.2f} <= {t.oppose_at_or_below:.2f}: the critic argues the opposing side",
            ["critic", "planner"],
            avoid=["repeating earlier arguments"],
            instructions={"role": "devils_advocate", "requirement": DEVILS_ADVOCATE_REQUIREMENT, "target": "planner"},
            commands=commands,
        )
    return HostDecision(
        "continue",
        f"consensus {c:.2f} is between {t.oppose_at_or_below:.2f} and {t.converge_above:.2f}",
        ["planner", "critic"],
        must_address=list(inputs.focus),
        avoid=["repeating earlier arguments"],
        instructions={
            "to_agents": ["planner", "critic"],
            "focus_on": list(inputs.focus),
            "rounds_remaining": inputs.max_rounds - inputs.round,
        },
        commands=commands,
    )


def update_command(agent: str, thresholds: Thresholds = Thresholds()) -> dict[str, Any]:
    return {
        "action": "update_command",
        "target_agent": agent,
        "reason": f"self_similarity > {thresholds.stubborn_above} for {thresholds.stubborn_rounds} rounds in a row",
        "requirement": STUBBORN_REQUIREMENT,
    }


def stubborn_agents(
    self_similarity: Mapping[str, Sequence[float | None]], thresholds: Thresholds = Thresholds()
) -> list[str]:
    """Agents whose last ``stubborn_rounds`` self-similarities all exceed the threshold.

    ``None`` marks a round where the agent's output was reused (timeout) or it had no earlier position:
    an unchanged *reused* output says nothing about the agent, so it breaks the streak.
    """
    flagged = []
    for agent, history in self_similarity.items():
        window = list(history[-thresholds.stubborn_rounds :])
        if len(window) == thresholds.stubborn_rounds and all(
            v is not None and v > thresholds.stubborn_above for v in window
        ):
            flagged.append(agent)
    return flagged


def consensus_label(consensus: float, thresholds: Thresholds = Thresholds()) -> str:
    """The reporter's word for the final consensus (origin thresholds: > 0.85 high, > 0.70 medium)."""
    if consensus > thresholds.report_high_above:
        return "high"
    return "medium" if consensus > thresholds.report_medium_above else "low"


def trend_label(trend: Sequence[float], thresholds: Thresholds = Thresholds()) -> str:
    if len(trend) < 2:
        return "insufficient data"
    delta = round(trend[-1] - trend[-2], 4)
    if delta > thresholds.stable_delta:
        return "rising"
    return "falling" if delta < -thresholds.stable_delta else "stable"


def critic_focus(critique: Any, limit: int = 3) -> list[str]:
    """The Critic's high-priority suggestion issues, then its high-severity risks (at most ``limit``)."""
    if not isinstance(critique, dict):
        return []
    points: list[str] = []
    for item in critique.get("suggestions") or []:
        if isinstance(item, dict) and str(item.get("priority", "")).lower() == "high" and item.get("issue"):
            points.append(str(item["issue"]))
    for item in critique.get("risks") or []:
        if isinstance(item, dict) and str(item.get("severity", "")).lower() == "high" and item.get("risk"):
            points.append(str(item["risk"]))
    return list(dict.fromkeys(points))[:limit]
