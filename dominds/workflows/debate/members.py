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
from dominds.workflows.debate.prompts import PERSONAS
from dominds.workflows.debate.protocol import HOST_MEMBER_ID, MEMBER_IDS
from dominds.workflows.debate.timetools import TOOLSET, time_toolsets

if TYPE_CHECKING:
    from dominds.driver.engine import Engine

DEFAULT_AGENT_MAX_TOKENS = 2000
"""Seed §10.2: one agent output stays under 2000 tokens (the providers enforce ``max_tokens``)."""


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
