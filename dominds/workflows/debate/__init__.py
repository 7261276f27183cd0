"""Seed 002: a Host/Planner/Critic/Reporter debate with embedding consensus, over the conductor API.

The host is Python (``host.py``); planner, critic and reporter are teammates asked through
``ConductorRun.ask``; the session state lives in the run's root dialog (``state.py``). Edges: SSE at
``POST /api/multi-agent`` and the ``/debate`` page (``web.py``), and ``dominds debate`` (CLI).
See docs/debate.md.

Importing this package registers the debate members and the ``debate-time`` toolset.
"""

from dominds.workflows.debate.members import register_debate_members

register_debate_members()
