"""Tellask parser: every line and headline rule, fed whole and in many chunkings, plus properties."""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterator

import pytest
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.tellask import TellaskParser, parse_segments, segment_to_json, segments_from_events
from dominds.tellask_events import (
    BodyChunk,
    BodyFinish,
    BodyStart,
    CallFinish,
    CallStart,
    HeadlineChunk,
    HeadlineFinish,
    MarkdownChunk,
    MarkdownFinish,
    MarkdownSegment,
    MarkdownStart,
    ParserEvent,
    Segment,
    TellaskCall,
    build_tellask_call,
    tellask_call_id,
)
from dominds.tellask_headline import (
    INVALID_MENTION_ID,
    MISSING_MENTION_PREFIX,
    is_fbr_headline,
    parse_headline,
)

# -- chunkings ----------------------------------------------------------------------------------------


def whole(text: str) -> list[str]:
    return [text]


def per_char(text: str) -> list[str]:
    return list(text)


def three_chars(text: str) -> list[str]:
    return [text[i : i + 3] for i in range(0, len(text), 3)]


def random_chunks(text: str, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    chunks, pos = [], 0
    while pos < len(text):
        size = rng.randint(1, 6)
        chunks.append(text[pos : pos + size])
        pos += size
    return chunks


CHUNKINGS: list[Callable[[str], list[str]]] = [whole, per_char, three_chars, random_chunks]


def feed_all(chunks: list[str]) -> list[ParserEvent]:
    parser = TellaskParser()
    events: list[ParserEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.finish())
    return events


def merged(events: list[ParserEvent]) -> list[ParserEvent]:
    """Events with adjacent text events of one kind joined: the chunking-independent view."""
    out: list[ParserEvent] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, MarkdownChunk | HeadlineChunk | BodyChunk) and type(last) is type(event):
            assert isinstance(last, MarkdownChunk | HeadlineChunk | BodyChunk)
            out[-1] = type(event)(last.text + event.text)
        else:
            out.append(event)
    return out


def segments_for(text: str, chunking: Callable[[str], list[str]]) -> list[Segment]:
    return segments_from_events(feed_all(chunking(text)))


_LINE = re.compile(r"[^\n]*\n|[^\n]+")


def reconstruct(segments: list[Segment]) -> str:
    """Source text back from segments: markdown as is, every call line with its `!?` prefix again."""
    parts: list[str] = []
    for seg in segments:
        if isinstance(seg, MarkdownSegment):
            parts.append(seg.text)
            continue
        parts.extend("!?" + line for line in _LINE.findall(seg.headline) or [""])
        parts.extend("!?" + line for line in _LINE.findall(seg.body))
    return "".join(parts)


# -- expectations -------------------------------------------------------------------------------------


def md(text: str) -> dict[str, object]:
    return {"kind": "markdown", "text": text}


def call(
    headline: str,
    body: str = "",
    first: str | None = None,
    mentions: tuple[str, ...] | None = None,
    session: str | None = None,
    error: str | None = None,
) -> dict[str, object]:
    if first is None and error is None:
        first = re.match(r"@([^\s,]+)", headline).group(1).rstrip(".")  # type: ignore[union-attr]
    return {
        "kind": "tellask",
        "headline": headline,
        "body": body,
        "firstMention": first,
        "mentions": list(mentions if mentions is not None else ((first,) if first else ())),
        "tellaskSession": session,
        "error": error,
    }


def without_ids(segments: list[Segment]) -> list[dict[str, object]]:
    out = []
    for seg in segments:
        data = segment_to_json(seg)
        data.pop("callId", None)
        out.append(data)
    return out


MISSING = "missing_mention_prefix"
INVALID_ID = "invalid_mention_id"
MULTIPLE = "multiple_tellask_sessions"
BAD_SESSION = "invalid_tellask_session"

