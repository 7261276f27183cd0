"""Images in (issue 33): an image a tool returns reaches a vision-capable model as image content, through the
real SDKs against the fake server; a text-only model gets the placeholder line; a request carries at most
``IMAGE_BUDGET`` images (the newest)."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))  # tests/llm and tests/mcp are not packages
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from dialects import AnthropicDialect, OpenAiChatDialect, OpenAiResponsesDialect, Script, Text, Tool
from fake_servers import FakeLlmServer, RecordedRequest, Reply, running_fake_server
from mcp_kit import stdio_server_yaml

from dominds.driver.engine import Engine
from dominds.driver.images import IMAGE_BUDGET, attach_images, with_images
from dominds.llm.base import ChatMessage, SharedRun
from dominds.mcp.results import save_artifact
from dominds.rtws import Rtws

LLM_YAML = """\
providers:
  fake-anthropic:
    apiType: anthropic
    baseUrl: {url}
    apiKeyEnvVar: FAKE_IMAGES_ANTHROPIC_KEY
    models:
      fake-model: {{context_length: 200000{anthropic_vision}}}
  fake-openai:
    apiType: openai-compatible
    baseUrl: {url}/v1
    apiKeyEnvVar: null
    models:
      fake-model: {{context_length: 128000{vision}}}
  fake-responses:
    apiType: openai-responses
    baseUrl: {url}/v1
    apiKeyEnvVar: null
    models:
      fake-model: {{context_length: 128000}}
