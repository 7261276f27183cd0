"""Plan & Solve (seed 001): a websocket service that plans slides, solves them in parallel and aggregates.

A run is a workflow root dialog (conductor ``plan_solve``); the planner and every solver attempt are
teammate subdialogs of it, so each step is persisted, visible and costed in the main panel. The
websocket protocol of the seed is the adapter at the edge (``protocol.py``), the run logic lives in
``pipeline.py``/``solving.py``, and ``presentation.py`` turns the slides into JSON and a real .pptx.
See docs/plan-solve.md.
"""
