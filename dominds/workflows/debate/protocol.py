"""The seed's JSON records (§2 agent outputs, §8 position summary, §2.4 host decision) as typed values.

Agents answer in free-form JSON that a model may get partly wrong, so every ``from_json`` here is
lenient: wrong types become defaults, never exceptions. The host overrides what it knows better
than the model (``agent_id``, ``round``, ``output_type``, ``timestamp``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from dominds.workflows.debate.member_ids import HOST_MEMBER_ID as HOST_MEMBER_ID
from dominds.workflows.debate.member_ids import MEMBER_IDS as MEMBER_IDS
from dominds.workflows.debate.member_ids import Role as Role

Action = Literal["continue", "converge", "force_opposition", "terminate"]

ROLES: tuple[Role, ...] = ("planner", "critic", "reporter")
DEBATERS: tuple[Role, ...] = ("planner", "critic")
"""The roles whose positions are compared for consensus (the reporter only speaks at the end)."""
OUTPUT_TYPE: dict[str, str] = {"planner": "plan", "critic": "critique", "reporter": "report", "host": "control"}

WORKFLOW = "debate"


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ("" if value is None else str(value).strip())


def _text_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if not isinstance(value, list):
        return []
    return [_text(item) for item in value if _text(item)]


def _unit_float(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return min(1.0, max(0.0, number)) if number == number else default  # NaN → default


@dataclass
class PositionSummary:
    """§8: what an agent stands for this round, in a shape the host can compare."""

    conclusion: str
    """One-sentence conclusion."""
    key_reasons: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    confidence: float = 0.5
    """0..1; clamped when a model writes something else."""
    changes_from_last_round: dict[str, Any] | None = None
    """``{conclusion_changed, reasons_added, confidence_delta}``; filled by the host when the model omits it."""

    def comparison_text(self) -> str:
        # Only the content: shared labels ("Conclusion:") would raise every similarity, most of all Jaccard's,
        # and confidence is a number, not a position.
        return "\n".join([self.conclusion, "; ".join(self.key_reasons), "; ".join(self.assumptions)]).strip()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "conclusion": self.conclusion,
            "key_reasons": list(self.key_reasons),
            "assumptions": list(self.assumptions),
            "confidence": self.confidence,
        }
        if self.changes_from_last_round is not None:
            out["changes_from_last_round"] = dict(self.changes_from_last_round)
        return out

    @classmethod
    def from_json(cls, raw: Any) -> PositionSummary | None:
        if not isinstance(raw, dict) or not _text(raw.get("conclusion")):
            return None
        changes = raw.get("changes_from_last_round")
        return cls(
            conclusion=_text(raw.get("conclusion")),
            key_reasons=_text_list(raw.get("key_reasons")),
            assumptions=_text_list(raw.get("assumptions")),
            confidence=_unit_float(raw.get("confidence"), 0.5),
            changes_from_last_round=dict(changes) if isinstance(changes, dict) else None,
        )


def changes_between(previous: PositionSummary | None, current: PositionSummary) -> dict[str, Any]:
    """§8 ``changes_from_last_round`` computed from two positions (round 1: nothing changed)."""
    if previous is None:
        return {"conclusion_changed": False, "reasons_added": [], "confidence_delta": 0.0}
    return {
        "conclusion_changed": previous.conclusion.strip() != current.conclusion.strip(),
        "reasons_added": [r for r in current.key_reasons if r not in previous.key_reasons],
        "confidence_delta": round(current.confidence - previous.confidence, 4),
    }


@dataclass
class AgentOutput:
    """§2.1 base format of every agent output (the host's own too, with ``output_type: control``)."""

    agent_id: str
    round: int
    output_type: str
    content: str
    """User-visible text (Markdown for the reporter)."""
    metadata: dict[str, Any]
    """Structured part: ``position`` (§8) plus ``plan`` / ``critique`` / ``final_plan`` / ``decision``…"""
    timestamp: str
    fallback: str | None = None
    """Why this is not the agent's own parsed answer: ``unparsable_json``, ``reused_last_output``
    (timeout or failure, §7.1), ``no_answer``; ``None`` for a normal answer."""

    @property
    def position(self) -> PositionSummary | None:
        return PositionSummary.from_json(self.metadata.get("position"))

    def to_json(self) -> dict[str, Any]:
        out = {
            "agent_id": self.agent_id,
            "round": self.round,
            "output_type": self.output_type,
            "content": self.content,
            "metadata": self.metadata,
            "timestamp": self.timestamp,
        }
        if self.fallback is not None:
            out["fallback"] = self.fallback
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> AgentOutput:
        return cls(
            agent_id=_text(raw.get("agent_id")),
            round=int(raw.get("round") or 0),
            output_type=_text(raw.get("output_type")),
            content=_text(raw.get("content")),
            metadata=dict(raw.get("metadata") or {}),
            timestamp=_text(raw.get("timestamp")),
            fallback=raw.get("fallback"),
        )


@dataclass
class HostDecision:
    """§2.4 ``metadata.decision``, plus the §5 instruction block and the §5.4 update commands."""

    action: Action
    reason: str
    next_agents: list[str]
    must_address: list[str] = field(default_factory=list)
    avoid: list[str] = field(default_factory=list)
    instructions: dict[str, Any] = field(default_factory=dict)
    """The §5.1–5.3 block of this action (or §7.2's ``force_summary`` for ``terminate``)."""
    commands: list[dict[str, Any]] = field(default_factory=list)
    """§5.4 ``update_command`` entries, one per stubborn agent."""
    early_stop: bool = False
    """True when §9.4 (consensus stable for two rounds) ended the debate."""

    @property
    def ends_debate(self) -> bool:
        return self.action in ("converge", "terminate")

    def command_for(self, role: str) -> dict[str, Any] | None:
        return next((c for c in self.commands if c.get("target_agent") == role), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "reason": self.reason,
            "next_agents": list(self.next_agents),
            "constraints": {"must_address": list(self.must_address), "avoid": list(self.avoid)},
            "instructions": self.instructions,
            "commands": list(self.commands),
            "early_stop": self.early_stop,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> HostDecision:
        constraints = raw.get("constraints") or {}
        return cls(
            action=raw["action"],
            reason=_text(raw.get("reason")),
            next_agents=_text_list(raw.get("next_agents")),
            must_address=_text_list(constraints.get("must_address")),
            avoid=_text_list(constraints.get("avoid")),
            instructions=dict(raw.get("instructions") or {}),
            commands=list(raw.get("commands") or []),
            early_stop=bool(raw.get("early_stop")),
        )
