"""A request converted per new message (``MessageReuse``) equals the request converted whole, for every
provider, whatever the dialogs' requests do from one to the next.

Two dialogs take turns; between two of its requests a dialog's messages grow, move their reminders,
replace a message by a new object (an image budget dropping an old image does), start a new course, or
stay as they were. Their messages cover what the conversions treat apart: merged same-role texts, empty
texts, thinking (signed or not), tool calls with repeated, missing or nameless ids, results whose call is
elsewhere or late (a generation before the newest), messages without a genseq, images, volatile
reminders. After every request the kept conversion must give the same JSON as a conversion of the whole
request at once.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.llm.anthropic_request import anthropic_piece, conversation_json
from dominds.llm.base import ChatMessage, ImagePart, SharedRun
from dominds.llm.message_reuse import Convert, MessageReuse, converted_whole
from dominds.llm.openai_provider import chat_piece
from dominds.llm.openai_responses import responses_piece

CONTROL = {"type": "ephemeral"}
CONVERSIONS: dict[str, tuple[Convert, Any]] = {
    "anthropic": (anthropic_piece, None),
    "chat": (chat_piece, None),
    "chat-reasoning": (chat_piece, "reasoning_content"),
    "responses": (responses_piece, None),
}
IMAGE = ImagePart("image/png", "iVBORw0KGgo=", "a.png")


@st.composite
def messages(draw: st.DrawFn, genseq: int) -> list[ChatMessage]:
    """One generation's worth of messages (or a user's), most with ``genseq``, some with an older one."""
    made: list[ChatMessage] = []
    for _ in range(draw(st.integers(1, 4))):
        seq = draw(st.sampled_from([genseq] * 8 + [max(genseq - 1, 0), max(genseq - 3, 0), None]))
        kind = draw(st.sampled_from(["user", "assistant", "assistant", "thinking", "call", "result", "empty"]))
        call_id = draw(st.sampled_from(["call_0", "call_1", "c.2", None]))
        if kind == "user":
            made.append(ChatMessage(role="user", content=draw(st.sampled_from(["hi", "more", "ok ok"])), genseq=seq,
                                    images=(IMAGE,) if draw(st.booleans()) and draw(st.booleans()) else ()))  # fmt: skip
        elif kind == "assistant":
            made.append(ChatMessage(role="assistant", content=draw(st.sampled_from(["sure", "done", "a b"])), genseq=seq))
        elif kind == "empty":
            made.append(ChatMessage(role=draw(st.sampled_from(["user", "assistant"])), content=" ", genseq=seq))
        elif kind == "thinking":
            data = {"signature": "sig"} if draw(st.booleans()) else None
            made.append(ChatMessage(role="assistant", kind="thinking", content="hmm", provider_data=data, genseq=seq))
        elif kind == "call":
            made.append(ChatMessage(role="assistant", kind="tool_call", tool_call_id=call_id, genseq=seq,
                                    tool_name=draw(st.sampled_from(["f", "g", ""])),
                                    arguments=draw(st.sampled_from([{"a": 1}, '{"b": 2}', "not json", None]))))  # fmt: skip
        else:
            made.append(ChatMessage(role="tool", kind="tool_result", tool_call_id=call_id, content="out", genseq=seq,
                                    images=(IMAGE,) if draw(st.booleans()) and draw(st.booleans()) else ()))  # fmt: skip
    return made


@st.composite
def next_request(draw: st.DrawFn, before: list[ChatMessage], genseq: int) -> list[ChatMessage]:
    settled = [m for m in before if not m.volatile]
    change = draw(st.sampled_from(["turn", "turn", "turn", "grow", "replace", "same", "new course"]))
    if change == "same":
        return list(before)
    if change == "new course":
        return draw(messages(genseq))
    if change == "replace" and settled:
        at = draw(st.integers(0, len(settled) - 1))
        old = settled[at]
        settled[at] = ChatMessage(role=old.role, kind=old.kind, content=old.content + draw(st.sampled_from(["", "!"])),
                                  tool_call_id=old.tool_call_id, tool_name=old.tool_name, arguments=old.arguments,
                                  provider_data=old.provider_data, genseq=old.genseq)  # fmt: skip
        return settled
    grown = settled + draw(messages(genseq))
    if change == "turn":
        # The generation's last words, then the reminders (a new, volatile message) just before the newest
        # user message, as the driver builds a request.
        grown.append(ChatMessage(role="assistant", content="reply", genseq=genseq))
        grown.append(ChatMessage(role="user", content="[Your reminders]\nreminder 1: x", volatile=True))
        grown.append(ChatMessage(role="user", content=f"question {genseq}", genseq=genseq))
    return grown


@settings(max_examples=120, deadline=None)
@given(data=st.data(), provider=st.sampled_from(sorted(CONVERSIONS)))
def test_each_request_converted_per_new_message_equals_it_converted_whole(data: st.DataObject, provider: str) -> None:
    convert, key = CONVERSIONS[provider]
    reuse = MessageReuse(convert, kept=2)
    dialogs: list[list[ChatMessage]] = [[], []]
    for genseq in range(1, data.draw(st.integers(2, 14)) + 1):
        which = data.draw(st.integers(0, 1))
        dialogs[which] = data.draw(next_request(dialogs[which], genseq))
        request = dialogs[which]
        got = reuse.convert(request, key)
        whole = converted_whole(convert, request, key)
        assert got.parts == whole.parts
        assert got.volatile == whole.volatile
        assert got.outputs == whole.outputs
        if provider == "anthropic" and request:
            assert conversation_json(got, CONTROL) == conversation_json(whole, CONTROL)


def user(text: str, genseq: int | None = None, **kw: Any) -> ChatMessage:
    return ChatMessage(role="user", content=text, genseq=genseq, **kw)


def said(text: str, genseq: int | None = None) -> ChatMessage:
    return ChatMessage(role="assistant", content=text, genseq=genseq)


def call(call_id: str, genseq: int) -> ChatMessage:
    return ChatMessage(role="assistant", kind="tool_call", tool_call_id=call_id, tool_name="f", arguments={}, genseq=genseq)


def result(call_id: str, genseq: int) -> ChatMessage:
    return ChatMessage(role="tool", kind="tool_result", tool_call_id=call_id, content="out", genseq=genseq)


def reminder() -> ChatMessage:
    return user("[Your reminders]\nreminder 1: x", volatile=True)


def converted_alike(*requests: list[ChatMessage]) -> None:
    """Each request, converted in turn by one ``MessageReuse`` per provider, equals it converted whole."""
    for name, (convert, key) in CONVERSIONS.items():
        reuse = MessageReuse(convert)
        for number, request in enumerate(requests):
            got, whole = reuse.convert(request, key), converted_whole(convert, request, key)
            assert (got.parts, got.volatile) == (whole.parts, whole.volatile), (name, number)
            if name == "anthropic":
                assert conversation_json(got, CONTROL) == conversation_json(whole, CONTROL), (name, number)


def test_an_empty_assistant_text_is_no_cut_between_the_user_texts_around_it() -> None:
    """An empty text is left out, so the user texts around it merge into one message: a cut after it
    would have sent them apart once the first request was reused."""
    first = [user("a", 1), said(" ", 1), user("b", 2), said("done", 2), reminder(), user("c", 3)]
    converted_alike(first, [*first[:3], first[3], first[5], said("ok", 3), reminder(), user("d", 4)])


def test_a_result_of_a_generation_before_the_cut_arriving_after_it_is_converted_whole() -> None:
    """A late result belongs with its generation's call, before the cut: reusing the kept conversion up
    to the cut would have left it out of its group."""
    first = [user("a", 1), call("c1", 1), said("working", 1), user("b", 2), said("b done", 2), user("c", 3)]
    second = [*first, said("c done", 3), result("c1", 1), user("d", 4)]
    converted_alike(first, second)


def test_call_ids_before_the_cut_rename_a_repeated_id_after_it() -> None:
    """llama.cpp numbers each reply's calls from call_0: the second call_0 is re-keyed only if the ids
    of the calls before the cut are carried."""
    first = [user("a", 1), call("call_0", 1), result("call_0", 1), said("done", 1), user("b", 2), said("ok", 2), user("c", 3)]
    second = [*first, call("call_0", 3), result("call_0", 3), said("done again", 3), user("d", 4)]
    converted_alike(first, second)


def test_a_volatile_message_before_a_cut_keeps_its_place_for_the_cache_breakpoints() -> None:
    """A cut after a volatile message kept it in the reused part, whose volatile blocks were not carried:
    the breakpoint before the first volatile block moved."""
    kept_reminder = reminder()
    first = [user("a", 1), said("x", 1), kept_reminder, said("y", 1), user("b", 2), said("z", 2), user("c", 3)]
    converted_alike(first, [*first, said("w", 3), user("d", 4)])


def test_only_an_assistant_text_before_a_user_text_is_a_cut() -> None:
    """After a tool result (a user turn for Anthropic) or thinking, the user text joins what is before."""
    first = [user("a", 1), call("c1", 1), result("c1", 1), user("b", 1), said("ok", 1), user("c", 2)]
    converted_alike(first, [*first, said("fine", 2), user("d", 3)])
    thought = [user("a", 1), ChatMessage(role="assistant", kind="thinking", content="t", genseq=1), user("b", 2), said("k", 2), user("c", 3)]
    converted_alike(thought, [*thought, said("fine", 3), user("d", 4)])


def test_dialogs_sharing_their_memory_message_each_convert_only_their_newest_messages() -> None:
    """A memory message (an assistant text) followed by a user text is a cut in every dialog that shares
    it: new dialogs starting meanwhile must not take the long dialog's kept conversion (which is found
    only by a request holding its messages up to its last cut), or it converts its whole history again."""
    converted: list[int] = []

    def counting(messages: list[ChatMessage], calls: Any, key: Any) -> Any:
        converted.append(len(messages))
        return chat_piece(messages, calls, key)

    reuse = MessageReuse(counting)
    memory = said("[team shared memory: a.md]\nwe ship on Fridays")
    long_dialog = [memory, *(m for n in range(1, 200) for m in (user(f"q{n}", n), said(f"a{n}", n)))]
    reuse.convert([*long_dialog, user("q200", 200)])
    for n in range(3):
        reuse.convert([memory, user(f"another dialog's question {n}", 1)])  # a new dialog each time
        long_dialog += [user(f"q{200 + n}", 200 + n), said(f"a{200 + n}", 200 + n)]
        converted.clear()
        reuse.convert([*long_dialog, user("next", 300 + n)])
        assert sum(converted) < 10, converted


def test_a_dialog_equal_at_its_start_to_another_does_not_walk_the_others_short_cut(monkeypatch: Any) -> None:
    """The bug: once a kept start was matched by equality, a short dialog whose first turns equal a long
    one's (two dialogs of the same team asked the same things) passed the cheap first test too, and the
    long dialog's every request walked all its messages after the short one's cut (``_bound_after``:
    1 ms a turn at 10,000 messages; the Anthropic bench went from 1.32x to 1.45x). Another dialog's kept
    conversion is turned away by identity before any walk."""
    from dominds.llm import message_reuse

    walked_from: list[int] = []
    real = message_reuse._bound_after
    monkeypatch.setattr(message_reuse, "_bound_after", lambda messages, at: walked_from.append(at) or real(messages, at))
    reuse = MessageReuse(chat_piece)

    def turns(count: int) -> list[ChatMessage]:  # new objects, equal to the other dialog's
        return [m for n in range(1, count) for m in (user(f"q{n}", n), said(f"a{n}", n))]

    short, long = turns(5), turns(300)  # the short one's messages up to its cut equal the long one's start
    for n in range(3):
        reuse.convert([*short, user(f"short next {n}", 500 + n)])
        long = [*long, user(f"l{n}", 600 + n), said(f"la{n}", 600 + n)]
        walked_from.clear()
        reuse.convert([*long, user("long next", 700 + n)])
        if n:
            assert walked_from and min(walked_from) > len(long) // 2, walked_from


MEMORY = said("[team shared memory: a.md]\nwe ship on Fridays")
"""A memory message: the same object at the head of every dialog of a member."""


@st.composite
def heads(draw: st.DrawFn) -> list[ChatMessage]:
    """The messages before a course's: memories (one object every dialog shares), a Taskdoc (a new object
    each request, sometimes edited)."""
    head = [MEMORY] if draw(st.booleans()) else []
    if draw(st.booleans()):
        head.append(user(f"[Taskdoc]\n{draw(st.sampled_from(['goals', 'goals and more']))}"))
    return head


class _Course:
    """A dialog's course as the context builder sees it: ``run`` the settled messages (a list that only
    grows), ``pending`` the ones after them (a call awaiting its result, the newest turn)."""

    def __init__(self) -> None:
        self.run: list[ChatMessage] = []
        self.pending: list[ChatMessage] = []

    def request(self, head: list[ChatMessage], replaced: int | None, claim: bool) -> tuple[list[ChatMessage], SharedRun | None]:
        """The request as ``driver/context.py`` builds it: the reminders before the last user message,
        the head in front; ``replaced``: a message replaced by an equal-looking new one (an image
        attached), which cuts the claim there."""
        course = [*self.run, *self.pending]
        shared = SharedRun(self.run, 0, len(self.run))
        last_user = next((i for i in range(len(course) - 1, -1, -1) if course[i].role == "user"), None)
        if last_user is not None:
            course.insert(last_user, reminder())
            shared = shared.before(last_user)
        messages = [*head, *course]
        shared = SharedRun(shared.run, len(head), shared.count)
        if replaced is not None and messages:
            at = replaced % len(messages)
            old = messages[at]
            messages[at] = ChatMessage(role=old.role, kind=old.kind, content=old.content, tool_call_id=old.tool_call_id,
                                       tool_name=old.tool_name, arguments=old.arguments, provider_data=old.provider_data,
                                       genseq=old.genseq, volatile=old.volatile, images=(IMAGE,) if old.role != "assistant" else ())  # fmt: skip
            shared = shared.before(at)
        return messages, shared if claim else None


@settings(max_examples=150, deadline=None)
@given(data=st.data(), provider=st.sampled_from(sorted(CONVERSIONS)))
def test_requests_whose_shared_start_is_known_convert_as_whole(data: st.DataObject, provider: str) -> None:
    """The same as converted whole when the context builder says which messages a dialog's requests share
    (``SharedRun``): courses whose settled messages grow, whose pending ones settle in any number, with
    heads that change or are shared with another dialog, a message replaced by a new object (an image
    attached), a new course (a new run), or nothing said."""
    convert, key = CONVERSIONS[provider]
    reuse = MessageReuse(convert, kept=3)
    courses = [_Course(), _Course()]
    for genseq in range(1, data.draw(st.integers(2, 16)) + 1):
        course = courses[data.draw(st.integers(0, 1))]
        change = data.draw(st.sampled_from(["turn", "turn", "turn", "settle some", "new course", "same"]))
        if change == "new course":
            course.run, course.pending = [], []
        if change in ("turn", "new course"):
            course.run.extend(course.pending)
            course.pending = [*data.draw(messages(genseq)), said("reply", genseq), user(f"question {genseq}", genseq)]
        elif change == "settle some":
            settled = data.draw(st.integers(0, len(course.pending)))
            course.run.extend(course.pending[:settled])
            course.pending = [*course.pending[settled:], *data.draw(messages(genseq))]
        replaced = data.draw(st.none() | st.integers(0, 10_000))
        request, shared = course.request(data.draw(heads()), replaced, data.draw(st.integers(0, 4)) > 0)
        got = reuse.convert(request, key, shared)
        whole = converted_whole(convert, request, key)
        assert (got.parts, got.volatile, got.outputs) == (whole.parts, whole.volatile, whole.outputs)
        if provider == "anthropic" and request:
            assert conversation_json(got, CONTROL) == conversation_json(whole, CONTROL)


class _SliceCounting(list[ChatMessage]):
    """A request's messages that count the messages each slice of them copies."""

    copied = 0

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            _SliceCounting.copied += len(range(*index.indices(len(self))))
        return super().__getitem__(index)


