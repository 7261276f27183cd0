"""What the aggregation step of a run is given and gives back (the slides aggregator implements it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dominds.workflows.plan_solve.run_record import RunDeck

ToolConfirm = Callable[[str, str, dict[str, Any]], Awaitable[bool]]
"""``confirm(tool_name, description, args)``: True when the tool may run."""


@dataclass(frozen=True)
class AggregateJob:
    context: dict[str, Any]
    """``aggregate.start.context``: name, question, tasks, plan_summary, dialog_id, output_dir."""
    slides: list[dict[str, Any]]
    confirm: ToolConfirm
    output_dir: Path
    """This run's own folder (created by the aggregator when it writes)."""
    cover: dict[str, str]
    """``{title, subtitle}`` of the cover slide."""


@dataclass(frozen=True)
class AggregateResult:
    output: dict[str, Any]
    """``aggregate.completed.output`` (for slides: ``{slides, ppt_result, ...}``)."""
    final_text: str
    deck: RunDeck | None = None
    """The deck written, for the run record (None when nothing was written)."""


Aggregator = Callable[[AggregateJob], Awaitable[AggregateResult]]
