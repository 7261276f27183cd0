"""The debate's team members and toolset, as extensions of the engine that runs debates.

Members are hidden and exist in every team of an engine that has the debate's extensions
(``dominds serve`` adds every workflow's; ``ensure_members`` adds them to any other engine);
``.minds/team.yaml`` may define the same ids to pick another provider or model, or a
``.minds/team/<id>/persona.md`` to change a persona. Importing this module changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dominds.driver.extensions import Extensions
from dominds.team import WorkflowMembers
from dominds.workflows.debate.member_ids import HOST_MEMBER_ID, MEMBER_IDS
from dominds.workflows.debate.timetools import TOOLSET, time_toolsets

if TYPE_CHECKING:
    from dominds.driver.engine import Engine

DEFAULT_AGENT_MAX_TOKENS = 2000
"""Seed §10.2: one agent output stays under 2000 tokens (the providers enforce ``max_tokens``)."""

PERSONAS = {
    "planner": (
        "You are the Planner of a structured debate. You turn the user's goal into a concrete, dated plan "
        "(phases, tasks, hours, deadlines) and you revise it when the Critic finds real problems. Use the "
        "get_now and calculate_date tools for dates instead of computing them in your head. Answer with exactly "
        "one JSON object in a ```json block, in the format the request gives, written in the user's language."
    ),
    "critic": (
        "You are the Critic of a structured debate. You look for what would make the plan fail: feasibility, "
        "hidden assumptions, missing parts, risks. Be specific and constructive; agree when the plan is sound. "
        "Answer with exactly one JSON object in a ```json block, in the format the request gives, written in "
        "the user's language."
    ),
    "reporter": (
        "You are the Reporter of a structured debate. You turn the final plan and the debate's agreements and "
        "disagreements into a clear Markdown report for the user, without inventing new content. Answer with "
        "exactly one JSON object in a ```json block, in the format the request gives, written in the user's language."
    ),
    "host": (
        "The debate host is Python code (dominds/workflows/debate/host.py); this member exists so the run's "
        "root dialog has an owner and never generates."
    ),
}
"""Each member's persona (``.minds/team/<id>/persona.md`` replaces it). Here, not with the requests
(``prompts.py``): ``dominds serve`` builds the members at start, and a debate's code loads when one runs."""


def debate_extensions() -> Extensions:
    params = {"max_tokens": DEFAULT_AGENT_MAX_TOKENS}
    members = WorkflowMembers(
        specs={
            MEMBER_IDS["planner"]: {
                "name": "Debate Planner",
                "gofor": ("turns a goal into a dated plan in the debate workflow",),
                "toolsets": (TOOLSET,),
                "model_params": params,
            },
            MEMBER_IDS["critic"]: {
                "name": "Debate Critic",
                "gofor": ("finds risks and gaps in plans in the debate workflow",),
                "toolsets": (TOOLSET,),
                "model_params": params,
            },
            MEMBER_IDS["reporter"]: {
                "name": "Debate Reporter",
                "gofor": ("writes the debate's final report",),
                "toolsets": (),
                "model_params": params,
            },
            HOST_MEMBER_ID: {"name": "Debate Host", "gofor": ("runs debates (Python code, never generates)",), "toolsets": ()},
        },
        personas={
            MEMBER_IDS["planner"]: PERSONAS["planner"],
            MEMBER_IDS["critic"]: PERSONAS["critic"],
            MEMBER_IDS["reporter"]: PERSONAS["reporter"],
            HOST_MEMBER_ID: PERSONAS["host"],
        },
    )
    return Extensions(toolsets=time_toolsets(), members=members)


def ensure_members(engine: Engine) -> None:
    """Give ``engine`` the debate's members and toolset (idempotent; the team reloads if they were new)."""
    engine.config.extend(debate_extensions())
