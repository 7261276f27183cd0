"""The slides aggregator: ``generate_ppt`` writes ``<workdir>/ppt/presentation.json`` and a real .pptx.

``presentation.json`` is the origin's GeneratePPTTool output (a JSON array of slides); the .pptx is what
users open. ``generate_ppt`` is a workflow tool, so it can require a ``user.response`` first
(``PlanSolveSettings.confirm_tools``); when it is denied the run still ends with the slides in the events.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from dominds.store.atomic import write_atomic
from dominds.workflows.plan_solve.pipeline import AggregateResult, Aggregator, ToolConfirm

TOOL_NAME = "generate_ppt"


def slides_aggregator(ppt_dir: Path, shown_relative_to: Path) -> Aggregator:
    """An aggregator writing into ``ppt_dir``; paths in texts are shown relative to ``shown_relative_to``."""

    async def aggregate(
        context: dict[str, Any], slides: list[dict[str, Any]], confirm: ToolConfirm
    ) -> AggregateResult:
        ordered = sorted(slides, key=lambda slide: int(slide["id"]))
        description = f"Writes presentation.json and presentation.pptx ({len(ordered)} slides) to {_shown(ppt_dir, shown_relative_to)}"
        if not await confirm(
            TOOL_NAME,
            description,
            {"slide_count": len(ordered), "output_dir": _shown(ppt_dir, shown_relative_to)},
        ):
            result = {
                "output": f"Tool execution denied: {TOOL_NAME} was not confirmed",
                "system": "PPT generation skipped",
            }
            return AggregateResult(
                {"slides": ordered, "ppt_result": result},
                "The slides are ready, but writing the presentation was not confirmed.",
            )
        output = await asyncio.to_thread(write_presentation, ordered, ppt_dir, shown_relative_to)
        final = f"Presentation ready: {len(ordered)} slides in {output['pptx_path']} (JSON: {output['json_path']}). {context['plan_summary']}"
        return AggregateResult(output, final)

    return aggregate


def write_presentation(
    slides: list[dict[str, Any]], ppt_dir: Path, shown_relative_to: Path
) -> dict[str, Any]:
    from dominds.workflows.plan_solve.pptx_writer import write_pptx  # python-pptx loads only when used

    ppt_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(slides, ensure_ascii=False, indent=2)
    json_path, pptx_path = ppt_dir / "presentation.json", ppt_dir / "presentation.pptx"
    write_atomic(json_path, text + "\n")
    write_pptx(slides, pptx_path)
    shown_json, shown_pptx = _shown(json_path, shown_relative_to), _shown(pptx_path, shown_relative_to)
    return {
        "slides": slides,
        "ppt_result": {
            "output": f"PPT JSON generated successfully!\n\nFile saved to: {shown_json}\n\nSlide count: {len(slides)}\n\nPowerPoint file: {shown_pptx}",
            "system": f"PPT generation completed with {len(slides)} slides",
        },
        "json_path": shown_json,
        "pptx_path": shown_pptx,
    }


def _shown(path: Path, base: Path) -> str:
    try:
        return "./" + path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path)
