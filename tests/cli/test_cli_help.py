"""Help and docs are complete; terminal rendering follows the colour rules and keeps its layout."""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from dominds.cli.main import build_parser
from dominds.cli.render import EventRenderer, JsonLinesSink, Style, TranscriptWriter, age, colour_enabled

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_top_level_help_lists_every_command() -> None:
    done = subprocess.run([sys.executable, "-m", "dominds", "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    for name in _subcommands():
        assert re.search(rf"^\s+{re.escape(name)}\b", done.stdout, re.M), name


def test_top_level_help_starts_with_what_a_new_user_reaches_for() -> None:
    """Bug: `dominds --help` listed the commands by module name (check, debate, init, done, …) and said
    nothing of where to start; a newcomer looked for `serve` and the demo."""
    text = build_parser().format_help()
    listed = [m.group(1) for m in re.finditer(r"^    (\S+)", text, re.M)]
    assert listed[:5] == ["serve", "url", "status", "run", "tell"], listed
    assert listed.index("check") < listed.index("debate") and listed[-1] == "tot-mcp", listed
    assert "start here:\n  dominds serve --demo " in text


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_each_command_has_complete_help_and_a_documented_example(name: str) -> None:
    parser = _subcommands()[name]
    text = parser.format_help()
    assert parser.description or parser.format_usage(), name
    for action in parser._actions:
        for option in action.option_strings:
            assert option in text, f"{name}: {option}"
        if action.option_strings and action.help is None and not action.choices:
            pytest.fail(f"{name}: {action.option_strings[0]} has no help text")
    docs = DOCS.read_text()
    assert re.search(rf"^### .*`dominds {re.escape(name)}\b", docs, re.M), f"docs/cli.md has no section for {name}"
    examples = "\n".join(re.findall(r"^```sh\n(.*?)^```", docs, re.M | re.S))
    assert re.search(rf"\bdominds {re.escape(name)}\b", examples), f"docs/cli.md has no example of {name}"


def test_colour_only_on_a_tty_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert colour_enabled(Tty()) and not colour_enabled(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour_enabled(Tty())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not colour_enabled(Tty()), "NO_COLOR wins"
    monkeypatch.delenv("NO_COLOR")
    assert colour_enabled(io.StringIO())
    assert Style(True)("thought", "dim") == "\x1b[2mthought\x1b[0m" and Style(False)("thought", "dim") == "thought"


def test_streamed_chunks_keep_their_prefix_on_every_line() -> None:
    out = io.StringIO()
    renderer = EventRenderer(TranscriptWriter(out, Style(False)), followed={"d1"}, root_id="d1", agents={"d1": "lead"})
    dialog = {"selfId": "d1", "rootId": "d1"}
    events = [
        {"type": "generating_start_evt"},
        {"type": "thinking_start_evt"},
        {"type": "thinking_chunk_evt", "chunk": "first th"},
        {"type": "thinking_chunk_evt", "chunk": "ought\nsecond"},
        {"type": "thinking_finish_evt"},
        {"type": "markdown_start_evt"},
        {"type": "markdown_chunk_evt", "chunk": "Hello\nwor"},
        {"type": "markdown_chunk_evt", "chunk": "ld\n"},
        {"type": "teammate_call_start_evt", "validation": "valid"},
        {"type": "teammate_call_headline_chunk_evt", "chunk": "@coder do X"},
        {"type": "teammate_call_headline_finish_evt"},
        {"type": "teammate_call_body_chunk_evt", "chunk": "line 1\nline 2"},
        {"type": "teammate_call_body_finish_evt"},
    ]
    for event in events:
        renderer.feed({**event, "dialog": dialog})
    renderer.feed({"type": "dlg_run_state_evt", "runState": {"kind": "proceeding"}, "dialog": {"selfId": "s1", "rootId": "d1"}})
    renderer.feed({"type": "markdown_chunk_evt", "chunk": "other tree", "dialog": {"selfId": "x", "rootId": "x"}})
    assert out.getvalue() == (
        "@lead\n"
        "  ┆ first thought\n"
        "  ┆ second\n"
        "  Hello\n"
        "  world\n"
        "  ⇢ @coder do X\n"
        "    │ line 1\n"
        "    │ line 2\n"
        "  … a teammate (s1) is working\n"
    )


def test_json_sink_and_relative_ages() -> None:
    out = io.StringIO()
    JsonLinesSink(out).feed({"type": "x", "n": 1})
    assert out.getvalue() == '{"type": "x", "n": 1}\n'
    now = datetime.now().astimezone()
    assert age((now - timedelta(seconds=42)).isoformat(), now) == "42s ago"
    assert age((now - timedelta(hours=3, minutes=5)).isoformat(), now) == "3h ago"
    assert age(None) == "-"
