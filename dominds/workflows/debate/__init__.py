"""Seed 002: a Host/Planner/Critic/Reporter debate with embedding consensus, over the conductor API.

The host is Python (``host.py``); planner, critic and reporter are teammates asked through
``ConductorRun.ask``; the session state lives in the run's root dialog (``state.py``). Edges: SSE at
``POST /api/multi-agent`` and the ``/debate`` page (``web.py``), and ``dominds debate`` (CLI).
See docs/debate.md.

Its members and the ``debate-time`` toolset are extensions of the engine that runs debates
(``members.debate_extensions``); importing the package changes no team.
"""