"""


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeLlmServer]:
    monkeypatch.setenv("FAKE_IMAGES_ANTHROPIC_KEY", "sk-ant-images-not-a-real-key")
    async with running_fake_server() as server:
        server.validate_tool_history = True
        yield server


def _respond(request: RecordedRequest) -> Reply:
    dialect = {"/v1/messages": AnthropicDialect(), "/v1/chat/completions": OpenAiChatDialect()}.get(
        request.path, OpenAiResponsesDialect()
    )
    body = json.dumps(request.body)
    blocks = (Text("I see a red dot."),) if "a red dot" in body else (Tool("call_pic", "picture", {}),)
    return dialect.reply(Script(blocks))


async def _draw(
    root_dir: Path, fake: FakeLlmServer, provider: str, vision: str = "", anthropic_vision: str = ""
) -> list[RecordedRequest]:
    rtws = Rtws(root_dir)
    rtws.minds_dir.mkdir(parents=True)
    rtws.team_yaml.write_text(
        f"member_defaults: {{provider: {provider}, model: fake-model, diligence_push_max: 0}}\n"
        "default_responder: lead\nmembers:\n  lead: {name: Lead, toolsets: [fake]}\n"
    )
    rtws.llm_yaml.write_text(LLM_YAML.format(url=fake.url, vision=vision, anthropic_vision=anthropic_vision))
    (rtws.minds_dir / "mcp.yaml").write_text("servers:\n" + stdio_server_yaml())
    (root_dir / "tasks" / "t.tsk").mkdir(parents=True)
    (root_dir / "tasks" / "t.tsk" / "goals.md").write_text("Draw.\n")
    rtws.ensure_layout()
    fake.responder = _respond
    engine = Engine(rtws)
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        engine.submit_user_message(root, "draw")
        await engine.wait_idle(timeout=120)  # an MCP server starts slowly on a loaded machine
    finally:
        await engine.close()
    assert not fake.history_problems
    assert len(fake.requests) == 2, "the picture call, then the answer"
    return fake.requests


async def test_an_mcp_image_reaches_anthropic_inside_the_tool_result(tmp_path: Path, fake: FakeLlmServer) -> None:
    second = (await _draw(tmp_path / "ws", fake, "fake-anthropic"))[1].body
    results = [b for m in second["messages"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert len(results) == 1 and results[0]["tool_use_id"] == "call_pic"
    content = results[0]["content"]
    assert content[0]["type"] == "text" and "a red dot" in content[0]["text"]
    image = content[1]
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert base64.b64decode(image["source"]["data"]).startswith(b"\x89PNG")


async def test_an_anthropic_model_the_catalog_marks_text_only_gets_the_placeholder(tmp_path: Path, fake: FakeLlmServer) -> None:
    """``vision: false`` in the catalog wins over the API's default (Anthropic models see images unless marked)."""
    second = (await _draw(tmp_path / "ws", fake, "fake-anthropic", anthropic_vision=", vision: false"))[1].body
    results = [b for m in second["messages"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert len(results) == 1 and results[0]["tool_use_id"] == "call_pic"
    assert isinstance(results[0]["content"], str) and "[image saved as artifact" in results[0]["content"]
    assert '"type": "image"' not in json.dumps(second), "no image block anywhere in the request"


async def test_an_mcp_image_reaches_openai_responses_after_the_function_output(tmp_path: Path, fake: FakeLlmServer) -> None:
    items = (await _draw(tmp_path / "ws", fake, "fake-responses"))[1].body["input"]
    kinds = [item.get("type") or item.get("role") for item in items]
    after = items[kinds.index("function_call_output") + 1]
    assert after["role"] == "user" and after["content"][1]["type"] == "input_image"
    assert after["content"][1]["image_url"].startswith("data:image/png;base64,")


@pytest.mark.parametrize("vision", ["", ", vision: true"])
async def test_chat_completions_gets_the_image_only_when_the_catalog_says_vision(
    tmp_path: Path, fake: FakeLlmServer, vision: str
) -> None:
    messages = (await _draw(tmp_path / "ws", fake, "fake-openai", vision))[1].body["messages"]
    tool = next(m for m in messages if m["role"] == "tool")
    assert "[image saved as artifact" in tool["content"], "the placeholder line is always there"
    images = [p for m in messages if isinstance(m["content"], list) for p in m["content"] if p.get("type") == "image_url"]
    if vision:
        assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
        assert messages[messages.index(tool) + 1]["role"] == "user", "right after the tool results"
    else:
        assert not images, "a text-only model gets the placeholder"


def test_a_request_carries_only_the_newest_images(tmp_path: Path) -> None:
    lines = [save_artifact(tmp_path, "d", f"shot-{i}", b"\x89PNG-%d" % i, "image/png") for i in range(IMAGE_BUDGET + 3)]
    messages = [ChatMessage(role="tool", kind="tool_result", content=line, tool_call_id=f"c{i}") for i, line in enumerate(lines)]
    attached = attach_images(messages, tmp_path)
    with_images = [m.images[0].name for m in attached if m.images]
    assert with_images == [f"shot-{i}.png" for i in range(3, IMAGE_BUDGET + 3)], "older images stay placeholders"
    assert all(m.content == line for m, line in zip(attached, lines, strict=True))


async def test_a_provider_request_carries_only_the_newest_images_as_image_blocks(tmp_path: Path, fake: FakeLlmServer) -> None:
    """The image budget through a real request (the unit test above checks one image per message): two
    messages naming ``IMAGE_BUDGET + 3`` attached images in all reach the fake Anthropic server with the
    newest ``IMAGE_BUDGET`` as image blocks and every placeholder line kept.

    Bug (found verifying issue 33): within a message the images were taken first to last, so when the budget
    ran out inside an older message its *older* pictures were sent and its newer ones left as placeholders."""
    rtws = Rtws(tmp_path / "ws")
    rtws.minds_dir.mkdir(parents=True)
    rtws.team_yaml.write_text(
        "member_defaults: {provider: fake-anthropic, model: fake-model, diligence_push_max: 0}\n"
        "default_responder: lead\nmembers:\n  lead: {name: Lead}\n"
    )
    rtws.llm_yaml.write_text(LLM_YAML.format(url=fake.url, vision="", anthropic_vision=""))
    (rtws.root / "tasks" / "t.tsk").mkdir(parents=True)
    (rtws.root / "tasks" / "t.tsk" / "goals.md").write_text("Look.\n")
    rtws.ensure_layout()
    fake.queue(*(AnthropicDialect().reply(Script((Text("Seen them."),))) for _ in range(2)))
    pictures = [b"\x89PNG-shot-%d" % i for i in range(IMAGE_BUDGET + 3)]
    engine = Engine(rtws)
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        lines = [save_artifact(root.files.dir, root.self_id, f"shot-{i}", raw, "image/png") for i, raw in enumerate(pictures)]
        for part in (lines[:5], lines[5:]):
            engine.submit_user_message(root, "Compare these:\n" + "\n".join(part))
            await engine.wait_idle(timeout=20)
    finally:
        await engine.close()
    request = fake.requests[-1]
    blocks = [b for m in request.body["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])]
    images = [base64.b64decode(b["source"]["data"]) for b in blocks if b.get("type") == "image"]
    assert images == pictures[3:], "the newest IMAGE_BUDGET images, in order"
    text = json.dumps(request.body)
    assert all(f"shot-{i}.png" in text for i in range(IMAGE_BUDGET + 3)), "every placeholder line stays"


def test_images_found_from_a_dialogs_kept_scan_are_the_images_of_a_full_scan(tmp_path: Path) -> None:
    """The messages naming an image are searched only after those the dialog's previous request had in
    place (searching every message's text cost 4 ms a turn at 10,000 messages): requests that grow, name
    new images, or replace an earlier message by one that names an image (or no longer does) get the same
    images as a search of every message."""
    lines = [save_artifact(tmp_path, "d", f"shot-{i}", b"\x89PNG-%d" % i, "image/png") for i in range(12)]
    kept: dict[str, object] = {}
    messages = [ChatMessage(role="user", content=f"plain {i}") for i in range(5)]
    steps = [
        lambda m: [*m, ChatMessage(role="tool", kind="tool_result", content=lines[0], tool_call_id="a")],
        lambda m: [*m, ChatMessage(role="user", content="nothing")],
        lambda m: [ChatMessage(role="user", content=lines[1]), *m[1:]],  # a new first message names one
        lambda m: [*m[:2], ChatMessage(role="user", content="no longer"), *m[3:], ChatMessage(role="user", content=lines[2])],
        lambda m: [*m, *(ChatMessage(role="user", content=lines[i]) for i in range(3, 12))],  # past the budget
        lambda m: list(m),
        lambda m: [*m[:-4], ChatMessage(role="user", content="cut")],
    ]
    for number, step in enumerate(steps):
        messages = step(messages)
        with_kept = attach_images(messages, tmp_path, kept=kept)
        assert with_kept == attach_images(messages, tmp_path), number
        assert any(m.images for m in with_kept) or number < 1, number


_STEP = st.one_of(
    st.tuples(st.just("append"), st.booleans(), st.integers(1, 40)),
    st.tuples(st.just("replace"), st.booleans(), st.integers(0, 10_000)),
    st.tuples(st.just("copy"), st.booleans(), st.integers(0, 10_000)),  # an equal message, another object
    st.tuples(st.just("cut"), st.booleans(), st.integers(0, 10_000)),
    st.tuples(st.just("same"), st.booleans(), st.integers(0, 0)),
)


@pytest.fixture(scope="module")
def saved_pictures(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A dialog directory holding 20 image artifacts, and their placeholder lines."""
    directory = tmp_path_factory.mktemp("images")
    return directory, [save_artifact(directory, "d", f"shot-{i}", b"\x89PNG-%d" % i, "image/png") for i in range(20)]


def _messages_naming(lines: list[str], image_every: int) -> Callable[[bool], ChatMessage]:
    """A maker of new user messages: one naming a saved picture when asked, or every ``image_every``-th."""
    made = iter(range(10**6))

    def message(names_image: bool) -> ChatMessage:
        number = next(made)
        text = lines[number % len(lines)] if names_image or number % image_every == 0 else f"plain {number}"
        return ChatMessage(role="user", content=text)

    return message


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=12), image_every=st.integers(2, 9))
def test_images_found_from_a_kept_scan_of_long_requests_are_those_of_a_full_scan(
    steps: list[tuple[str, bool, int]], image_every: int, saved_pictures: tuple[Path, list[str]]
) -> None:
    """Model test of the kept scan past its one-by-one tail (32 messages): the previous request's start is
    recognised by one list comparison (equal messages name the same images), the rest one by one; requests
    that grow, replace a message (in the compared start or the tail), hold an equal copy, or are cut get
    the images of a search of every message after every step."""
    directory, lines = saved_pictures
    message = _messages_naming(lines, image_every)

    kept: dict[str, object] = {}
    messages = [message(False) for _ in range(40)]
    for kind, names_image, number in steps:
        messages = list(messages)
        if kind == "append":
            messages.extend(message(names_image) for _ in range(number))
        elif kind == "replace" and messages:
            messages[number % len(messages)] = message(names_image)
        elif kind == "copy" and messages:
            at = number % len(messages)
            messages[at] = ChatMessage(role=messages[at].role, content=str(messages[at].content))
        elif kind == "cut":
            del messages[number % (len(messages) + 1) :]
        assert attach_images(messages, directory, kept=kept) == attach_images(messages, directory), (kind, number)


_RUN_STEP = st.one_of(
    st.tuples(st.just("settle"), st.booleans(), st.integers(1, 40)),  # the run grows
    st.tuples(st.just("pending"), st.booleans(), st.integers(0, 5)),  # new messages after the run
    st.tuples(st.just("head"), st.booleans(), st.integers(0, 2)),  # the memory and Taskdoc messages change
    st.tuples(st.just("new run"), st.booleans(), st.integers(1, 40)),  # a new course
    st.tuples(st.just("unsaid"), st.booleans(), st.integers(0, 0)),  # the builder says nothing
)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(_RUN_STEP, min_size=1, max_size=12), image_every=st.integers(2, 9))
def test_images_found_from_what_the_builder_says_requests_share_are_those_of_a_full_scan(
    steps: list[tuple[str, bool, int]], image_every: int, saved_pictures: tuple[Path, list[str]]
) -> None:
    """The scan starts after the messages the context builder says a request shares with the previous
    one (``SharedRun``: no comparison of them); a request's images equal a search of every message, and
    what it says afterwards holds: its first messages up to the first one an image was attached to."""
    directory, lines = saved_pictures
    message = _messages_naming(lines, image_every)

    kept: dict[str, object] = {}
    run: list[ChatMessage] = [message(False) for _ in range(40)]
    pending: list[ChatMessage] = []
    head = [ChatMessage(role="user", content="[Taskdoc]")]
    for kind, names_image, number in steps:
        if kind == "settle":
            run.extend([*pending, *(message(names_image) for _ in range(number))])
            pending = []
        elif kind == "pending":
            pending = [message(names_image) for _ in range(number)]
        elif kind == "head":
            head = [ChatMessage(role="user", content=f"[Taskdoc] {number}") for _ in range(number)]
        elif kind == "new run":
            run, pending = [message(names_image) for _ in range(number)], []
        messages = [*head, *run, *pending]
        shared = None if kind == "unsaid" else SharedRun(run, len(head), len(run))
        attached, told = with_images(messages, shared, directory, kept=kept)
        assert attached == attach_images(messages, directory), kind
        if told is not None:
            assert all(a is b for a, b in zip(attached[told.start : told.start + told.count], run, strict=False)), kind
            assert told.count == len(run) or attached[told.start + told.count].images, kind