CASES: list[tuple[str, str, list[dict[str, object]]]] = [
    # §2.1 line rules
    ("column0_call", "!?@pangu do it\n!?now\n", [call("@pangu do it\n", "now\n")]),
    ("markdown_then_call", "Hi.\n!?@pangu x\n", [md("Hi.\n"), call("@pangu x\n")]),
    ("indented_is_markdown", " !?@pangu x\n", [md(" !?@pangu x\n")]),
    ("quoted_is_markdown", "> !?@pangu x\n", [md("> !?@pangu x\n")]),
    ("bulleted_is_markdown", "- !?@pangu x\n", [md("- !?@pangu x\n")]),
    ("midline_is_markdown", "ask !?@pangu x\n", [md("ask !?@pangu x\n")]),
    ("tab_indented_is_markdown", "\t!?@pangu\n", [md("\t!?@pangu\n")]),
    ("lone_bang_is_markdown", "!\n!x\n!!?@a\n", [md("!\n!x\n!!?@a\n")]),
    ("lone_bang_at_eof", "x\n!", [md("x\n!")]),
    ("bang_ends_block", "!?@a x\n!\n", [call("@a x\n"), md("!\n")]),
    ("blank_line_ends_block", "!?@a x\n\n!?@b y\n", [call("@a x\n"), md("\n"), call("@b y\n")]),
    (
        "text_line_ends_block",
        "!?@a x\nthanks\n!?b\n",
        [call("@a x\n"), md("thanks\n"), call("b\n", error=MISSING)],
    ),
    ("crlf_kept_verbatim", "!?@a x\r\n!?b\r\n\r\n", [call("@a x\r\n", "b\r\n"), md("\r\n")]),
    (
        "multiline_headline",
        "!?@a one\n!?@b two\n!?body\n",
        [call("@a one\n@b two\n", "body\n", "a", ("a", "b"))],
    ),
    (
        "body_takes_every_later_line",
        "!?@a h\n!?b\n!?@still body\n!?!tellaskSession s\n",
        [call("@a h\n", "b\n@still body\n!tellaskSession s\n")],
    ),
    ("bare_prefix_is_empty_body_line", "!?@a h\n!?\n!?more\n", [call("@a h\n", "\nmore\n")]),
    ("bare_prefix_in_body", "!?@a h\n!?x\n!?\n", [call("@a h\n", "x\n\n")]),
    ("trailing_bare_prefix_adds_nothing", "!?@a h\n!?", [call("@a h\n")]),
    ("no_trailing_newline", "!?@a h\n!?b", [call("@a h\n", "b")]),
    ("headline_only_at_eof", "!?@pangu do", [call("@pangu do")]),
    ("markdown_at_eof", "plain", [md("plain")]),
    ("empty_input", "", []),
    # first-line validation
    ("missing_prefix", "!?hello\n!?body\n", [call("hello\n", "body\n", error=MISSING)]),
    ("missing_prefix_space", "!? @a\n", [call(" @a\n", error=MISSING, mentions=("a",))]),
    ("bare_first_line", "!?\n!?x\n", [call("\n", "x\n", error=MISSING)]),
    ("bare_first_line_at_eof", "!?", [call("", error=MISSING)]),
    ("invalid_id_dot", "!?@.\n!?body\n", [call("@.\n", "body\n", error=INVALID_ID)]),
    ("invalid_id_space", "!?@ x @b\n", [call("@ x @b\n", error=INVALID_ID, mentions=("b",))]),
    ("invalid_id_at_eof", "!?@", [call("@", error=INVALID_ID)]),
    ("trailing_dots_trimmed", "!?@team.lead. go\n", [call("@team.lead. go\n", first="team.lead")]),
    ("id_ends_at_punctuation", "!?@pangu,please\n", [call("@pangu,please\n", first="pangu")]),
    ("id_ends_at_cr", "!?@pangu\r\n", [call("@pangu\r\n", first="pangu")]),
    ("unicode_id", "!?@盘古 你好\n", [call("@盘古 你好\n", first="盘古")]),
    ("unicode_digits_id", "!?@Ωmega_1-x٣ hi\n", [call("@Ωmega_1-x٣ hi\n", first="Ωmega_1-x٣")]),
    ("combining_mark_ends_id", "!?@e\u0301x\n", [call("@e\u0301x\n", first="e")]),
    # §2.2 mentions
    (
        "all_mentions",
        "!?@a and @b, @a again (cc:@c) mail x@y @@d\n",
        [call("@a and @b, @a again (cc:@c) mail x@y @@d\n", first="a", mentions=("a", "b", "c", "d"))],
    ),
    ("body_mentions_ignored", "!?@a h\n!?see @b\n", [call("@a h\n", "see @b\n")]),
    # §2.2 sessions
    ("session", "!?@a !tellaskSession s1 go\n", [call("@a !tellaskSession s1 go\n", session="s1")]),
    (
        "session_dotted",
        "!?@a !tellaskSession env.check_1\n",
        [call("@a !tellaskSession env.check_1\n", session="env.check_1")],
    ),
    (
        "session_leading_run",
        "!?@a !tellaskSession env-check, ok\n",
        [call("@a !tellaskSession env-check, ok\n", session="env-check")],
    ),
    (
        "session_trailing_dot",
        "!?@a !tellaskSession env.\n",
        [call("@a !tellaskSession env.\n", session="env")],
    ),
    (
        "session_repeated_same",
        "!?@a !tellaskSession s !tellaskSession s\n",
        [call("@a !tellaskSession s !tellaskSession s\n", session="s")],
    ),
    (
        "session_on_later_headline_line",
        "!?@a x\n!?@b !tellaskSession s\n",
        [call("@a x\n@b !tellaskSession s\n", first="a", mentions=("a", "b"), session="s")],
    ),
    (
        "session_multiple",
        "!?@a !tellaskSession s !tellaskSession t\n",
        [call("@a !tellaskSession s !tellaskSession t\n", error=MULTIPLE, first="a")],
    ),
    (
        "session_invalid_digit",
        "!?@a !tellaskSession 1bad\n",
        [call("@a !tellaskSession 1bad\n", error=BAD_SESSION, first="a")],
    ),
    (
        "session_invalid_dotted_part",
        "!?@a !tellaskSession env.1\n",
        [call("@a !tellaskSession env.1\n", error=BAD_SESSION, first="a")],
    ),
    ("session_glued_is_prose", "!?@a x!tellaskSession s\n", [call("@a x!tellaskSession s\n")]),
    ("session_without_id_is_none", "!?@a !tellaskSession\n", [call("@a !tellaskSession\n")]),
    ("session_in_body_ignored", "!?@a x\n!?!tellaskSession s\n", [call("@a x\n", "!tellaskSession s\n")]),
    (
        "line_error_wins_over_session",
        "!?x !tellaskSession 1\n",
        [call("x !tellaskSession 1\n", error=MISSING)],
    ),
]


