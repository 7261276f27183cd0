"""The requests the host sends its teammates (their personas are in ``members.py``).

Every request is self-contained (each step is a fresh TYPE C subdialog): the question, the round, the
date, the other side's latest output, the agent's own previous position, the host's constraints, and
the exact §2 JSON to answer with. The first line, ``[debate round N of M, role]``, lets a scripted
response database (and a person reading the subdialog) tell the steps apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dominds.workflows.debate.host import DEVILS_ADVOCATE_REQUIREMENT, STUBBORN_REQUIREMENT
from dominds.workflows.debate.protocol import AgentOutput, HostDecision

CONTEXT_CHARS = 6000
"""How much of another agent's output is quoted (its structured part first)."""

_POSITION = """"position": {
      "conclusion": "<one sentence>",
      "key_reasons": ["<reason>", "<reason>", "<reason>"],
      "assumptions": ["<assumption>", "<assumption>"],
      "confidence": 0.8,
      "changes_from_last_round": {"conclusion_changed": false, "reasons_added": [], "confidence_delta": 0.0}
    }"""

PLANNER_FORMAT = f"""{{
  "agent_id": "planner", "round": <round>, "output_type": "plan",
  "content": "<the plan for the user, a few short paragraphs>",
  "metadata": {{
    {_POSITION},
    "plan": {{
      "title": "<title>", "goal": "<measurable goal>",
      "phases": [{{"phase_name": "<name>", "duration": "<e.g. 6 weeks>",
                  "tasks": [{{"title": "<task>", "estimated_hours": 10, "deadline": "YYYY-MM-DD", "tags": ["<tag>"]}}]}}],
      "total_estimated_hours": 0
    }}
  }}
}}"""

CRITIC_FORMAT = f"""{{
  "agent_id": "critic", "round": <round>, "output_type": "critique",
  "content": "<your critique for the user, a few short paragraphs>",
  "metadata": {{
    {_POSITION},
    "critique": {{
      "target_agent": "planner", "target_round": <round of the plan you critique>,
      "risks": [{{"risk": "<risk>", "severity": "high|medium|low", "impact": "<impact>"}}],
      "suggestions": [{{"issue": "<issue>", "solution": "<fix>", "priority": "high|medium|low"}}],
      "validity_check": {{"feasible": true, "realistic": true, "complete": false}}
    }}
  }}
}}"""

REPORTER_FORMAT = """{
  "agent_id": "reporter", "round": <round>, "output_type": "report",
  "content": "# <title>\\n\\n<the final plan for the user, in Markdown>",
  "metadata": {
    "final_plan": {"title": "<title>", "goal": "<goal>", "consensus_level": "high|medium|low",
                   "participating_agents": ["planner", "critic"], "rounds": <rounds>,
                   "plan": {"phases": [], "total_estimated_hours": 0}},
    "summary": {"key_agreements": ["<point>"], "resolved_concerns": ["<concern -> how it was resolved>"],
                "remaining_uncertainties": ["<uncertainty>"]}
  }
}"""


@dataclass(frozen=True)
class RoundBrief:
    """What one debater's request is built from."""

    question: str
    round: int
    max_rounds: int
    today: dict[str, Any]
    """``get_now`` output in the debate's timezone."""
    decision: HostDecision | None
    """The host's decision after the previous round (``None`` in round 1)."""
    own_previous: AgentOutput | None
    other_latest: AgentOutput | None
    max_tokens: int


def header(role: str, round_no: int, max_rounds: int) -> str:
    return f"[debate round {round_no} of {max_rounds}, {role}]"


def quoted_output(output: AgentOutput | None, label: str) -> str:
    if output is None:
        return ""
    structured = {k: v for k, v in output.metadata.items() if k in ("position", "plan", "critique")}
    body = json.dumps({"round": output.round, "content": output.content, **structured}, ensure_ascii=False, indent=1)
    if len(body) > CONTEXT_CHARS:
        body = body[:CONTEXT_CHARS] + "\n…(cut)"
    return f"\n{label} (round {output.round}):\n```json\n{body}\n```\n"


