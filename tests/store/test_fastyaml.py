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


YAML_PRINTABLE = frozenset(
    {0x09, 0x0A, 0x0D, 0x85, *range(0x20, 0x7F), *range(0xA0, 0xD800), *range(0xE000, 0xFFFE), *range(0x10000, 0x110000)}
)
"""YAML 1.1's printable characters: tab, LF, CR, ASCII printable, NEL, U+00A0–U+D7FF, U+E000–U+FFFD, astral."""


def test_the_escaped_and_the_declined_characters_are_yamls_unprintable_ones_over_every_code_point() -> None:
    """The two character classes were rewritten from negations of the printable ranges (each ~10 ms to compile, at
    every daemon start) to lists of the characters they match: the same sets, checked over every code point.

    Written escaped: YAML's unprintable characters, and NEL, U+2028, U+2029 (line breaks inside quotes)
    and the BOM (dropped by readers). Declined by the fast reader: the same, and tab and CR too (it
    reads only LF-separated lines)."""
    from dominds.store.fastyaml import _NOT_PRINTABLE, _UNSAFE, dump

    every = "".join(map(chr, range(0x110000)))
    unprintable = set(range(0x110000)) - YAML_PRINTABLE
    folded = {0x85, 0x2028, 0x2029, 0xFEFF}
    assert set(map(ord, _NOT_PRINTABLE.findall(every))) == unprintable | folded
    assert set(map(ord, _UNSAFE.findall(every))) == unprintable | folded | {0x09, 0x0D}
    text = "".join(chr(c) for c in range(0x20, 0x110000) if not 0xD800 <= c <= 0xDFFF)
    written = dump({"k": text})
    assert set(map(ord, text)) & set(map(ord, written)) == set(map(ord, text)) & (YAML_PRINTABLE - folded), "raw iff printable"
    assert yaml.load(written, Loader=yaml.CSafeLoader) == {"k": text}