def case_params() -> Iterator[object]:
    for name, text, expected in CASES:
        for chunking in CHUNKINGS:
            yield pytest.param(text, expected, chunking, id=f"{name}-{chunking.__name__}")


@pytest.mark.parametrize(("text", "expected", "chunking"), list(case_params()))
def test_rules(text: str, expected: list[dict[str, object]], chunking: Callable[[str], list[str]]) -> None:
    segments = segments_for(text, chunking)
    assert without_ids(segments) == expected
    assert segments == parse_segments(text)  # callIds included
    assert reconstruct(segments) == text or (text.endswith("!?") and reconstruct(segments) + "!?" == text)


@pytest.mark.parametrize(("name", "text"), [(name, text) for name, text, _ in CASES])
def test_events_are_chunking_invariant(name: str, text: str) -> None:
    reference = merged(feed_all([text]))
    for chunking in CHUNKINGS[1:]:
        assert merged(feed_all(chunking(text))) == reference, chunking.__name__


# -- events -------------------------------------------------------------------------------------------


def test_event_sequence_for_markdown_call_markdown() -> None:
    call_ = build_tellask_call("@pangu do\n", "b\n")
    assert feed_all(["Hi\n!?@pangu do\n!?b\nbye"]) == [
        MarkdownStart(),
        MarkdownChunk("Hi\n"),
        MarkdownFinish(),
        CallStart(None, "pangu"),
        HeadlineChunk("@pangu do\n"),
        HeadlineFinish(),
        BodyStart(),
        BodyChunk("b\n"),
        BodyFinish(),
        CallFinish(call_),
        MarkdownStart(),
        MarkdownChunk("bye"),
        MarkdownFinish(),
    ]


