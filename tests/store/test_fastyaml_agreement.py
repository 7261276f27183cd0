"""The fast YAML reader must never give a file a meaning PyYAML would not: agree, or hand the file over.

Bug pinned here: ``store/fastyaml.py`` read hand edits differently from PyYAML (the loader every other
tool and the fallback use): ``012`` was 12 (PyYAML: octal 10), ``on:`` was the string key ``"on"``
(PyYAML: ``True``), ``1e5`` was 100000.0 (PyYAML: the string ``"1e5"``), ``09`` was 9 (PyYAML: ``"09"``),
``١٢`` was 12, a raw NEL inside quotes was kept (PyYAML folds it to a space), a raw DEL was accepted
(PyYAML refuses the file), ``"\\ud83d\\ude00"`` was joined into one character (PyYAML keeps two).
The documents here are generated as text, not through the emitter, so they include such hand edits.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import yaml
from fuzzing import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dominds.store.fastyaml import NotFastYaml, dump, load

LOADERS: list[Any] = [yaml.SafeLoader]
if hasattr(yaml, "CSafeLoader"):
    LOADERS.append(yaml.CSafeLoader)  # the store's fallback when libyaml is there

EDGE_SCALARS = [
    "012", "0", "00", "09", "-0", "+1", "-012", "1e5", "1E5", "1.0e5", "1.0e+5", "1.5e-3", "1.", ".5", "-.5",
    "1_000", "0x1F", "0o17", "0b11", "1:20", "1:20.5", ".inf", "-.inf", ".nan", "NaN", "inf", "Infinity",
    "true", "True", "TRUE", "yes", "Yes", "no", "on", "off", "On", "y", "n", "null", "Null", "~", "",
    "[]", "{}", "[ ]", "[1]", "{a: 1}", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "=", "<<",
    "١٢", "²", "１２", "-", "- x", "a: b", "a:b", "#x", "1 #c", '"a" #c', "'a'", "&x 1", "*x", "!!str 1",
    "|", ">", "%", "@", "`", '"a\\/b"', '"\\ud83d\\ude00"', '"\\ud800"', '"\\x41"', '"\\U0001F600"',
    '"\\e"', '"\\N"', '"\\_"', '"\\0"', '"\\ "', '"\\t"', '"a\tb"', '"a\x85b"', '"a\u2028b"', '"a\x7fb"',
    '"a\x9fb"', '"\ufeffa"', '"a\ufffeb"', '"a\rb"', '"x"', '""', '"a""b"', '"a\\"b"', '"unterminated',
    "1.5", "-1.5", "123456789012345678901234567890", "0.0", "-0.0", "3", "-7",
]
EDGE_KEYS = [
    "a", "runState", "on", "On", "ON", "off", "yes", "No", "n", "y", "true", "False", "null", "NULL", "~",
    "a!b", "a.b", "_x", "a-b", "-x", "1", "012", "1e5", "a b", "k: v", '"on"', '"a"', '""', '"a\\u0041"',
    '"\\ud83d\\ude00"', "? a", "<<", "=", "x" * 1100, '"' + "y" * 1100 + '"', "a\t", "\ufeffa",
]


def _scalar_tokens() -> st.SearchStrategy[str]:
    quoted = st.text(max_size=8).map(lambda s: json.dumps(s, ensure_ascii=False))
    ascii_quoted = st.text(max_size=8).map(json.dumps)
    numbers = st.from_regex(r"[-+]?[0-9_]{1,4}(\.[0-9_]{0,3})?([eE][-+]?[0-9]{1,3})?", fullmatch=True)
    return st.one_of(st.sampled_from(EDGE_SCALARS), quoted, ascii_quoted, numbers, st.text(max_size=6))


def _key_tokens() -> st.SearchStrategy[str]:
    plain = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.!-]{0,6}", fullmatch=True)
    quoted = st.text(max_size=6).map(lambda s: json.dumps(s, ensure_ascii=False))
    return st.one_of(st.sampled_from(EDGE_KEYS), plain, quoted)


def _node(depth: int) -> st.SearchStrategy[list[tuple[int, str]]]:
    """A block node as (relative indent, text) lines; a leaf is one scalar line."""
    leaf = _scalar_tokens().map(lambda token: [(0, token)])
    if depth == 0:
        return leaf
    child = _node(depth - 1)
    entry = st.tuples(_key_tokens(), st.one_of(_scalar_tokens().map(lambda t: ("scalar", t)), child.map(lambda c: ("block", c))), st.integers(0, 3))
    mapping = st.lists(entry, min_size=1, max_size=4).map(_render_map)
    item = st.tuples(st.one_of(_scalar_tokens().map(lambda t: ("scalar", t)), child.map(lambda c: ("block", c))), st.integers(0, 3))
    sequence = st.lists(item, min_size=1, max_size=4).map(_render_list)
    return st.one_of(leaf, mapping, sequence)


def _render_map(entries: list[tuple[str, tuple[str, Any], int]]) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    for key, (kind, value), shift in entries:
        if kind == "scalar":
            lines.append((0, f"{key}: {value}" if value else f"{key}:"))
        else:
            lines.append((0, f"{key}:"))
            lines += [(indent + shift, text) for indent, text in value]
    return lines


def _render_list(items: list[tuple[tuple[str, Any], int]]) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    for (kind, value), shift in items:
        if kind == "scalar":
            lines.append((0, f"- {value}"))
        elif shift == 0 and value:  # compact form: the first line on the dash line
            first_indent, first = value[0]
            lines.append((0, "- " + " " * first_indent + first))
            lines += [(indent + 2, text) for indent, text in value[1:]]
        else:
            lines.append((0, "-"))
            lines += [(indent + shift, text) for indent, text in value]
    return lines


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines = draw(_node(3))
    noise = draw(st.lists(st.tuples(st.integers(0, len(lines)), st.sampled_from(["", "# c", "  # c", "   ", "---", "..."])), max_size=2))
    rendered = [" " * indent + text for indent, text in lines]
    for position, extra in sorted(noise, reverse=True):
        rendered.insert(position, extra)
    ending = draw(st.sampled_from(["\n", "", "\r\n", "\n\n"]))
    return ending.join(rendered) if ending == "\r\n" else "\n".join(rendered) + ending


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (``1 == 1.0 == True`` in Python, not in a file)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _agrees_or_declines(text: str) -> None:
    try:
        fast = load(text)
    except NotFastYaml:
        return
    for loader in LOADERS:
        try:
            slow = yaml.load(text, Loader=loader)
        except yaml.YAMLError as exc:
            pytest.fail(f"fast reader accepted {text!r} as {fast!r}; {loader.__name__} refuses it: {exc}")
        assert _same(fast, slow), f"{text!r}: fast {fast!r} vs {loader.__name__} {slow!r}"


@settings(max_examples=examples(120), deadline=None)
@given(documents())
@example("a: 012\n")
@example("on: 1\n")
@example("a: 1e5\n")
@example("a: 09\n")
@example("No: x\n")
@example('a: "\\ud83d\\ude00"\n')
@example('a: "x\x85y"\n')
@example('a: "x\x7fy"\n')
@example("a: ١٢\n")
@example("a: 1\rb: 2\n")
def test_fast_reader_agrees_with_pyyaml_on_generated_documents(text: str) -> None:
    _agrees_or_declines(text)


@pytest.mark.parametrize(
    ("text", "meaning"),
    [
        ("a: 012\n", {"a": 10}),
        ("on: 1\n", {True: 1}),
        ("a: 1e5\n", {"a": "1e5"}),
        ("a: 09\n", {"a": "09"}),
        ("a: 1.0e5\n", {"a": "1.0e5"}),
    ],
)
def test_hand_edits_mean_what_pyyaml_says(text: str, meaning: Any) -> None:
    """The store's reader (fast first, PyYAML after) gives these the PyYAML meaning."""
    from dominds.store.fileio import yaml_load

    with pytest.raises(NotFastYaml):
        load(text)
    assert _same(yaml_load(text), meaning)


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.sampled_from(["012", "on", "1e5", "y"])
)
keys = st.one_of(st.text(min_size=1), st.sampled_from(EDGE_KEYS[:30]), st.text(min_size=1020, max_size=1030))
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3), max_leaves=15
)


@settings(max_examples=examples(60), deadline=None)
@given(st.dictionaries(keys, values, max_size=5))
def test_what_the_emitter_writes_every_loader_reads_back(value: dict[str, Any]) -> None:
    """Bugs: ``inf`` was written as ``inf`` (a string to YAML); a key past 1,024 characters made a file
    PyYAML refuses; lone surrogates were written as escapes libyaml refuses."""
    text = dump(value)
    expected = _scrubbed(value)
    for loader in LOADERS:
        assert _same(yaml.load(text, Loader=loader), expected)
    _agrees_or_declines(text)


def _scrubbed(value: Any) -> Any:
    from dominds.textcheck import scrub

    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(str(k)): _scrubbed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value
