"""The debate's team members and toolset, registered when ``dominds.workflows.debate`` is imported.

Members are hidden and exist in every workspace; ``.minds/team.yaml`` may define the same ids to pick
another provider or model, or a ``.minds/team/<id>/persona.md`` to change a persona.

The engine caches the team until team.yaml changes, so this must be imported before an engine loads
its configuration (the CLI and the server import it at start); ``require_members`` says so clearly
instead of failing deep inside a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dominds.team import register_workflow_members
from dominds.workflows.debate.prompts import PERSONAS
from dominds.workflows.debate.protocol import HOST_MEMBER_ID, MEMBER_IDS
from dominds.workflows.debate.timetools import TOOLSET, register_time_toolset

if TYPE_CHECKING:
    from dominds.driver.engine import Engine

DEFAULT_AGENT_MAX_TOKENS = 2000
"""Seed §10.2: one agent output stays under 2000 tokens (the providers enforce ``max_tokens``)."""


def register_debate_members() -> None:
    register_time_toolset()
    params = {"max_tokens": DEFAULT_AGENT_MAX_TOKENS}
    register_workflow_members(
        members={
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


def require_members(engine: Engine) -> None:
    from dominds.driver.engine import EngineError

    team = engine.config.get().team
    missing = [m for m in MEMBER_IDS.values() if team.member(m) is None]
    if missing:
        raise EngineError(
            f"the debate members ({', '.join(missing)}) are not in this engine's team: import "
            "dominds.workflows.debate before the engine loads its configuration, or touch .minds/team.yaml"
        )
