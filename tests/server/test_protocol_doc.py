"""docs/protocol.md §5 is generated from the typed event models and must be up to date (issue 18).

The bug: outgoing events were untyped dicts, documented by hand in a table that could drift from the
code. Now every message the daemon sends has a model in ``dominds/events`` (the autouse fixture in
tests/conftest.py checks every frame of every test against it) and the reference is generated.
"""

from __future__ import annotations

from dominds.events import MODELS
from dominds.server import wire
from dominds.server.protocol_doc import BEGIN, END, PROTOCOL_DOC, protocol_reference, updated_doc


def test_the_protocol_reference_is_generated_from_the_models_and_up_to_date() -> None:
    text = PROTOCOL_DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    assert updated_doc(text) == text, "docs/protocol.md is stale: run `python -m dominds.server.protocol_doc`"
    reference = protocol_reference()
    for kind in MODELS:
        assert f"#### `{kind}`" in reference, kind


def test_an_undocumented_field_or_type_is_caught() -> None:
    wire.VIOLATIONS.clear()
    wire.check_outgoing({"type": "markdown_chunk_evt", "chunk": "x", "course": 1, "genseq": 1, "seq": 3, "epoch": "e", "timestamp": "t"})
    assert wire.VIOLATIONS == []
    wire.check_outgoing({"type": "markdown_chunk_evt", "chunk": "x", "course": 1, "genseq": 1, "colour": "red"})
    wire.check_outgoing({"type": "no_such_evt"})
    wire.check_outgoing({"type": "ack"})
    wire.check_text("not json")
    problems, wire.VIOLATIONS[:] = list(wire.VIOLATIONS), []
    assert len(problems) == 4
    assert "colour" in problems[0] and "no_such_evt" in problems[1] and "requestType" in problems[2]
