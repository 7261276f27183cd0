"""The debate's roles and the team members that play them.

Their own module: the member definitions (``members.py``), built when ``dominds serve`` starts, need
the ids, while the debate's records and host (``protocol.py``, ``host.py``) are loaded when a debate
runs. ``protocol.py`` re-exports them.
"""

from __future__ import annotations

from typing import Literal

Role = Literal["planner", "critic", "reporter"]

MEMBER_IDS: dict[Role, str] = {"planner": "debate-planner", "critic": "debate-critic", "reporter": "debate-reporter"}
"""Team member of each role. Namespaced: Plan & Solve has a ``planner`` too, and a user's team.yaml
may already use the short names for something else."""
HOST_MEMBER_ID = "debate-host"
"""Agent of the run's root dialog; the host is Python code and never generates."""
