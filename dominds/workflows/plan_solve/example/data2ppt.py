"""``dominds plan-solve example data2ppt``: one Plan & Solve run over a CSV, without a websocket.

The plan is accepted as planned (no confirmation), every slide is solved, and the aggregator writes
``<workdir>/ppt/presentation.json`` and ``presentation.pptx``. Events are printed one line each (or as
the envelopes themselves with ``--json``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.workflows.plan_solve.events import make_event
from dominds.workflows.plan_solve.members import plan_solve_extensions
from dominds.workflows.plan_solve.pipeline import PlanSolveError, PlanSolveRun, StepTimeout
from dominds.workflows.plan_solve.presentation import slides_aggregator
from dominds.workflows.plan_solve.settings import PlanSolveSettings


async def run_data2ppt(
    workspace: Rtws,
    *,
    csv_path: Path,
    question: str,
    workdir: Path,
    concurrency: int,
    out: Callable[[str], None],
    json_events: bool = False,
    template: str = "dominds",
) -> int:
    """Run once; returns a process exit code (0 = the presentation was written)."""
    engine = Engine(workspace, extensions=plan_solve_extensions())
    await engine.start()
    settings = PlanSolveSettings(concurrency=concurrency, csv_path=csv_path, workdir=workdir, template=template)

    def emit(
        event: str, content: Any = None, metadata: dict[str, Any] | None = None, step_id: str | None = None
    ) -> None:
        envelope = make_event(event, content=content, metadata=metadata, step_id=step_id)
        out(json.dumps(envelope, ensure_ascii=False) if json_events else describe_event(envelope, Path.cwd()))

    aggregator = slides_aggregator(Path.cwd(), template)
    pipeline = PlanSolveRun(engine, settings, emit, aggregator, csv_path=csv_path, ppt_root=workdir / "ppt")
    try:
        final_text = await pipeline.run(question)
    except StepTimeout as exc:
        emit("agent.timeout", str(exc))
        return 1
    except (PlanSolveError, ValueError) as exc:
        emit("agent.error", f"Execution error: {exc}")
        return 1
    finally:
        await engine.close()
    emit("agent.final_answer", final_text)
    written = pipeline.output_dir is not None and (pipeline.output_dir / "presentation.pptx").is_file()
    return 0 if written else 1


def describe_event(envelope: dict[str, Any], shown_from: Path | None = None) -> str:
    """One human line per event; the deck's path in full when the events' paths are relative to ``shown_from``
    (the events say ``./workdir/…``, which the user's shell, elsewhere after ``-C``, would not find)."""
    event, content = envelope["event"], envelope.get("content")
    detail = content if isinstance(content, str) else ""
    if event in ("agent.tool_call", "agent.tool_result"):
        metadata = envelope.get("metadata") or {}
        who = f"slide {metadata['task_id']}" if "task_id" in metadata else "planner"
        args = metadata.get("args") or {}
        shown = args.get("sql", detail) if event == "agent.tool_call" and isinstance(args, dict) else detail
        return f"[{event}] {who}: {' '.join(str(shown).split())[:160]}"
    if isinstance(content, dict):
        task = content.get("task") or {}
        if event == "plan.start":
            detail = str(content.get("question", ""))
        elif event == "plan.completed":
            titles = "; ".join(f"{t['id']}. {t['title']}" for t in content.get("tasks", []))
            detail = f"{content.get('plan_summary', '')} [{titles}]"
        elif event.startswith("solver."):
            detail = f"slide {task.get('id')}: {task.get('title')}" + (
                f" — {content['error']}" if "error" in content else ""
            )
        elif event == "aggregate.start":
            detail = f"{len(content.get('solver_results', []))} slides"
        elif event == "aggregate.completed":
            output = content.get("output") or {}
            detail = str(output.get("ppt_result", {}).get("system", ""))
            if shown_from is not None and output.get("pptx_path"):
                detail += f"; deck: {os.path.normpath(shown_from / str(output['pptx_path']))}"
        elif event == "pipeline.completed":
            totals = (content.get("statistics") or {}).get("totals") or {}
            detail = (
                f"{totals.get('total_calls', 0)} LLM calls, {totals.get('total_input_tokens', 0)} input + "
                f"{totals.get('total_output_tokens', 0)} output tokens"
            )
        else:
            detail = json.dumps(content, ensure_ascii=False)[:200]
    return f"[{event}] {detail}".rstrip()
