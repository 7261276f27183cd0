"""Server-side markdown: rendered with markdown-it-py, sanitised with nh3, aligned with the live runs."""

from __future__ import annotations

import pytest

from dominds.server.render import markdown_runs, render_markdown, render_saying


def test_raw_html_scripts_and_images_never_reach_the_panel() -> None:
    html = render_markdown(
        "<script>alert(1)</script> <img src=x onerror=alert(1)> ![t](http://tracker/x.png)"
    )
    assert "<script" not in html and "<img" not in html, "no tag survives"
    assert "&lt;script&gt;" in html and "&lt;img src=x" in html, "raw HTML is shown as text"


def test_links_are_safe_and_open_elsewhere() -> None:
    html = render_markdown("[ok](https://example.org) [bad](javascript:alert(1))")
    assert (
        'href="https://example.org"' in html
        and 'rel="noopener noreferrer"' in html
        and 'target="_blank"' in html
    )
    assert 'href="javascript' not in html and "[bad](javascript:alert(1))" in html, "left as plain text"


def test_tables_code_and_soft_breaks() -> None:
    """Issue 36 item 15: a single newline (a soft break) was rendered as a hard ``<br>``; CommonMark
    keeps it soft, and only two trailing spaces or a backslash make a hard break."""
    html = render_markdown("a\nb\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n```py\nprint(1)\n```\n")
    assert "<p>a\nb</p>" in html and "<br" not in html
    assert "<br" in render_markdown("a  \nb") and "<br" in render_markdown("a\\\nb")
    assert "<table>" in html and "<td>1</td>" in html
    assert '<pre class="highlight" data-lang="py"><code><span class="nb">print</span>' in html


def test_code_is_highlighted_on_the_server_and_stays_safe() -> None:
    """Issue 18: code blocks were plain; now Pygments highlights them, and only its token classes pass nh3."""
    html = render_markdown('```python\nx = "<script>alert(1)</script>"  # note\n```\n')
    assert '<span class="n">x</span>' in html and '<span class="c1"># note</span>' in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    weird = render_markdown('```x" onmouseover="alert(1)\ncode\n```\n')
    assert weird == "<pre><code>code\n</code></pre>\n", "the info string never becomes an attribute"
    plain = render_markdown("```nosuchlanguage\n<b>bold?</b>\n```\n")
    assert "<pre><code>&lt;b&gt;bold?&lt;/b&gt;" in plain, "an unknown language is shown plain"
    assert render_markdown("``` \n1\n```\n").startswith("<pre><code>")
    huge = render_markdown("```python\n" + "x = 1\n" * 30_000 + "```\n")
    assert "<span" not in huge, "a huge block is not highlighted (bounded work)"


def test_highlight_css_covers_light_and_dark() -> None:
    from dominds.server.render import highlight_css

    css = highlight_css()
    assert ".md pre.highlight .k " in css and "@media (prefers-color-scheme: dark)" in css


def test_saying_runs_match_the_live_markdown_runs_around_tellask_blocks() -> None:
    saying = "Before **one**.\n!?@coder do X\n!?details\nAfter *two*.\n!?@human ok?\n"
    assert markdown_runs(saying) == ["Before **one**.\n", "After *two*.\n"]
    assert render_saying(saying) == ["<p>Before <strong>one</strong>.</p>\n", "<p>After <em>two</em>.</p>\n"]
    assert render_saying("!?@human only a call\n") == []


def test_a_short_text_rendered_again_soon_is_rendered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21: a subdialog's last saying and the response its caller receives are the same text, and a
    fan-out's answers are alike; each was rendered again (markdown-it and nh3, ~0.2 ms apiece)."""
    from dominds.server import render

    calls: list[str] = []
    real = render._render
    monkeypatch.setattr(render, "_render", lambda text: calls.append(text) or real(text))
    render._render_memo.cache_clear()
    short = "Part **one** done."
    assert render.render_markdown(short) == render.render_markdown(short) == real(short)
    assert calls == [short]
    long = "word " * (render.MEMO_MAX_CHARS // 4)
    render.render_markdown(long)
    render.render_markdown(long)
    assert calls.count(long) == 2, "a long text is not kept"
