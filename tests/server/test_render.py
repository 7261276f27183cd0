"""Server-side markdown: rendered with markdown-it-py, sanitised with nh3, aligned with the live runs."""

from __future__ import annotations

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
    html = render_markdown("a\nb\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n```py\nprint(1)\n```\n")
    assert "a<br />\nb" in html or "a<br>\nb" in html
    assert "<table>" in html and "<td>1</td>" in html and "<pre><code" in html


def test_saying_runs_match_the_live_markdown_runs_around_tellask_blocks() -> None:
    saying = "Before **one**.\n!?@coder do X\n!?details\nAfter *two*.\n!?@human ok?\n"
    assert markdown_runs(saying) == ["Before **one**.\n", "After *two*.\n"]
    assert render_saying(saying) == ["<p>Before <strong>one</strong>.</p>\n", "<p>After <em>two</em>.</p>\n"]
    assert render_saying("!?@human only a call\n") == []
