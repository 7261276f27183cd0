"""An ask-back's words read back from its framed prompt (``texts.words_of_tellask_back_text``), for any saying.

Course files written before prompts kept the ask-back as written hold only the framed text the model
reads; the panel then showed that text instead of the asker's words. The words are read back from it
and checked against the call id. Property: for every ask-back block the parser finds in any saying,
framing it and reading it back gives exactly its headline and body; a text that is not a framed
ask-back, or a call id of other words, gives nothing.
"""

from __future__ import annotations

from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.driver.subdialogs import runtime_call_id
from dominds.driver.texts import tellask_back_text, words_of_tellask_back_text
from dominds.tellask import parse_segments
from dominds.tellask_events import TellaskCall

_WORDS = st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cc",)) | st.sampled_from("`*>@ \t\r"), max_size=20)
_LINE = st.one_of(
    _WORDS.map(lambda w: f"!?@tellasker {w}"),
    st.just("!?@tellasker"),
    _WORDS.map(lambda w: f"!?@{w}"),
    _WORDS.map(lambda w: f"!?{w}"),
    st.just("!?"),
    st.just("!?> "),
    _WORDS,
    st.just(""),
)
_SAYING = st.tuples(st.lists(_LINE, min_size=1, max_size=14), st.booleans()).map(
    lambda drawn: "\n".join(drawn[0]) + ("\n" if drawn[1] else "")
)


@settings(max_examples=examples(300), deadline=None)
@given(_SAYING, _WORDS)
def test_every_ask_back_block_is_read_back_exactly_from_its_framed_prompt(saying: str, assignment: str) -> None:
    calls = [seg for seg in parse_segments(saying) if isinstance(seg, TellaskCall)]
    for segment, call in enumerate(calls, start=1):
        call_id = runtime_call_id(call.call_id, 1, 2, segment)
        framed = tellask_back_text("lead", "coder", f"@coder {assignment}\n", call.headline, call.body)
        assert words_of_tellask_back_text(framed, call_id) == ("coder", call.headline, call.body)
        others = [c for c in calls if (c.headline, c.body) != (call.headline, call.body)]
        for other in others:
            assert words_of_tellask_back_text(framed, runtime_call_id(other.call_id, 1, 2, 1)) is None


def test_texts_that_are_not_a_framed_ask_back_give_nothing() -> None:
    framed = tellask_back_text("lead", "coder", "@coder go\n", "@tellasker Which?\n", "A or B\n")
    assert words_of_tellask_back_text(framed, "00000000.1.1.1") is None, "words that do not hash to the call id"
    assert words_of_tellask_back_text("Hi @lead, this is a plain message", "00000000.1.1.1") is None
    assert words_of_tellask_back_text(framed.replace("> A or B", "A or B"), "00000000.1.1.1") is None
