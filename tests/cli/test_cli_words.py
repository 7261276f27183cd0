"""What users read speaks the product's words: "ask-back", "session", "fresh tellask", "question"; no seed
numbers, no TYPE letters, no internal member names, never `@None`."""

from __future__ import annotations

import re
from pathlib import Path

from test_cli_kit import dominds, dominds_json

from dominds.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]
INTERNAL = re.compile(r"(?i:\bseed\b|\btype [ABC]\b|\bfuxi\b|\bpangu\b)|\bQ4H\b|@None|@\?")
"""`q4h` is a command and the start of question ids; "Q4H" as a word is the seed's."""


def _internal_words(text: str) -> list[str]:
    return sorted({m.group(0) for m in INTERNAL.finditer(text)})


def test_a_demo_walkthrough_and_every_help_text_use_the_products_words(tmp_path: Path) -> None:
    """Bug: users met "seed 000" (tot help), "TYPE B" (status), "hidden fuxi, pangu" (check) and "@None"."""
    init = dominds(tmp_path, "init", "ws")
    assert init.returncode == 0, init.stderr
    ws = tmp_path / "ws"
    seen: list[str] = [init.stdout]

    def say(*args: str) -> str:
        done = dominds(ws, *args)
        seen.append(done.stdout + done.stderr)
        return done.stdout

    say("run", "Research the demo task")
    say("run", "Ask me a question")
    say("q4h")
    say("answer", "markdown report", "--follow")
    root = dominds_json(ws, "status")["roots"][0]["selfId"]
    say("tell", root, "Build it with the coder", "--follow")
    session = say("status")
    assert "session coder!demo-build → " in session and "!demo-build" in session, session
    assert "[ask-back from @coder]" in say("show", root)
    say("check", "--no-connect")
    say("tot", "4 9 10 13")
    say("debate", "Help me plan three months of IELTS preparation", "--out", str(tmp_path / "report.md"))
    transcript = "\n".join(seen)
    assert "(session)" in transcript and "(fresh tellask)" in transcript, transcript
    assert _internal_words(transcript) == [], transcript

    parser = build_parser()
    helps = [parser.format_help()]
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        helps += [sub.format_help() for sub in getattr(action, "choices", {}).values()]
    assert _internal_words("\n".join(helps)) == []


def test_the_panel_strings_and_the_command_reference_use_the_products_words() -> None:
    """Bug: the workflow guides linked from the README were titled "(seed 000)"… and spoke of "the seed's"
    messages; the tellask guide's examples called the hidden member `pangu`."""
    i18n = (REPO / "dominds" / "static" / "i18n.js").read_text()
    english = i18n.split("  zh: {", 1)[0]
    assert _internal_words(english) == []
    assert _internal_words((REPO / "docs" / "cli.md").read_text()) == []
    assert _internal_words((REPO / "README.md").read_text()) == []
    # The guides a user reads (configuration.md, tools.md and mcp.md document the hidden members by name,
    # and providers.md OpenAI's `seed` parameter: there the words are the product's).
    for guide in ("panel", "tellask", "taskdoc", "tot", "debate", "plan-solve", "tot-mcp", "protocol"):
        assert _internal_words((REPO / "docs" / f"{guide}.md").read_text()) == [], guide
    pages = [REPO / "dominds" / "static" / "workflow_i18n.js", *(REPO / "dominds" / "workflows").glob("*/static/*.*")]
    for page in pages:
        text = "\n".join(line for line in page.read_text().splitlines() if not line.lstrip().startswith(("//", "/*", "*")))
        assert _internal_words(text.split("  zh: {", 1)[0]) == [], page.name
    demo = (REPO / "rtws-template" / ".minds" / "scripted" / "demo.yaml").read_text()
    assert _internal_words("\n".join(line for line in demo.splitlines() if line.lstrip().startswith("#"))) == []
