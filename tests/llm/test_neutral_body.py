"""The scripted provider's request body, built per new message, equals ``json.dumps`` of the whole request.

Bug: recording what the model saw made each scripted turn serialise the whole history (a turn at 3,000
turns did ~100 times the work of one at 10); the body is now built from the previous request's message
JSON, which must never change what is recorded.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace

from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.llm.base import ChatMessage, GenerationRequest, ImagePart, SharedRun, ToolSpec
from dominds.llm.neutral_body import NeutralBodies, message_json


def _whole(request: GenerationRequest) -> bytes:
    body = {
        "model": request.model_name,
        "system": request.system_prompt,
        "messages": [
            {k: v for k, v in asdict(m).items() if v not in (None, False, (), "")} for m in request.messages
        ],
        "tools": [asdict(tool) for tool in request.tools],
        "params": request.model_params,
        "stream": request.streaming,
    }
    return json.dumps(body, ensure_ascii=False, default=str).encode("utf-8")


def _request(messages: list[ChatMessage], system: str = "sys \"q\" \u2028") -> GenerationRequest:
    return GenerationRequest(
        provider_key="scripted",
        provider_config={},
        model_key="demo",
        model_name="demo",
        system_prompt=system,
        messages=messages,
        tools=[ToolSpec(name="t", description="d", parameters={"type": "object"})],
        model_params={"messages": [], "temperature": 0.5},
    )


texts = st.text(max_size=30)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(0, 5), st.lists(texts, max_size=4), st.integers(0, 40)), min_size=1, max_size=8),
    tail=st.sampled_from([0, 1, 2, 32]),
)
def test_each_body_equals_the_whole_requests_json(steps: list[tuple[int, list[str], int]], tail: int) -> None:
    """A conversation grows, sometimes drops its last messages, replaces one with a new text, or gives one
    as a new but equal object; every body is exact, and so is the count of content characters kept beside
    it (the scripted provider's prompt tokens). ``tail``: how many of a kept request's last messages are
    compared one by one (the ones before are compared as one list)."""
    bodies = NeutralBodies(tail=tail)
    messages: list[ChatMessage] = [ChatMessage(role="user", content="first")]
    for dropped, added, at in steps:
        messages = messages[: max(1, len(messages) - min(dropped, 3))]
        messages = messages + [ChatMessage(role="assistant" if i % 2 else "user", content=t) for i, t in enumerate(added)]
        place = at % len(messages)
        if dropped == 4:
            messages[place] = replace(messages[place], content=messages[place].content + "!")  # a new text anywhere
        elif dropped == 5:
            messages[place] = replace(messages[place])  # a new object, equal to the one it replaces
        request = _request(list(messages))
        built = bodies.build(request)
        assert built.data == _whole(request)
        assert built.content_chars == sum(len(m.content) for m in messages)


def test_two_conversations_interleaved_and_an_empty_one() -> None:
    bodies = NeutralBodies()
    a = [ChatMessage(role="user", content="a")]
    b = [ChatMessage(role="user", content="b")]
    for turn in range(5):
        a = a + [ChatMessage(role="assistant", content=f"a{turn}")]
        b = b + [ChatMessage(role="assistant", content=f"b{turn}")]
        for messages in (a, b, []):
            request = _request(messages)
            assert bodies.body(request) == _whole(request)


def test_forty_conversations_in_turn_serialise_only_their_new_messages_and_each_tool_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Bug: only 16 requests' message JSON was kept, so with more dialogs taking turns each serialised its
    whole history at every turn, and every request deep-copied each tool's schema (``asdict``: 1.8 ms of an
    in-process scripted turn with the bench team's tools; the daemon still did, since each generation makes
    new ToolSpecs of its tools). Counted, not timed."""
    from dominds.llm import neutral_body

    serialised: list[ChatMessage] = []
    real = neutral_body.message_json
    monkeypatch.setattr(neutral_body, "message_json", lambda m: serialised.append(m) or real(m))
    tool_dicts: list[object] = []
    real_asdict = neutral_body.asdict
    monkeypatch.setattr(neutral_body, "asdict", lambda o: tool_dicts.append(o) or real_asdict(o))
    bodies = NeutralBodies()
    tools = [ToolSpec(name=f"t{i}", description="d", parameters={"type": "object", "n": i}) for i in range(3)]
    conversations = [[ChatMessage(role="user", content=f"c{c}")] for c in range(40)]
    for turn in range(6):
        for c in range(40):
            conversations[c] = conversations[c] + [ChatMessage(role="assistant", content=f"c{c} t{turn}")]
            fresh = [ToolSpec(t.name, t.description, t.parameters) for t in tools]  # as each generation makes them
            request = replace(_request(conversations[c]), tools=fresh)
            serialised.clear()
            assert bodies.body(request) == _whole(request)
            assert len(serialised) == (2 if turn == 0 else 1), f"turn {turn} of conversation {c}"
    assert len([o for o in tool_dicts if isinstance(o, ToolSpec)]) == len(tools)


def test_dialogs_sharing_their_memory_message_each_serialise_only_their_new_messages(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Bug: once a memory or Taskdoc message was one object for every dialog (so that a provider's
    conversion can be reused), a dialog's request took the kept request of another dialog that shared
    only that message, and two dialogs taking turns each serialised their whole history at every turn
    (565 ms a scripted turn at 5,000 turns)."""
    from dominds.llm import neutral_body

    serialised: list[ChatMessage] = []
    real = neutral_body.message_json
    monkeypatch.setattr(neutral_body, "message_json", lambda m: serialised.append(m) or real(m))
    bodies = NeutralBodies()
    memory = ChatMessage(role="assistant", content="[team shared memory: a.md]\nwe ship on Fridays")
    conversations = [[memory, ChatMessage(role="user", content=f"c{c}")] for c in range(2)]
    for turn in range(5):
        for c in range(2):
            conversations[c] = conversations[c] + [ChatMessage(role="assistant", content=f"c{c} t{turn}")]
            request = _request(conversations[c])
            serialised.clear()
            assert bodies.body(request) == _whole(request)
            assert len(serialised) == (3 if turn == 0 else 1), f"turn {turn} of conversation {c}"


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["settle", "pending", "head", "new run", "unsaid", "other"]), st.lists(texts, max_size=4), st.integers(0, 3)),
        min_size=1,
        max_size=10,
    )
)
def test_bodies_of_requests_whose_shared_start_is_known_equal_the_whole_requests_json(steps: list[tuple[str, list[str], int]]) -> None:
    """Two dialogs whose builder says which messages their requests share (``SharedRun``: the settled run
    of a course, which only grows, after the memory and Taskdoc messages, up to where the reminders go):
    the body reuses the kept JSON on that knowledge alone, and is exact whatever changes: the run grows,
    messages after it come and go, the head changes, the reminders' place cuts the claim short of the
    end of the run (shorter than the request before said), a new course starts, or the builder says
    nothing."""
    bodies = NeutralBodies()
    memory = ChatMessage(role="assistant", content="[memory]")
    dialogs = [{"run": [], "pending": [], "head": [memory]} for _ in range(2)]
    which = 0
    for kind, added, short_of_run in steps:
        if kind == "other":
            which = 1 - which
        dialog = dialogs[which]
        new = [ChatMessage(role="assistant" if i % 2 else "user", content=t) for i, t in enumerate(added)]
        if kind == "settle":
            dialog["run"].extend([*dialog["pending"], *new])
            dialog["pending"] = []
        elif kind == "pending":
            dialog["pending"] = new
        elif kind == "head":
            dialog["head"] = [memory, ChatMessage(role="user", content=f"[Taskdoc] {''.join(added)}")]
        elif kind == "new run":
            dialog["run"], dialog["pending"] = new, []
        messages = [*dialog["head"], *dialog["run"], *dialog["pending"]]
        claim = SharedRun(dialog["run"], len(dialog["head"]), max(0, len(dialog["run"]) - short_of_run))
        shared = None if kind == "unsaid" else claim
        request = replace(_request(messages), shared_run=shared)
        built = bodies.build(request)
        assert built.data == _whole(request), kind
        assert built.content_chars == sum(len(m.content) for m in messages)


def test_a_long_dialogs_next_body_copies_no_list_of_its_messages() -> None:
    """The bug: each scripted request of a dialog at 5,000 turns copied its 10,000 messages to keep them
    for the next request, and again to compare the next one with them (C passes of 0.1-0.2 ms each on a
    cold cache), and joined each message's JSON into the body. With the start the builder knows shared,
    only the newest messages are sliced or joined."""

    class SliceCounting(list[ChatMessage]):
        copied = 0

        def __getitem__(self, index: object) -> object:
            if isinstance(index, slice):
                SliceCounting.copied += len(range(*index.indices(len(self))))
            return super().__getitem__(index)  # type: ignore[index]

    bodies = NeutralBodies()
    run = [ChatMessage(role="assistant" if i % 2 else "user", content=f"m{i}") for i in range(4000)]
    for turn in range(3):
        run.append(ChatMessage(role="user", content=f"q{turn}"))
        messages = SliceCounting([*run, ChatMessage(role="user", content="[reminders]", volatile=True)])
        SliceCounting.copied = 0
        request = replace(_request(messages), shared_run=SharedRun(run, 0, len(run)))
        assert bodies.body(request) == _whole(request)
        if turn:
            assert SliceCounting.copied < 20, SliceCounting.copied
            # and the JSON of the messages said shared is copied whole into the body, not joined message by
            # message (0.36 ms of a turn at 10,000 messages): only the newest are joined one by one
            assert len(bodies._kept[-1].parts) < 5


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
messages = st.builds(
    ChatMessage,
    role=st.sampled_from(["user", "assistant", "tool"]),
    kind=st.sampled_from(["text", "thinking", "tool_call", "tool_result"]),
    content=texts,
    tool_call_id=st.none() | texts,
    tool_name=st.none() | texts,
    arguments=st.none() | texts | st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    provider_data=st.none() | st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    is_error=st.booleans(),
    genseq=st.none() | st.integers(-1, 3),
    volatile=st.booleans(),
    runtime_note=st.booleans(),
    images=st.lists(st.builds(ImagePart, mime=texts, data=texts, name=texts), max_size=2).map(tuple),
)


@settings(max_examples=examples(200), deadline=None)
@given(message=messages)
def test_a_messages_json_is_that_of_its_fields_but_the_empty_ones(message: ChatMessage) -> None:
    """``message_json`` once used ``asdict``, which deep-copies every value (0.6 s of the first request of
    a 10,000-message dialog); it must give the very same JSON, every field and nested image included."""
    reference = {k: v for k, v in asdict(message).items() if v not in (None, False, (), "")}
    assert message_json(message) == json.dumps(reference, ensure_ascii=False, default=str)