def test_call_without_body_has_no_body_events() -> None:
    events = feed_all(["!?x\n"])
    assert events == [
        CallStart("missing_mention_prefix", None),
        HeadlineChunk("x\n"),
        HeadlineFinish(),
        CallFinish(build_tellask_call("x\n", "")),
    ]


def test_streaming_holds_back_only_what_is_undecided() -> None:
    parser = TellaskParser()
    # A '!' at column 0 may start `!?`: the markdown before it is out, the '!' is not.
    assert parser.feed("hello\n!") == [MarkdownStart(), MarkdownChunk("hello\n")]
    # `!?@pan` could still grow into a longer id, so the call cannot start yet.
    assert parser.feed("?@pan") == [MarkdownFinish()]
    assert parser.feed("gu do") == [CallStart(None, "pangu"), HeadlineChunk("@pangu do")]
    assert parser.feed(" it\n") == [HeadlineChunk(" it\n")]
    # After a headline line, `!?` alone cannot yet say headline or body.
    assert parser.feed("!?") == []
    assert parser.feed("now") == [HeadlineFinish(), BodyStart(), BodyChunk("now")]
    assert parser.feed("\n!") == [BodyChunk("\n")]
    assert parser.feed("x") == [
        BodyFinish(),
        CallFinish(build_tellask_call("@pangu do it\n", "now\n")),
        MarkdownStart(),
        MarkdownChunk("!x"),
    ]
    assert parser.finish() == [MarkdownFinish()]
    assert parser.finish() == []


def test_markdown_mid_line_is_emitted_at_once() -> None:
    parser = TellaskParser()
    assert parser.feed("a") == [MarkdownStart(), MarkdownChunk("a")]
    assert parser.feed("!?@b") == [MarkdownChunk("!?@b")]


def test_feed_after_finish_is_a_programming_error() -> None:
    parser = TellaskParser()
    parser.finish()
    with pytest.raises(RuntimeError, match="after finish"):
        parser.feed("x")


def test_empty_chunks_produce_nothing() -> None:
    parser = TellaskParser()
    assert parser.feed("") == []
    assert parser.finish() == []


# -- callId -------------------------------------------------------------------------------------------


def test_call_id_formula() -> None:
    expected = hashlib.md5(b"tellask\npangu\n@pangu do it\n\nnow\n\n0").hexdigest()[:8]
    assert tellask_call_id("pangu", "@pangu do it\n", "now\n", 0) == expected
    [only] = parse_segments("!?@pangu do it\n!?now\n")
    assert isinstance(only, TellaskCall)
    assert only.call_id == expected
    assert re.fullmatch(r"[0-9a-f]{8}", only.call_id)


def test_call_id_of_malformed_call_uses_empty_mention() -> None:
    [only] = parse_segments("!?hello\n")
    assert isinstance(only, TellaskCall)
    assert only.call_id == hashlib.md5(b"tellask\n\nhello\n\n\n0").hexdigest()[:8]


def test_call_id_counter_counts_every_block_of_the_parser() -> None:
    text = "!?@a same\n\n!?bad\n\n!?@a same\n"
    first, _, bad, _, third = parse_segments(text)
    assert isinstance(first, TellaskCall) and isinstance(bad, TellaskCall) and isinstance(third, TellaskCall)
    assert first.headline == third.headline
    assert first.call_id == tellask_call_id("a", "@a same\n", "", 0)
    assert bad.call_id == tellask_call_id(None, "bad\n", "", 1)
    assert third.call_id == tellask_call_id("a", "@a same\n", "", 2)
    assert len({first.call_id, bad.call_id, third.call_id}) == 3


