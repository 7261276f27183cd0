"""The seed's §6.2 front-end object of a debate: ``multi_agent_session``.

``{type: "multi_agent_session", sessionId, rounds: [{round, outputs: [{agent, content, position?}],
hostDecision?}], finalReport?: {content, plan}}`` as the seed's TypeScript interface gives it, plus
what a page needs to show the run honestly: ``status``, ``currentRound``, ``maxRounds``, how
positions were compared (``similarityMethod``, ``similarityNote`` when it is word overlap for want of
an embedder, and each decision's method and thresholds), ``stopReason``, and ``fallback`` on an output that is not the
agent's own answer. A round still in progress is listed with the outputs given so far and no
``hostDecision``. Served at ``GET /api/multi-agent/{sessionId}/session``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dominds.workflows.debate.protocol import AgentOutput
from dominds.workflows.debate.report import report_plan
from dominds.workflows.debate.state import DebateState, RoundRecord


def session_object(state: DebateState, live_outputs: Sequence[AgentOutput] = ()) -> dict[str, Any]:
    rounds = [_round(record) for record in state.history]
    if live_outputs:
        rounds.append({"round": live_outputs[0].round, "outputs": [_output(o) for o in live_outputs]})
    obj: dict[str, Any] = {
        "type": "multi_agent_session",
        "sessionId": state.session_id,
        "question": state.user_query,
        "status": state.status,
        "currentRound": state.current_round,
        "maxRounds": state.max_rounds,
        "rounds": rounds,
        "consensusTrend": list(state.consensus_trend),
        "similarityMethod": state.similarity_method,
        "similarityNote": state.similarity_note,
    }
    if state.stop_reason:
        obj["stopReason"] = state.stop_reason
    if state.final_report is not None:
        obj["finalReport"] = {"content": state.final_report.content, "plan": report_plan(state.final_report)}
        if state.final_report.fallback:
            obj["finalReport"]["fallback"] = state.final_report.fallback
    return obj


def _round(record: RoundRecord) -> dict[str, Any]:
    analysis = record.analysis
    decision = {
        **record.decision.to_json(),
        "consensus_level": analysis.get("consensus_level"),
        "similarity_method": analysis.get("similarity_method"),
        "thresholds": analysis.get("thresholds"),
    }
    return {"round": record.round, "outputs": [_output(o) for o in record.outputs], "hostDecision": decision}


def _output(output: AgentOutput) -> dict[str, Any]:
    out: dict[str, Any] = {"agent": output.agent_id, "round": output.round, "content": output.content}
    position = output.metadata.get("position")
    if position is not None:
        out["position"] = position
    if output.fallback is not None:
        out["fallback"] = output.fallback
    return out
