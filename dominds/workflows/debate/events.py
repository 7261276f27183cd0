"""The run's events: the seed's §6.1 SSE vocabulary plus the few it lacks.

Seed: ``agent_output`` {agent, round, content}, ``host_decision`` {action, reason}, ``final_report``
{agent, content, plan}, then ``[DONE]`` (the transport's, see web.py). Each carries more fields than
the seed shows (position, consensus, …); a client that reads only the seed's fields still works.

Added: ``session_start`` (the session id a client needs to resume), ``agent_status`` (a §4 status
change, already saved), ``agent_error`` (§7.1's ``agent_timeout`` / ``skip_agent`` record),
``tool_error`` (§7.3), ``session_interrupted`` and ``error``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dominds.workflows.debate.protocol import AgentOutput
from dominds.workflows.debate.report import report_plan
from dominds.workflows.debate.state import DebateState


def session_start(
    state: DebateState, similarity_method: str, resumed_from_round: int | None, warnings: Sequence[str]
) -> dict[str, Any]:
    """The run (re)starts: what a client needs to show it and to resume it (``sessionId``)."""
    return {
        "type": "session_start",
        "sessionId": state.session_id,
        "question": state.user_query,
        "maxRounds": state.max_rounds,
        "resumedFromRound": resumed_from_round,
        "similarityMethod": similarity_method,
        "similarityNote": state.similarity_note,
        "warnings": list(warnings),
        "history": [host_decision(r.host) for r in state.history],
        "consensus_trend": list(state.consensus_trend),
    }


def agent_status(agent: str, status: str, round_no: int) -> dict[str, Any]:
    """A §4 ``agents.<role>.status`` change (``running``, ``waiting``, ``completed``, ``skipped``, ``failed``)."""
    return {"type": "agent_status", "agent": agent, "status": status, "round": round_no}


def agent_output(output: AgentOutput) -> dict[str, Any]:
    return {
        "type": "agent_output",
        "agent": output.agent_id,
        "round": output.round,
        "output_type": output.output_type,
        "content": output.content,
        "position": output.metadata.get("position"),
        "metadata": {k: v for k, v in output.metadata.items() if k != "position"},
        "fallback": output.fallback,
    }


def host_decision(host_output: AgentOutput) -> dict[str, Any]:
    decision = host_output.metadata["decision"]
    analysis = host_output.metadata.get("analysis") or {}
    return {"type": "host_decision", "agent": "host", "round": host_output.round, **decision, **analysis}


def agent_error(error: str, agent: str, round_no: int, had_last_output: bool, detail: str = "") -> dict[str, Any]:
    event = {
        "type": "agent_error",
        "error": error,
        "agent": agent,
        "round": round_no,
        "action": "skip_agent",
        "fallback": "use_last_output" if had_last_output and agent != "reporter" else "fallback_output",
    }
    if detail:
        event["detail"] = detail
    return event


def tool_error(tool: str, detail: str, round_no: int) -> dict[str, Any]:
    return {
        "type": "tool_error",
        "error": "tool_execution_failed",
        "tool": tool,
        "round": round_no,
        "fallback": "jaccard_keyword_match",
        "detail": detail,
    }


def final_report(state: DebateState) -> dict[str, Any]:
    report = state.final_report
    assert report is not None
    return {
        "type": "final_report",
        "agent": "reporter",
        "round": report.round,
        "content": report.content,
        "plan": report_plan(report),
        "summary": report.metadata.get("summary"),
        "fallback": report.fallback,
        "status": state.status,
        "sessionId": state.session_id,
        "consensus_trend": list(state.consensus_trend),
        "similarityMethod": state.similarity_method,
        "similarityNote": state.similarity_note,
    }


def session_interrupted(state: DebateState) -> dict[str, Any]:
    return {
        "type": "session_interrupted",
        "sessionId": state.session_id,
        "completedRounds": state.current_round,
        "reason": state.stop_reason,
    }
