"""The limits a Plan & Solve run's teammates are told about in their tool's description and personas.

Their own module: the member definitions and the ``query_data`` tool, built when ``dominds serve``
starts, quote them, while the modules that enforce them (``dataset.py``, ``tasks.py``) and the run
record are loaded only when a run uses them.
"""

from __future__ import annotations

MAX_ROWS = 200
"""Rows shown to the model per query; more are counted and reported as cut."""
TIMEOUT_S = 10.0
MAX_CHART_POINTS = 24
"""More categories than this do not read on a slide: the query must aggregate or LIMIT."""
