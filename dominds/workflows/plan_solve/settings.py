"""Settings of one Plan & Solve service (the standalone server, the mount in ``dominds serve``, the example)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_CONFIRM_TIMEOUT = 300.0
"""Seed §2.1: the plan confirmation waits 300 s by default."""
EXAMPLE_CONFIRM_TIMEOUT = 600.0
"""Seed §9: the data-to-slides example service waits 600 s."""
DEFAULT_CSV = Path("plan-solve/sales.csv.gz")
"""Where a workspace keeps its sample data (relative to the workspace root)."""
BUILTIN_TEMPLATES = ("dominds", "plain")
"""Deck templates that need no file (pptx_writer.py draws them)."""


@dataclass(frozen=True)
class PlanSolveSettings:
    concurrency: int = 5
    """Solver subdialogs running at once (the origin example uses 5)."""
    broadcast_tasks: bool = True
    """Seed §3.3: with False, ``plan.completed`` carries only ``plan_summary`` and ``statistics``."""
    require_plan_confirmation: bool = False
    """Ask ``agent.user_confirm`` (scope=plan) after planning and wait for ``user.response``."""
    confirm_timeout: float = DEFAULT_CONFIRM_TIMEOUT
    """Seconds a confirmation waits; a timeout counts as declined."""
    confirm_tools: frozenset[str] = frozenset()
    """Workflow tools that need a ``user.response`` before they run (``generate_ppt``)."""
    step_timeout: float = 600.0
    """Seconds one planner or solver step may take before it is declared dead."""
    heartbeat_seconds: float = 60.0
    """Interval of ``system.heartbeat`` (the origin's app heartbeat)."""
    csv_path: Path | None = None
    """Data the planner and solvers see; relative paths are resolved against the workspace."""
    workdir: Path = Path("workdir")
    """Output root: each run writes ``<workdir>/ppt/<YYYYmmdd-HHMMSS>-<run id>/presentation.{json,pptx}``
    (relative = workspace)."""
    template: str = "dominds"
    """Deck template: ``dominds`` (16:9, styled), ``plain`` (python-pptx's default) or a .pptx/.potx path."""
    taskdoc_path: str = "tasks/plan-solve.tsk"
    """Taskdoc package of every run's dialog tree (created with a short goals.md when missing)."""
    agent_name: str = "plan_solve_data2ppt"
    """Reported in ``agent.session_created`` and the aggregation context."""
    token: str | None = None
    """Shared secret for the standalone server; the mount in ``dominds serve`` uses the daemon's."""
    allowed_origins: frozenset[str] = field(default_factory=frozenset)

    def resolve(self, workspace_root: Path, path: Path) -> Path:
        return path if path.is_absolute() else workspace_root / path