def test_call_ids_are_deterministic_and_restart_per_parser() -> None:
    text = "x\n!?@a one\n\n!?@b two\n"
    # (this compared a parse with itself before, which no mutant could fail; the ids are pinned instead)
    first_in_text, second_in_text = (s for s in parse_segments(text) if isinstance(s, TellaskCall))
    assert first_in_text.call_id == tellask_call_id("a", "@a one\n", "", 0)
    assert first_in_text.call_id == "cf78960b", "an id is a stable function of its call, across versions"
    # One parser per saying segment: the same block alone in a segment is block 0 again.
    [alone] = parse_segments("!?@b two\n")
    assert isinstance(second_in_text, TellaskCall) and isinstance(alone, TellaskCall)
    assert second_in_text.call_id == tellask_call_id("b", "@b two\n", "", 1)
    assert alone.call_id == tellask_call_id("b", "@b two\n", "", 0)


def test_lone_surrogate_does_not_break_call_id() -> None:
    [only] = parse_segments("!?@a \ud800\n")
    assert isinstance(only, TellaskCall)
    assert len(only.call_id) == 8


# -- headline helpers and FBR -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headline", "fbr"),
    [
        ("@self think about X\n", True),
        ("@self", True),
        ("@self. go", True),
        ("@self !tellaskSession deep\n", True),
        ("  @self x", True),
        ("@self-check x", False),
        ("@selfish x", False),
        ("@pangu @self x", False),
        ("self x", False),
    ],
)
def test_fbr_detection(headline: str, fbr: bool) -> None:
    assert is_fbr_headline(headline) is fbr


def test_fbr_property_on_parsed_calls() -> None:
    fbr, other = parse_segments("!?@self think\n\n!?@selfish think\n")[::2]
    assert isinstance(fbr, TellaskCall) and isinstance(other, TellaskCall)
    assert fbr.is_fbr and fbr.is_valid and fbr.first_mention == "self"
    assert not other.is_fbr and other.first_mention == "selfish"


def test_special_targets_are_ordinary_mentions() -> None:
    calls = [
        s for s in parse_segments("!?@human q\n\n!?@tellasker q\n\n!?@self q\n") if isinstance(s, TellaskCall)
    ]
    assert [c.first_mention for c in calls] == ["human", "tellasker", "self"]
    assert all(c.is_valid for c in calls)


def test_parse_headline_unpacks_in_documented_order() -> None:
    first, mentions, session, error = parse_headline("@a with @b !tellaskSession env.check_1\n")
    assert (first, mentions, session, error) == ("a", ("a", "b"), "env.check_1", None)
    info = parse_headline("hi @a !tellaskSession x !tellaskSession y")
    assert info.first_mention is None
    assert info.mentions == ("a",)
    assert (info.tellask_session, info.session_error) == (None, "multiple_tellask_sessions")


def test_segment_to_json_shapes() -> None:
    assert segment_to_json(MarkdownSegment("hi\n")) == {"kind": "markdown", "text": "hi\n"}
    data = segment_to_json(build_tellask_call("@a !tellaskSession s\n", "b\n", 3))
    assert data == {
        "kind": "tellask",
        "headline": "@a !tellaskSession s\n",
        "body": "b\n",
        "firstMention": "a",
        "mentions": ["a"],
        "tellaskSession": "s",
        "error": None,
        "callId": tellask_call_id("a", "@a !tellaskSession s\n", "b\n", 3),
    }


# -- properties ---------------------------------------------------------------------------------------

# Pieces that hit the grammar's edges far more often than uniform text would.
_PIECES = st.sampled_from(
    [
        "!",
        "?",
        "!?",
        "!?@",
        "@",
        "\n",
        "\r",
        " ",
        ".",
        "a",
        "self",
        "盘古",
        "\x00",
        "!tellaskSession ",
        "s.t",
        "1",
    ]
)
_GRAMMAR_TEXT = st.lists(_PIECES, max_size=40).map("".join)
# Any code point, lone surrogates included: Python strings can hold them even if UTF-8 cannot.
_ANY_TEXT = st.text(st.one_of(st.characters(), st.integers(0, 0x10FFFF).map(chr)), max_size=80)
_TEXT = st.one_of(_GRAMMAR_TEXT, _ANY_TEXT)