def _common(role: str, brief: RoundBrief) -> list[str]:
    today = brief.today
    lines = [
        header(role, brief.round, brief.max_rounds),
        f"Question from the user: {brief.question}",
        f"Today is {today['date']}, a {today['weekday']} ({today['timezone']}).",
    ]
    decision = brief.decision
    if decision is not None:
        lines.append(f"The host decided `{decision.action}` after the last round: {decision.reason}.")
        if decision.must_address:
            lines.append("You must address: " + "; ".join(decision.must_address) + ".")
        if decision.avoid:
            lines.append("Avoid: " + "; ".join(decision.avoid) + ".")
        command = decision.command_for(role)
        if command is not None:
            lines.append(f"Update command from the host ({command['reason']}): {STUBBORN_REQUIREMENT}")
    return lines


def _closing(format_text: str, brief: RoundBrief) -> str:
    return (
        f"\nAnswer with one JSON object in a ```json block, exactly in this format (round = {brief.round}); keep "
        f"the whole answer under {brief.max_tokens} tokens:\n```json\n{format_text}\n```\n"
    )


def planner_request(brief: RoundBrief) -> str:
    lines = _common("planner", brief)
    if brief.round == 1:
        lines.append("Draft the first plan. The Critic gives an independent assessment in parallel.")
    else:
        lines.append("Revise your plan: answer the Critic's points that hold, and say why you keep what you keep.")
    text = "\n".join(lines)
    text += quoted_output(brief.other_latest, "The Critic's latest critique")
    text += quoted_output(brief.own_previous, "Your previous output")
    return text + _closing(PLANNER_FORMAT, brief)


def critic_request(brief: RoundBrief, *, devils_advocate: bool) -> str:
    lines = _common("critic", brief)
    if brief.round == 1:
        lines.append(
            "The Planner drafts a plan in parallel; you will see it next round. Give your independent critical "
            "assessment: what a plan for this goal must get right, the main risks, and whether the goal is realistic."
        )
    elif devils_advocate:
        lines.append(
            "The host forces opposition: act as devil's advocate against the Planner's plan. "
            + DEVILS_ADVOCATE_REQUIREMENT
        )
    else:
        lines.append("Critique the Planner's plan below: what is wrong, missing or unrealistic, and how to fix it.")
    text = "\n".join(lines)
    text += quoted_output(brief.other_latest, "The Planner's plan")
    text += quoted_output(brief.own_previous, "Your previous output")
    return text + _closing(CRITIC_FORMAT, brief)


def reporter_request(
    question: str,
    round_no: int,
    max_rounds: int,
    decision: HostDecision,
    consensus_label: str,
    trend: list[float],
    planner: AgentOutput | None,
    critic: AgentOutput | None,
    max_tokens: int,
) -> str:
    lines = [
        header("reporter", round_no, max_rounds),
        f"Question from the user: {question}",
        f"The debate ended after round {round_no} with `{decision.action}`: {decision.reason}.",
        f"Consensus: {consensus_label} (trend {', '.join(f'{x:.2f}' for x in trend)}).",
    ]
    for key in ("to_all_agents", "reporter_instruction"):
        if decision.instructions.get(key):
            lines.append(str(decision.instructions[key]))
    text = "\n".join(lines)
    text += quoted_output(planner, "The Planner's final plan")
    text += quoted_output(critic, "The Critic's final critique")
    text += (
        f"\nWrite the final report as one JSON object in a ```json block, exactly in this format "
        f"(round = {round_no}, rounds = {round_no}, consensus_level = {consensus_label}); keep it under "
        f"{max_tokens} tokens:\n```json\n{REPORTER_FORMAT}\n```\n"
    )
    return text
