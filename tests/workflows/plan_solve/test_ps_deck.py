"""The deck a run writes: its own folder, a cover, the chosen template, and text that fits its boxes.

Bugs pinned here: every run overwrote ``workdir/ppt/presentation.pptx``; the deck had no cover; the
template could not be chosen; long titles and labels ran off the slide.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pptx import Presentation
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Emu, Inches
from ps_kit import deck_of, names, planner, solver, world

from dominds.cli.main import main
from dominds.workflows.plan_solve.run_record import RUN_FILE
from dominds.workflows.plan_solve.text_fit import text_em, wrapped_lines


def shapes_inside(deck: Any) -> None:
    for number, slide in enumerate(deck.slides, 1):
        for shape in slide.shapes:
            assert shape.left >= 0 and shape.top >= 0, (number, shape.name)
            assert shape.left + shape.width <= deck.slide_width, (number, shape.name)
            assert shape.top + shape.height <= deck.slide_height, (number, shape.name)


def texts(slide: Any) -> list[str]:
    return [shape.text_frame.text for shape in slide.shapes if shape.has_text_frame and shape.text_frame.text]


async def test_each_run_has_its_own_folder_a_cover_and_a_run_record(serve: Any) -> None:
    served = await serve(world([1, 2]))
    sock = await served.session()
    decks = []
    for question in ("First deck please", "Second deck please"):
        await sock.ask(question)
        events = await sock.finish()
        assert names(events)[-1] == "agent.final_answer"
        decks.append(deck_of(events))
        root_id = events[0]["metadata"]["dialog_id"]
        assert deck_of(events).parent.name.endswith(root_id), "the folder is named after the run"
        record = json.loads((served.engine.get_dialog(root_id).files.dir / RUN_FILE).read_text())
        assert record["status"] == "completed" and record["question"] == question
        assert Path(record["deck"]["pptx"]) == decks[-1] and record["deck"]["slides"] == 3
    assert decks[0] != decks[1] and all(d.is_file() for d in decks), "the second run did not overwrite the first"
    cover = Presentation(str(decks[1])).slides[0]
    assert "Second deck please" in texts(cover)[0], "without a planned title the question names the deck"
    assert any("A plan" in t for t in texts(cover)), "the plan summary is the subtitle"


LONG_TITLE = "Quarterly revenue, margin and channel performance across every region " * 3
LONG_TEXT = ("Revenue grew in every region while margins held steady; 收入在所有地区都有增长，利润率保持稳定。 " * 40).strip()
LONG_LABELS = [f"Product line number {i} with a very long descriptive name" for i in range(20)]


async def test_long_titles_texts_and_labels_are_fitted_inside_the_slide(serve: Any) -> None:
    slide = {
        "id": 1,
        "title": LONG_TITLE,
        "text": LONG_TEXT,
        "charts": [{"type": "bar", "title": "Revenue by product line", "data": [{"name": n, "value": 1000 + i} for i, n in enumerate(LONG_LABELS)]}],
    }
    plan = json.dumps({"title": LONG_TITLE, "plan_summary": "One dense slide", "tasks": [{"id": 1, "title": "Dense", "objective": "x"}]})
    served = await serve([planner(plan), solver(1, response=json.dumps(slide))])
    sock = await served.session()
    await sock.ask()
    events = await sock.finish()
    deck = Presentation(str(deck_of(events)))
    shapes_inside(deck)
    page = deck.slides[1]
    title = texts(page)[0]
    text = next(t for t in texts(page) if t.startswith("Revenue grew"))
    sizes = {
        shape.text_frame.text: shape.text_frame.paragraphs[0].runs[0].font.size.pt
        for shape in page.shapes
        if shape.has_text_frame and shape.text_frame.text
    }
    assert title.endswith("…") and sizes[title] == 20.0, "a title too long for two lines at 20 pt is cut"
    assert text.endswith("…") and sizes[text] == 12.0 and len(text) < len(LONG_TEXT)
    [chart] = [shape.chart for shape in page.shapes if shape.has_chart]
    assert chart.chart_type == XL_CHART_TYPE.BAR_CLUSTERED, "20 long labels read down the side"
    categories = list(chart.plots[0].categories)
    assert len(categories) == 20 and all(text_em(c) <= 22.0 for c in categories)
    assert all(c.endswith("…") for c in categories)
    assert list(chart.series[0].values) == [1000.0 + i for i in range(20)], "labels are cut, never the data"
    cover = next(shape for shape in deck.slides[0].shapes if shape.has_text_frame and shape.text_frame.text)
    cover_title, size = cover.text_frame.text, cover.text_frame.paragraphs[0].runs[0].font.size.pt
    assert cover_title == LONG_TITLE.strip() or cover_title.endswith("…")
    lines = wrapped_lines(cover_title, size, Emu(cover.width).inches - 0.1)
    assert lines * size * 1.2 <= (Emu(cover.height).inches - 0.1) * 72, "the cover title fits its box"


def make_template(path: Path) -> Path:
    deck = Presentation()
    deck.slide_width, deck.slide_height = Inches(11), Inches(8.5)
    deck.slides.add_slide(deck.slide_layouts[0]).shapes.title.text = "A template's own example slide"
    deck.save(str(path))
    return path


async def test_the_template_can_be_chosen_plain_or_a_file(serve: Any, tmp_path: Path) -> None:
    template = make_template(tmp_path / "corporate.pptx")
    served = await serve(world([1]), template=str(template))
    sock = await served.session()
    await sock.ask("Use my template")
    events = await sock.finish()
    deck = Presentation(str(deck_of(events)))
    assert (Emu(deck.slide_width).inches, Emu(deck.slide_height).inches) == (11.0, 8.5)
    assert [s.slide_layout.name for s in deck.slides] == ["Title Slide", "Title Only"]
    assert "A template's own example slide" not in [t for s in deck.slides for t in texts(s)]
    assert deck.slides[0].shapes.title.text == "Use my template"
    shapes_inside(deck)
    output = next(e for e in events if e["event"] == "aggregate.completed")["content"]["output"]
    assert output["template"] == str(template)

    served = await serve(world([1]), template="plain")
    sock = await served.session()
    await sock.ask()
    deck = Presentation(str(deck_of(await sock.finish())))
    assert (Emu(deck.slide_width).inches, Emu(deck.slide_height).inches) == (10.0, 7.5)
    shapes_inside(deck)
    # the default: 16:9, styled
    served = await serve(world([1]))
    sock = await served.session()
    await sock.ask()
    deck = Presentation(str(deck_of(await sock.finish())))
    assert round(Emu(deck.slide_width).inches, 2) == 13.33 and len(deck.slides) == 2
    shapes_inside(deck)


def test_a_template_that_cannot_be_used_is_refused_before_the_service_starts(
    tmp_path: Path, capsys: Any
) -> None:
    (tmp_path / "broken.pptx").write_text("not a zip")
    for template, message in (
        ("fancy", "use dominds or plain, or a .pptx/.potx file"),
        (str(tmp_path / "missing.pptx"), "no such file"),
        (str(tmp_path / "broken.pptx"), "cannot be opened"),
    ):
        assert main(["plan-solve", "serve", "--scripted", "--port", "0", "--template", template]) != 0
        assert message in capsys.readouterr().err
