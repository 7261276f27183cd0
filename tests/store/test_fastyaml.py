"""The fast YAML emitter must produce text any YAML loader reads back to the same data."""

from __future__ import annotations

import yaml
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.store.fastyaml import dump

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
keys = st.one_of(st.text(min_size=1), st.sampled_from(["yes", "no", "on", "null", "true", "a!b", "k: v", "-x"]))
data = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)),
    max_leaves=25,
)


@settings(max_examples=examples(60), deadline=None)
@given(st.dictionaries(keys, data, max_size=6))
def test_round_trip_through_yaml_loader(value: dict[str, object]) -> None:
    assert yaml.safe_load(dump(value)) == value


def test_block_style_is_readable() -> None:
    text = dump({"runState": {"kind": "idle"}, "queuedPrompts": [{"msgId": "m", "content": "a\nb"}]})
    assert text == 'runState:\n  kind: "idle"\nqueuedPrompts:\n- msgId: "m"\n  content: "a\\nb"\n'


def test_characters_yaml_forbids_raw_are_escaped() -> None:
    """Bugs: DEL, C1 controls, NEL, U+2028 and lone surrogates were written raw; a key ending in a newline was written plain; 5e-324 read back as a string.

    A lone surrogate is no Unicode text (libyaml refuses even its escape): it is stored as U+FFFD, as the
    store does with every text (``textcheck.scrub``)."""
    value = {"k": "a\x7fb\x85c\ud800\U0001f600\x1f\u2028\ufeff", "\x7f": 5e-324, "A\n": 1}
    expected = {**value, "k": "a\x7fb\x85c\ufffd\U0001f600\x1f\u2028\ufeff"}
    assert yaml.safe_load(dump(value)) == expected
    assert yaml.load(dump(value), Loader=yaml.CSafeLoader) == expected


@settings(max_examples=examples(60), deadline=None)
@given(st.dictionaries(keys, data, max_size=6))
def test_fast_reader_agrees_with_pyyaml_or_declines(value: dict[str, object]) -> None:
    """The store reads with the fast reader first: it must return what PyYAML returns, or decline."""
    from dominds.store.fastyaml import NotFastYaml, load

    text = dump(value)
    try:
        fast = load(text)
    except (NotFastYaml, ValueError, IndexError):
        return
    assert fast == yaml.safe_load(text)


def test_hand_edited_yaml_falls_back_to_pyyaml() -> None:
    from dominds.store.fileio import yaml_load

    assert yaml_load("runState:\n  kind: idle   # edited by hand\nneedsDrive: yes\n") == {
        "runState": {"kind": "idle"},
        "needsDrive": True,
    }
