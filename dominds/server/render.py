"""Markdown → sanitised HTML for finished segments (markdown-it-py, then nh3).

The panel shows plain text while a segment streams and swaps in this HTML when the segment finishes,
so the browser never parses model output as HTML itself. Raw HTML in the markdown is escaped by
markdown-it (``html: False``) and nh3 removes anything unsafe that the renderer could still produce.
Images are dropped on purpose: a model-written ``![](http://…)`` would make the panel fetch a remote
URL, and the daemon is local-first.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from dominds.tellask import MarkdownChunk, MarkdownFinish, MarkdownStart, TellaskParser

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt  # on the first finished segment: start-up does not need it

    return MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"])


@lru_cache(maxsize=1)
def _allowed_tags() -> frozenset[str]:
    import nh3

    return frozenset(nh3.ALLOWED_TAGS - {"img", "map", "area"})


def render_markdown(text: str) -> str:
    """Sanitised HTML of one markdown text."""
    import nh3

    html = _renderer().render(text)
    return str(
        nh3.clean(
            html,
            tags=set(_allowed_tags()),
            link_rel="noopener noreferrer",
            set_tag_attribute_values={"a": {"target": "_blank"}},
        )
    )


def markdown_runs(saying: str) -> list[str]:
    """The markdown runs of a saying segment, in the order the live parser announced them.

    A saying interleaves markdown with Tellask blocks; the live stream emits one
    ``markdown_start_evt`` … ``markdown_finish_evt`` per run. Parsing the finished text again with a
    fresh parser gives the same runs (the parser is chunk-invariant), so index *i* of this list is
    the *i*-th markdown run the client saw streaming.
    """
    parser = TellaskParser()
    runs: list[str] = []
    current: list[str] | None = None
    for event in [*parser.feed(saying), *parser.finish()]:
        if isinstance(event, MarkdownStart):
            current = []
        elif isinstance(event, MarkdownChunk) and current is not None:
            current.append(event.text)
        elif isinstance(event, MarkdownFinish) and current is not None:
            runs.append("".join(current))
            current = None
    if current is not None:
        runs.append("".join(current))
    return runs


def render_saying(saying: str) -> list[str]:
    """``markdownHtml`` of a finished saying: one sanitised HTML string per markdown run."""
    return [render_markdown(run) for run in markdown_runs(saying)]
