"""Turning a teammate's answer into a §2 record, with the §7 fallbacks when that is not possible.

The host trusts the model for content, never for bookkeeping: ``agent_id``, ``round``, ``output_type``
and ``timestamp`` are set here, and a missing ``changes_from_last_round`` is computed from the two
positions. Models also put ``position``/``plan``/``critique`` at the top level instead of under
``metadata``; both are accepted.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from dominds.ids import now_iso
from dominds.workflows.debate.jsonfix import extract_json_object
from dominds.workflows.debate.protocol import (
    OUTPUT_TYPE,
    AgentOutput,
    PositionSummary,
    Role,
    changes_between,
)

STRUCTURED_KEYS = ("position", "plan", "critique", "final_plan", "summary")
FALLBACK_CONFIDENCE = 0.5
_SENTENCE_END = re.compile(r"(?<=[。！？!?.])\s|[\n。！？]")


def first_sentence(text: str, limit: int = 200) -> str:
    stripped = text.strip().lstrip("#>-* ").strip()
    head = _SENTENCE_END.split(stripped, maxsplit=1)[0].strip() if stripped else ""
    return head[:limit]


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def parse_agent_output(
    role: Role, round_no: int, text: str, previous: AgentOutput | None, *, max_chars: int
) -> AgentOutput:
    """The §2 record in ``text``; a fallback record (``fallback="unparsable_json"``) when there is none."""
    data = extract_json_object(text)
    if data is None:
        return fallback_output(role, round_no, text, "unparsable_json", previous, max_chars=max_chars)
    raw_metadata = data.get("metadata")
    metadata: dict[str, Any] = dict(raw_metadata) if isinstance(raw_metadata, dict) else {}
    for key in STRUCTURED_KEYS:
        if key not in metadata and key in data:
            metadata[key] = data[key]
    raw_content = data.get("content")
    content = raw_content if isinstance(raw_content, str) else ""
    if role == "reporter":
        if not content.strip():
            return fallback_output(role, round_no, text, "unparsable_json", previous, max_chars=max_chars)
        return AgentOutput(role, round_no, OUTPUT_TYPE[role], clip(content.strip(), max_chars), metadata, now_iso())
    position = PositionSummary.from_json(metadata.get("position"))
    if position is None:
        conclusion = first_sentence(content)
        if not conclusion:
            return fallback_output(role, round_no, text, "unparsable_json", previous, max_chars=max_chars)
        position = PositionSummary(conclusion=conclusion)
        metadata["position_inferred"] = True  # the model gave content but no §8 summary
    if position.changes_from_last_round is None:
        position.changes_from_last_round = changes_between(previous.position if previous else None, position)
    metadata["position"] = position.to_json()
    content = content.strip() or position.conclusion
    return AgentOutput(role, round_no, OUTPUT_TYPE[role], clip(content, max_chars), metadata, now_iso())


def fallback_output(
    role: Role, round_no: int, raw_text: str, reason: str, previous: AgentOutput | None, *, max_chars: int
) -> AgentOutput:
    """A record built without the model's JSON: its raw text as content, a minimal §8 position."""
    text = raw_text.strip()
    position = PositionSummary(
        conclusion=first_sentence(text) or f"({role} gave no usable answer)",
        confidence=FALLBACK_CONFIDENCE,
    )
    position.changes_from_last_round = changes_between(previous.position if previous else None, position)
    metadata: dict[str, Any] = {"fallback": True, "fallback_reason": reason}
    if role != "reporter":
        metadata["position"] = position.to_json()
    return AgentOutput(role, round_no, OUTPUT_TYPE[role], clip(text, max_chars) or position.conclusion, metadata, now_iso(), reason)


def reused_output(previous: AgentOutput, round_no: int) -> AgentOutput:
    """§7.1 ``skip_agent``: the agent's last output stands in for this round, marked as such."""
    metadata = {**previous.metadata, "reused_from_round": previous.metadata.get("reused_from_round", previous.round)}
    return replace(previous, round=round_no, metadata=metadata, timestamp=now_iso(), fallback="reused_last_output")
