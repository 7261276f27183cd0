"""The slides aggregator: ``generate_ppt`` writes the run's ``presentation.json`` and a real ``.pptx``.

Each run writes into its own folder (``AggregateJob.output_dir``), so a run never overwrites another's
deck. ``presentation.json`` is the origin's GeneratePPTTool output (a JSON array of slides); the .pptx is
what users open: a cover slide, then one slide per task in the chosen template (``pptx_writer.py``).
``generate_ppt`` is a workflow tool, so it can require a ``user.response`` first
(``PlanSolveSettings.confirm_tools``); when it is denied the run still ends with the slides in the events.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from dominds.store.atomic import write_atomic
from dominds.workflows.plan_solve.aggregation import AggregateJob, AggregateResult, Aggregator
from dominds.workflows.plan_solve.run_record import RunDeck, shown_path

TOOL_NAME = "generate_ppt"
JSON_NAME = "presentation.json"
PPTX_NAME = "presentation.pptx"


def slides_aggregator(shown_relative_to: Path, template: str) -> Aggregator:
    """An aggregator writing each run's deck with ``template``; paths in texts are relative to ``shown_relative_to``."""

    async def aggregate(job: AggregateJob) -> AggregateResult:
        ordered = sorted(job.slides, key=lambda slide: int(slide["id"]))
        shown_dir = _dotted(job.output_dir, shown_relative_to)
        description = f"Writes {JSON_NAME} and {PPTX_NAME} (cover + {len(ordered)} slides) to {shown_dir}"
        if not await job.confirm(
            TOOL_NAME, description, {"slide_count": len(ordered), "output_dir": shown_dir, "template": template}
        ):
            result = {"output": f"Tool execution denied: {TOOL_NAME} was not confirmed", "system": "PPT generation skipped"}
            return AggregateResult(
                {"slides": ordered, "ppt_result": result},
                "The slides are ready, but writing the presentation was not confirmed.",
            )
        output, deck = await asyncio.to_thread(
            write_presentation, ordered, job.cover, job.output_dir, shown_relative_to, template
        )
        final = (
            f"Presentation ready: cover + {len(ordered)} slides in {output['pptx_path']} "
            f"(JSON: {output['json_path']}). {job.context['plan_summary']}"
        )
        return AggregateResult(output, final, deck)

    return aggregate


def write_presentation(
    slides: list[dict[str, Any]], cover: dict[str, str], out_dir: Path, shown_relative_to: Path, template: str
) -> tuple[dict[str, Any], RunDeck]:
    from dominds.workflows.plan_solve.pptx_writer import write_pptx  # python-pptx loads only when used

    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, pptx_path = out_dir / JSON_NAME, out_dir / PPTX_NAME
    write_atomic(json_path, json.dumps(slides, ensure_ascii=False, indent=2) + "\n")
    written = write_pptx(slides, pptx_path, cover=cover, template=template)
    shown_json, shown_pptx = _dotted(json_path, shown_relative_to), _dotted(pptx_path, shown_relative_to)
    output = {
        "slides": slides,
        "ppt_result": {
            "output": (
                f"PPT JSON generated successfully!\n\nFile saved to: {shown_json}\n\nSlide count: {len(slides)}\n\n"
                f"PowerPoint file: {shown_pptx} (cover + {len(slides)} slides, template {template})"
            ),
            "system": f"PPT generation completed with {len(slides)} slides",
        },
        "json_path": shown_json,
        "pptx_path": shown_pptx,
        "template": template,
    }
    deck = RunDeck(pptx=shown_path(pptx_path, shown_relative_to), json_path=shown_path(json_path, shown_relative_to), slides=written, template=template)
    return output, deck


def _dotted(path: Path, base: Path) -> str:
    """``./relative/path`` inside ``base``, the absolute path elsewhere (as the origin printed it)."""
    shown = shown_path(path, base)
    return shown if Path(shown).is_absolute() else f"./{shown}"
