"""Tree-of-Thoughts (seed 000) on the dialog runtime.

The orchestrator (orchestrator.py) and the explorer (explorer.py) are Python; the decomposer,
generator, evaluator and synthesizer are teammates (roles.py) asked as subdialogs of the run's root
dialog (teammate.py), or the symbolic Game-24 pair (symbolic.py) for offline runs. Every message
between them is the seed's JSON (schemas.py), every run writes the seed's log folder (logs.py).
Entry points: ``dominds tot`` (cli/cmd_tot.py), ``POST /api/tot/runs`` and ``/tot`` (web.py),
``bench/tot_game24.py``. See docs/tot.md.
"""