@st.composite
def text_and_cuts(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = draw(_TEXT)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@settings(max_examples=examples(300), deadline=None)
@given(text_and_cuts())
def test_any_chunking_gives_the_same_segments_and_events(sample: tuple[str, list[str]]) -> None:
    text, chunks = sample
    assert "".join(chunks) == text
    events = feed_all(chunks)
    assert segments_from_events(events) == parse_segments(text)
    assert merged(events) == merged(feed_all([text]))


@settings(max_examples=examples(300), deadline=None)
@given(_TEXT)
def test_segments_reproduce_the_input(text: str) -> None:
    segments = parse_segments(text)
    rebuilt = reconstruct(segments)
    # Exact, except that a bare `!?` at the very end (after a block's first line) carries no text.
    assert rebuilt == text or (text.endswith("\n!?") and rebuilt + "!?" == text)
    assert all(seg.text for seg in segments if isinstance(seg, MarkdownSegment))
    for a, b in zip(segments, segments[1:], strict=False):
        assert not (isinstance(a, MarkdownSegment) and isinstance(b, MarkdownSegment))


@settings(max_examples=examples(200), deadline=None)
@given(_TEXT)
def test_trailing_newline_changes_only_the_last_text(text: str) -> None:
    if text.endswith(("\n", "\n!?")):
        return  # already terminated, or a bare `!?` that the newline would turn into a body line
    plain, terminated = parse_segments(text), parse_segments(text + "\n")
    if not plain:
        assert terminated == [MarkdownSegment("\n")]
        return
    assert len(plain) == len(terminated)
    assert plain[:-1] == terminated[:-1]
    last, last_nl = plain[-1], terminated[-1]
    if isinstance(last, MarkdownSegment):
        assert last_nl == MarkdownSegment(last.text + "\n")
    else:
        assert isinstance(last_nl, TellaskCall)
        grown = (last.headline, last.body + "\n") if last.body else (last.headline + "\n", "")
        assert (last_nl.headline, last_nl.body) == grown
        assert (last.first_mention, last.error, last.mentions, last.tellask_session) == (
            last_nl.first_mention,
            last_nl.error,
            last_nl.mentions,
            last_nl.tellask_session,
        )


@settings(max_examples=examples(200), deadline=None)
@given(_ANY_TEXT)
def test_arbitrary_text_never_raises(text: str) -> None:
    segments = parse_segments(text)
    for seg in segments:
        assert segment_to_json(seg)["kind"] in {"markdown", "tellask"}
    for seg in segments:
        if isinstance(seg, TellaskCall):
            assert seg.is_valid == (seg.error is None)
            assert seg.first_mention is None or seg.first_mention in seg.mentions


def test_the_first_line_verdict_comes_as_soon_as_the_next_character_decides_it() -> None:
    """``CallStart`` (and its error) is emitted with the chunk that decides the first line, not held until
    more input or ``finish``: a panel shows a bad call at once. Survivors of the module-wide mutation
    sample (issue 38, round 3): the scan of a held ``@`` starting one character late (``@`` then a space
    waited for another chunk) and a line without ``@`` reported undecided."""
    parser = TellaskParser()
    assert not any(isinstance(e, CallStart) for e in parser.feed("!?@"))
    assert [e for e in parser.feed(" ") if isinstance(e, CallStart)] == [CallStart(INVALID_MENTION_ID, None)]
    parser = TellaskParser()
    assert [e for e in parser.feed("!?h") if isinstance(e, CallStart)] == [CallStart(MISSING_MENTION_PREFIX, None)]
    parser = TellaskParser()
    assert not any(isinstance(e, CallStart) for e in parser.feed("!?@co"))
    assert [e for e in parser.feed("der ") if isinstance(e, CallStart)] == [CallStart(None, "coder")]
