"""The final report: the Reporter's Markdown, or one built here when the Reporter fails (§7), plus a
short record of the debate (rounds, consensus trend, how similarity was measured) appended for the
file the CLI writes."""

from __future__ import annotations

from typing import Any

from dominds.ids import now_iso
from dominds.workflows.debate.calibration import thresholds_of
from dominds.workflows.debate.host import consensus_label
from dominds.workflows.debate.protocol import AgentOutput, HostDecision
from dominds.workflows.debate.state import DebateState


def _lines_of_plan(plan: Any) -> list[str]:
    if not isinstance(plan, dict):
        return []
    lines: list[str] = []
    for phase in plan.get("phases") or []:
        if not isinstance(phase, dict):
            continue
        lines.append(f"- **{phase.get('phase_name', 'Phase')}**" + (f" ({phase['duration']})" if phase.get("duration") else ""))
        for task in phase.get("tasks") or []:
            if isinstance(task, dict) and task.get("title"):
                extra = ", ".join(
                    str(part)
                    for part in (
                        f"{task['estimated_hours']} h" if task.get("estimated_hours") else None,
                        f"due {task['deadline']}" if task.get("deadline") else None,
                    )
                    if part
                )
                lines.append(f"  - {task['title']}" + (f" ({extra})" if extra else ""))
    if plan.get("total_estimated_hours"):
        lines.append(f"\nTotal: {plan['total_estimated_hours']} hours.")
    return lines


def fallback_report(state: DebateState, decision: HostDecision, reason: str) -> AgentOutput:
    """A report assembled from the last plan and critique when the Reporter gave nothing usable."""
    planner, critic = state.last_output("planner"), state.last_output("critic")
    plan = planner.metadata.get("plan") if planner else None
    critique = critic.metadata.get("critique") if critic else None
    title = plan.get("title") if isinstance(plan, dict) and plan.get("title") else state.user_query
    level = consensus_label(state.consensus_trend[-1], thresholds_of(state.last_round)) if state.consensus_trend else "low"
    parts = [f"# {title}", "", f"_The Reporter could not write this report ({reason}); it was assembled from the debate._"]
    if planner and planner.position:
        parts += ["", "## Conclusion", "", planner.position.conclusion]
    plan_lines = _lines_of_plan(plan)
    if plan_lines:
        parts += ["", "## Plan", "", *plan_lines]
    risks = [r for r in (critique or {}).get("risks") or [] if isinstance(r, dict) and r.get("risk")]
    if risks:
        parts += ["", "## Risks raised by the Critic", ""]
        parts += [f"- {r['risk']}" + (f" ({r['severity']})" if r.get("severity") else "") for r in risks]
    if decision.action != "converge" or decision.early_stop:
        parts += ["", "## Where the Planner and the Critic still differ", ""]
        for role, output in (("Planner", planner), ("Critic", critic)):
            if output and output.position:
                parts.append(f"- {role}: {output.position.conclusion}")
    metadata = {
        "fallback": True,
        "fallback_reason": reason,
        "final_plan": {
            "title": title,
            "goal": plan.get("goal") if isinstance(plan, dict) else None,
            "consensus_level": level,
            "participating_agents": ["planner", "critic"],
            "rounds": state.current_round,
            "plan": plan if isinstance(plan, dict) else {},
        },
        "summary": {"key_agreements": [], "resolved_concerns": [], "remaining_uncertainties": [r["risk"] for r in risks]},
    }
    return AgentOutput("reporter", state.current_round, "report", "\n".join(parts), metadata, now_iso(), reason)


def report_plan(report: AgentOutput) -> dict[str, Any]:
    """The ``plan`` of the §6.1 ``final_report`` event: the final plan, or an empty mapping."""
    final_plan = report.metadata.get("final_plan")
    return final_plan if isinstance(final_plan, dict) else {}


def debate_record(state: DebateState) -> str:
    rows = ["| round | action | consensus | method | stubborn |", "|---|---|---|---|---|"]
    for record in state.history:
        analysis = record.analysis
        rows.append(
            f"| {record.round} | {record.decision.action} | {analysis.get('consensus_level', 0):.2f} | "
            f"{analysis.get('similarity_method', '?')} | {', '.join(analysis.get('stubborn_agents') or []) or '-'} |"
        )
    trend = ", ".join(f"{x:.2f}" for x in state.consensus_trend) or "-"
    return "\n".join(
        [
            "## Debate record",
            "",
            f"Session `{state.session_id}`, status **{state.status}** after {state.current_round} of at most "
            f"{state.max_rounds} rounds. Consensus trend: {trend}.",
            "",
            similarity_line(state),
            "",
            *rows,
        ]
    )


def similarity_line(state: DebateState) -> str:
    """How positions were compared, with the thresholds of the last decision and any fallback note."""
    method = state.similarity_method or (state.last_round.analysis.get("similarity_method") if state.last_round else None)
    words = "word overlap (Jaccard)" if (method or "").startswith("jaccard") else f"embeddings `{(method or '?').removeprefix('embedding:')}`"
    line = f"Similarity: {words}"
    saved = state.last_round.analysis.get("thresholds") if state.last_round else None
    if isinstance(saved, dict):
        line += f"; converge above {saved['converge_above']:.2f}, oppose at or below {saved['oppose_at_or_below']:.2f} ({saved['basis']})"
    line += "."
    if state.similarity_note:
        line += f" Note: {state.similarity_note}."
    return line


def final_markdown(state: DebateState) -> str:
    """The report file: the final report, then the debate record."""
    body = state.final_report.content if state.final_report else f"# {state.user_query}\n\n(no final report)"
    return f"{body.rstrip()}\n\n---\n\n{debate_record(state)}\n"