def test_a_long_dialogs_next_request_copies_no_list_of_its_messages() -> None:
    """The bug: each request of a dialog at 5,000 turns copied its 10,000 messages several times in C
    (to compare them with the previous request's, to keep them for the next one) and its converted
    messages and their JSON twice more: 0.1-0.2 ms each on a cold cache, the turn 1.2x the cost of a
    turn at 10 (``bench/bench_long.py --provider anthropic``). With the start the builder knows shared,
    the next request slices only its newest messages; each provider's kept lists are taken over, not
    copied."""
    for name, (convert, key) in CONVERSIONS.items():
        reuse = MessageReuse(convert)
        course = _Course()
        course.run = [m for n in range(1, 2000) for m in (user(f"q{n}", n), said(f"a{n}", n))]
        kept_parts: list[bytes] = []
        for n in range(2000, 2004):
            course.run.extend(course.pending)
            course.pending = [user(f"q{n}", n), said(f"a{n}", n), user(f"next {n}", n + 1)]
            request, shared = course.request([MEMORY, user("[Taskdoc]\ngoals")], None, True)
            _SliceCounting.copied = 0
            got = reuse.convert(_SliceCounting(request), key, shared)
            if n > 2000:
                assert _SliceCounting.copied < 100, (name, _SliceCounting.copied)  # its last turns: 4,005 messages
                assert got.parts is kept_parts, f"{name}: the kept JSON was copied"
            kept_parts = got.parts
