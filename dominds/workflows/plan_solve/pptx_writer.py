"""Slides (seed §3.2 format) → a real .pptx with python-pptx: a cover, then a title, text and native charts per slide.

Templates (``PlanSolveSettings.template``, ``--template``):

- ``dominds`` (default): 16:9, a coloured title band, the text on the left and the charts beside or
  below it, one accent palette, a footer with the slide number.
- ``plain``: python-pptx's default 4:3 white template, nothing drawn beyond the placeholders.
- a path to a ``.pptx``/``.potx`` file: its masters and layouts; the cover uses its "Title Slide"
  layout and the slides its "Title Only" layout (else the first layout with a title placeholder), with
  text and charts placed below the title. Its own slides are kept out of the deck.

Text sizes are chosen to fit their boxes (text_fit.py): titles shrink before they wrap past two lines,
long text shrinks and is cut with "…" as a last resort, chart labels are shortened, and a bar chart with
long or many labels turns horizontal. Charts are native (editable in PowerPoint/LibreOffice), not pictures.
python-pptx 1.0 ships partial type hints; its chart classes are untyped, hence the targeted ignores. This
module is the only place that touches python-pptx.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.dml.color import RGBColor
from pptx.enum.chart import XL_CHART_TYPE, XL_LABEL_POSITION, XL_LEGEND_POSITION
from pptx.enum.shapes import MSO_SHAPE
from pptx.enum.text import MSO_ANCHOR, PP_ALIGN
from pptx.util import Emu, Inches, Pt

from dominds.workflows.plan_solve.settings import BUILTIN_TEMPLATES
from dominds.workflows.plan_solve.text_fit import cut_to_fit, fit_font, short_label, text_em

_CHART_TYPES = {
    "bar": XL_CHART_TYPE.COLUMN_CLUSTERED,
    "line": XL_CHART_TYPE.LINE_MARKERS,
    "pie": XL_CHART_TYPE.PIE,
    "area": XL_CHART_TYPE.AREA,
}


def _rgb(hex_code: str) -> RGBColor:
    color: RGBColor = RGBColor.from_string(hex_code)  # type: ignore[no-untyped-call]
    return color


TITLE_SIZES = (32.0, 28.0, 24.0, 20.0)
TEXT_SIZES = (20.0, 18.0, 16.0, 14.0, 12.0)
INK = _rgb("1F2937")
MUTED = _rgb("6B7280")
BAND = _rgb("1E3A5F")
PALETTE = (_rgb("2563EB"), _rgb("F59E0B"), _rgb("10B981"), _rgb("EF4444"),
           _rgb("8B5CF6"), _rgb("06B6D4"), _rgb("EC4899"), _rgb("84CC16"))  # fmt: skip


class TemplateError(ValueError):
    """The chosen template cannot be used (the message says why)."""


@dataclass(frozen=True)
class _Box:
    left: float
    top: float
    width: float
    height: float
    """Inches."""


def check_template(template: str) -> None:
    """Raise ``TemplateError`` unless ``template`` is a built-in name or a readable .pptx/.potx file."""
    if template in BUILTIN_TEMPLATES:
        return
    path = Path(template)
    if path.suffix.lower() not in (".pptx", ".potx"):
        raise TemplateError(f"template {template!r}: use {' or '.join(BUILTIN_TEMPLATES)}, or a .pptx/.potx file")
    if not path.is_file():
        raise TemplateError(f"template {template!r}: no such file")
    try:
        Presentation(str(path))
    except Exception as exc:  # python-pptx raises several kinds for a broken package
        raise TemplateError(f"template {template!r} cannot be opened: {exc}") from exc


def write_pptx(slides: list[dict[str, Any]], path: Path, *, cover: dict[str, str] | None = None, template: str = "dominds") -> int:
    """Write the deck; returns the number of slides written (the cover included)."""
    check_template(template)
    deck = _open(template)
    styled = template == "dominds"
    if cover is not None:
        _cover(deck, cover, styled)
    for number, slide in enumerate(slides, 2 if cover else 1):
        _content(deck, slide, styled, number)
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(str(path))
    return len(deck.slides)


def _open(template: str) -> Any:
    if template in BUILTIN_TEMPLATES:
        deck = Presentation()
        if template == "dominds":
            deck.slide_width, deck.slide_height = Inches(13.333), Inches(7.5)
        return deck
    deck = Presentation(template)
    slide_ids = deck.slides._sldIdLst  # a template's own slides are examples, not part of the deck
    for slide_id in list(slide_ids):
        deck.part.drop_rel(slide_id.rId)
        slide_ids.remove(slide_id)
    return deck


def _layout(deck: Any, names: tuple[str, ...], fallback: int) -> Any:
    for layout in deck.slide_layouts:
        if layout.name in names:
            return layout
    for layout in deck.slide_layouts:
        if any(p.placeholder_format.type is not None and "TITLE" in str(p.placeholder_format.type) for p in layout.placeholders):
            return layout
    return deck.slide_layouts[min(fallback, len(deck.slide_layouts) - 1)]


def _size(deck: Any) -> tuple[float, float]:
    return Emu(deck.slide_width).inches, Emu(deck.slide_height).inches


def _cover(deck: Any, cover: dict[str, str], styled: bool) -> None:
    width, height = _size(deck)
    if styled:
        page = deck.slides.add_slide(deck.slide_layouts[6])  # blank
        _rect(page, _Box(0, 0, width, height), BAND)
        _rect(page, _Box(0.8, 3.55, 1.6, 0.08), PALETTE[1])
        _text(page, cover.get("title", ""), _Box(0.8, 1.3, width - 1.6, 2.1), (44.0, 40.0, 36.0, 30.0, 26.0), bold=True,
              color=_rgb("FFFFFF"), anchor=MSO_ANCHOR.BOTTOM)  # fmt: skip
        _text(page, cover.get("subtitle", ""), _Box(0.8, 3.85, width - 1.6, 2.4), (20.0, 18.0, 16.0, 14.0),
              color=_rgb("D1DBE8"))  # fmt: skip
        return
    page = deck.slides.add_slide(_layout(deck, ("Title Slide",), 0))
    title = page.shapes.title
    if title is not None:
        box = _box_of(title)
        text, size = cut_to_fit(cover.get("title", ""), (40.0, *TITLE_SIZES), box.width, box.height)
        title.text_frame.text = text
        _font(title.text_frame, size, bold=True)
    subtitle = next((p for p in page.placeholders if p.placeholder_format.idx == 1), None)
    if subtitle is not None:
        box = _box_of(subtitle)
        text, size = cut_to_fit(cover.get("subtitle", ""), TEXT_SIZES, box.width, box.height)
        subtitle.text_frame.text = text
        _font(subtitle.text_frame, size)


def _content(deck: Any, slide: dict[str, Any], styled: bool, number: int) -> None:
    width, height = _size(deck)
    charts = [c for c in slide.get("charts") or [] if c.get("data")][:2]
    if styled:
        page = deck.slides.add_slide(deck.slide_layouts[6])
        _rect(page, _Box(0, 0, width, 1.15), BAND)
        _text(page, str(slide.get("title", "")), _Box(0.6, 0.12, width - 1.2, 0.95), TITLE_SIZES, bold=True,
              color=_rgb("FFFFFF"), anchor=MSO_ANCHOR.MIDDLE)  # fmt: skip
        _text(page, str(number), _Box(width - 1.1, height - 0.5, 0.6, 0.35), (11.0,), color=MUTED, align=PP_ALIGN.RIGHT)
        top = 1.45
    else:
        page = deck.slides.add_slide(_layout(deck, ("Title Only",), 5))
        top = 1.6
        if page.shapes.title is not None:
            box = _box_of(page.shapes.title)
            text, size = cut_to_fit(str(slide.get("title", "")), TITLE_SIZES, box.width, box.height)
            page.shapes.title.text_frame.text = text
            _font(page.shapes.title.text_frame, size, bold=True)
            top = box.top + box.height + 0.2
    area = _Box(0.6, top, width - 1.2, height - top - 0.6)
    text = str(slide.get("text", ""))
    if not charts:
        _text(page, text, area, (24.0, *TEXT_SIZES), color=INK)
        return
    if len(charts) == 1 and width / height > 1.5:  # wide slide: text left, chart right
        text_box = _Box(area.left, area.top, area.width * 0.34, area.height)
        chart_boxes = [_Box(area.left + area.width * 0.37, area.top, area.width * 0.63, area.height)]
    else:  # text on top, charts side by side below
        text_height = min(1.6, area.height * 0.3)
        text_box = _Box(area.left, area.top, area.width, text_height)
        chart_top, gap = area.top + text_height + 0.15, 0.3
        chart_width = (area.width - gap * (len(charts) - 1)) / len(charts)
        chart_boxes = [
            _Box(area.left + i * (chart_width + gap), chart_top, chart_width, area.top + area.height - chart_top)
            for i in range(len(charts))
        ]
    _text(page, text, text_box, TEXT_SIZES, color=INK)
    for chart, box in zip(charts, chart_boxes, strict=True):
        _chart(page, chart, box, styled)


def _chart(page: Any, chart: dict[str, Any], box: _Box, styled: bool) -> None:
    points = chart["data"]
    kind = _CHART_TYPES.get(str(chart.get("type", "bar")), XL_CHART_TYPE.COLUMN_CLUSTERED)
    names = [str(p["name"]) for p in points]
    if kind == XL_CHART_TYPE.COLUMN_CLUSTERED and (len(names) > 8 or max(text_em(n) for n in names) > 10):
        kind = XL_CHART_TYPE.BAR_CLUSTERED  # long or many labels read better down the side
    room_em = 22.0 if kind in (XL_CHART_TYPE.BAR_CLUSTERED, XL_CHART_TYPE.PIE) else max(6.0, 60.0 / max(1, len(names)))
    data = CategoryChartData()  # type: ignore[no-untyped-call]
    data.categories = [short_label(n, room_em) for n in names]
    values = [float(p["value"]) for p in points]
    data.add_series(str(chart.get("title") or "Value"), values)  # type: ignore[no-untyped-call]
    graphic = page.shapes.add_chart(kind, Inches(box.left), Inches(box.top), Inches(box.width), Inches(box.height), data).chart
    title = str(chart.get("title") or "")
    graphic.has_title = bool(title)
    if title:
        graphic.chart_title.text_frame.text = short_label(title, box.width * 72 / 14 * 1.6)
        _font(graphic.chart_title.text_frame, fit_font(title, (14.0, 12.0, 11.0), box.width, 0.5), bold=True)
    graphic.font.size = Pt(11 if len(names) <= 12 else 9)
    graphic.font.color.rgb = INK
    number_format = _number_format(values)
    if kind == XL_CHART_TYPE.PIE:
        graphic.has_legend = True
        graphic.legend.position = XL_LEGEND_POSITION.RIGHT
        graphic.legend.include_in_layout = False
        plot = graphic.plots[0]
        plot.has_data_labels = True
        plot.data_labels.show_percentage, plot.data_labels.show_value = True, False
        plot.data_labels.number_format, plot.data_labels.number_format_is_linked = "0%", False
        if styled:
            for index, point in enumerate(plot.series[0].points):
                point.format.fill.solid()
                point.format.fill.fore_color.rgb = PALETTE[index % len(PALETTE)]
        return
    graphic.has_legend = False
    graphic.value_axis.tick_labels.number_format = number_format
    graphic.value_axis.tick_labels.number_format_is_linked = False
    graphic.value_axis.has_major_gridlines = True
    if min(values) >= 0:  # a bar starting above zero exaggerates differences
        graphic.value_axis.minimum_scale = 0
    if styled:
        graphic.value_axis.major_gridlines.format.line.color.rgb = _rgb("E5E7EB")
        series = graphic.plots[0].series[0]
        if kind in (XL_CHART_TYPE.LINE_MARKERS,):
            series.format.line.color.rgb = PALETTE[0]
            series.format.line.width = Pt(2.5)
        else:
            series.format.fill.solid()
            series.format.fill.fore_color.rgb = PALETTE[0]
    if len(points) <= 12 and kind != XL_CHART_TYPE.AREA:
        plot = graphic.plots[0]
        plot.has_data_labels = True
        plot.data_labels.number_format, plot.data_labels.number_format_is_linked = number_format, False
        plot.data_labels.font.size = Pt(10)
        if kind in (XL_CHART_TYPE.COLUMN_CLUSTERED, XL_CHART_TYPE.BAR_CLUSTERED):
            plot.data_labels.position = XL_LABEL_POSITION.OUTSIDE_END
        else:
            plot.data_labels.position = XL_LABEL_POSITION.ABOVE


def _number_format(values: list[float]) -> str:
    """Millions as ``2.34M``, thousands as ``1,298K``, else plain (one decimal where the data has them)."""
    largest = max(abs(v) for v in values)
    if largest >= 1_000_000:
        return '#,##0.00,,"M"'
    if largest >= 10_000:
        return '#,##0,"K"'
    return "#,##0" if all(float(v).is_integer() for v in values) else "#,##0.0#"


def _text(page: Any, text: str, box: _Box, sizes: tuple[float, ...], *, bold: bool = False, color: RGBColor = INK,
          anchor: Any = MSO_ANCHOR.TOP, align: Any = None) -> None:  # fmt: skip
    shape = page.shapes.add_textbox(Inches(box.left), Inches(box.top), Inches(box.width), Inches(box.height))
    frame = shape.text_frame
    frame.word_wrap = True
    frame.vertical_anchor = anchor
    for side in ("margin_left", "margin_right", "margin_top", "margin_bottom"):
        setattr(frame, side, Inches(0.05))
    fitted, size = cut_to_fit(text, sizes, box.width - 0.1, box.height - 0.1)
    frame.text = fitted
    _font(frame, size, bold=bold, color=color)
    if align is not None:
        for paragraph in frame.paragraphs:
            paragraph.alignment = align


def _font(frame: Any, size: float, *, bold: bool = False, color: RGBColor | None = None) -> None:
    for paragraph in frame.paragraphs:
        for run in paragraph.runs:
            run.font.size = Pt(size)
            run.font.bold = bold
            if color is not None:
                run.font.color.rgb = color


def _rect(page: Any, box: _Box, color: RGBColor) -> None:
    shape = page.shapes.add_shape(MSO_SHAPE.RECTANGLE, Inches(box.left), Inches(box.top), Inches(box.width), Inches(box.height))
    shape.fill.solid()
    shape.fill.fore_color.rgb = color
    shape.line.fill.background()
    shape.shadow.inherit = False


def _box_of(shape: Any) -> _Box:
    return _Box(Emu(shape.left).inches, Emu(shape.top).inches, Emu(shape.width).inches, Emu(shape.height).inches)
