"""Slides (seed §3.2 format) → a real .pptx with python-pptx: a title, the text and up to 2 native charts.

Charts are native PowerPoint charts (editable in PowerPoint/LibreOffice), not pictures. python-pptx 1.0
ships partial type hints; its chart-data classes are untyped, hence the two targeted ignores. This module
is the only place that touches python-pptx.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE, XL_LEGEND_POSITION
from pptx.util import Inches, Pt

_CHART_TYPES = {
    "bar": XL_CHART_TYPE.COLUMN_CLUSTERED,
    "line": XL_CHART_TYPE.LINE_MARKERS,
    "pie": XL_CHART_TYPE.PIE,
    "area": XL_CHART_TYPE.AREA,
}
_TITLE_ONLY_LAYOUT = 5
"""Index of "Title Only" in python-pptx's default template."""


def write_pptx(slides: list[dict[str, Any]], path: Path) -> int:
    """Write one PowerPoint slide per slide dict; returns the number of slides written."""
    presentation = Presentation()
    for slide in slides:
        _add_slide(presentation, slide)
    path.parent.mkdir(parents=True, exist_ok=True)
    presentation.save(str(path))
    return len(slides)


def _add_slide(presentation: Any, slide: dict[str, Any]) -> None:
    page = presentation.slides.add_slide(presentation.slide_layouts[_TITLE_ONLY_LAYOUT])
    page.shapes.title.text = str(slide.get("title", ""))
    charts = [c for c in slide.get("charts") or [] if c.get("data")][:2]
    text_height = Inches(1.3) if charts else Inches(5.2)
    box = page.shapes.add_textbox(Inches(0.5), Inches(1.6), Inches(9.0), text_height)
    box.text_frame.word_wrap = True
    box.text_frame.text = str(slide.get("text", ""))
    box.text_frame.paragraphs[0].font.size = Pt(18)
    width = Inches(9.0 / len(charts) - (0.2 if len(charts) > 1 else 0)) if charts else 0
    for index, chart in enumerate(charts):
        left = Inches(0.5 + index * 4.6)
        _add_chart(page, chart, left, Inches(3.0), width, Inches(4.2))


def _add_chart(page: Any, chart: dict[str, Any], left: Any, top: Any, width: Any, height: Any) -> None:
    data = CategoryChartData()  # type: ignore[no-untyped-call]
    data.categories = [str(point["name"]) for point in chart["data"]]
    values = [float(point["value"]) for point in chart["data"]]
    data.add_series(str(chart.get("title") or "Value"), values)  # type: ignore[no-untyped-call]
    kind = _CHART_TYPES.get(str(chart.get("type", "bar")), XL_CHART_TYPE.COLUMN_CLUSTERED)
    graphic = page.shapes.add_chart(kind, left, top, width, height, data).chart
    graphic.has_title = bool(chart.get("title"))
    if graphic.has_title:
        graphic.chart_title.text_frame.text = str(chart["title"])
    graphic.has_legend = kind == XL_CHART_TYPE.PIE
    if graphic.has_legend:
        graphic.legend.position = XL_LEGEND_POSITION.RIGHT
        graphic.legend.include_in_layout = False
