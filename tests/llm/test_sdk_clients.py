"""The body a generator posts: the SDK call's keyword arguments with ``extra_body`` merged in and the
conversation last (``sdk_clients.body_around``), built from each message's kept JSON in one join
(``message_reuse.json_array``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.llm.message_reuse import encoded, json_array
from dominds.llm.sdk_clients import body_around

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_KWARGS = st.dictionaries(st.sampled_from(["model", "max_tokens", "system", "tools", "messages"]), _JSON, max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    kwargs=_KWARGS,
    extra=st.none() | st.dictionaries(st.sampled_from(["top_k", "model"]), _JSON, max_size=2),
    messages=st.lists(_JSON, max_size=6),
    before_messages=st.lists(_JSON, max_size=2),
    after_messages=st.lists(_JSON, max_size=2),
)
def test_the_posted_body_is_the_arguments_with_the_conversation_last(
    kwargs: dict[str, Any], extra: dict[str, Any] | None, messages: list[Any], before_messages: list[Any], after_messages: list[Any]
) -> None:
    """The body parses to the arguments (``extra_body`` merged in, a ``messages`` argument replaced by the
    conversation), with the conversation the last key, the messages put before and after the kept ones in
    their places; the kept JSON of the messages (kept for later requests) is the same after the call as
    before it, also when there is none or one."""
    if extra is not None:
        kwargs = {**kwargs, "extra_body": extra}
    parts = [encoded(message) for message in messages]
    before = list(parts)
    body = json_array(parts, [encoded(m) for m in before_messages], [encoded(m) for m in after_messages], body_around(kwargs, "messages"))
    expected = {key: value for key, value in kwargs.items() if key not in ("extra_body", "messages")}
    expected.update(extra or {})
    expected.pop("messages", None)
    expected["messages"] = [*before_messages, *messages, *after_messages]
    assert json.loads(body) == expected
    assert list(json.loads(body)) == list(expected), "the conversation last"
    assert parts == before and all(a is b for a, b in zip(parts, before, strict=True))


class _RefusedEnd(bytes):
    """A message JSON that cannot be joined to the body's tail (as when there is no memory left)."""

    def __add__(self, other: bytes) -> bytes:
        raise MemoryError


def test_a_body_that_cannot_be_built_leaves_the_kept_json_as_it_was() -> None:
    """The join sets the first and last kept JSON to themselves with the body's head and tail for the call;
    a failure while it builds them must not leave the first one changed in a list shared with later
    requests (the first was set before the guard that puts them back)."""
    parts = [b'{"a":1}', b'{"b":2}', _RefusedEnd(b'{"c":3}')]
    before = list(parts)
    with pytest.raises(MemoryError):
        json_array(parts)
    assert parts == before and all(a is b for a, b in zip(parts, before, strict=True))
