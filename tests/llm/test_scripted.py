"""The scripted provider as a Generator: what it answers, its pace, and a miss as an error (never a reply)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from dominds.driver.texts import cut_reply_note
from dominds.llm.base import ChatMessage, GenerationRequest
from dominds.llm.scripted import ScriptedGenerator, ScriptedResponseMissing


class Collect:
    def __init__(self) -> None:
        self.chunks: list[str] = []

    async def thinking_start(self) -> None: ...
    async def thinking_chunk(self, text: str) -> None:
        self.chunks.append(text)

    async def thinking_finish(self, provider_data: dict[str, Any] | None = None) -> None: ...
    async def saying_start(self) -> None: ...
    async def saying_chunk(self, text: str) -> None:
        self.chunks.append(text)

    async def saying_finish(self) -> None: ...
    async def func_call(self, call_id: str, name: str, arguments_json: str) -> None: ...


def _request(root: Path, *messages: ChatMessage, agent: str = "lead") -> GenerationRequest:
    return GenerationRequest(
        provider_key="scripted",
        provider_config={"baseUrl": ".minds/scripted"},
        model_key="test",
        model_name="test",
        system_prompt="",
        messages=list(messages),
        agent_id=agent,
        rtws_root=str(root),
    )


def _database(root: Path, content: Any) -> Path:
    path = root / ".minds" / "scripted" / "test.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content, allow_unicode=True))
    return path


async def test_a_miss_is_an_error_naming_the_file_and_the_entry_to_add(tmp_path: Path) -> None:
    generator = ScriptedGenerator()
    with pytest.raises(ScriptedResponseMissing) as missing:
        await generator.generate(_request(tmp_path, ChatMessage("user", content="hi")), Collect())
    assert str(missing.value) == (
        "no scripted database .minds/scripted/test.yaml for @lead: create it with a `responses:` list "
        "(`dominds docs configuration`)"
    )
    _database(tmp_path, {"responses": [{"message": "hello", "response": "Hi!"}]})
    long = "x" * 500
    with pytest.raises(ScriptedResponseMissing) as missing:
        await generator.generate(_request(tmp_path, ChatMessage("tool", content=long), agent="coder"), Collect())
    assert "matches its last tool message" in str(missing.value) and f'contains: "{"x" * 60}"' in str(missing.value)
    assert "\n" not in str(missing.value), "one line: it is a run state's detail and a CLI error line"
    _database(tmp_path, "responses: [unclosed")
    with pytest.raises(ScriptedResponseMissing, match=r"test.yaml does not load, so @lead has no answer: "):
        await generator.generate(_request(tmp_path, ChatMessage("user", content="hello")), Collect())


@pytest.mark.parametrize("reason", ["stopped", "max_tokens", "stream_broken", None])
async def test_a_reply_cut_short_is_answered_again_from_the_message_it_answered(tmp_path: Path, reason: str | None) -> None:
    """Bug: after a crash or a stop mid-reply, the resumed reply was "Scripted response not found": the last
    context message was the saved partial output (or the runtime's cut-reply note), not the user's."""
    _database(tmp_path, {"responses": [{"message": "hello", "response": "Hi!"}]})
    cut = [ChatMessage("user", content="hello"), ChatMessage("assistant", kind="thinking", content="Let me")]
    note = ChatMessage("user", content=cut_reply_note(reason), runtime_note=True)  # as driver/messages.py adds it
    noted = [*cut, ChatMessage("assistant", content="H"), note]
    for messages in (cut, noted):
        receiver = Collect()
        await ScriptedGenerator().generate(_request(tmp_path, *messages), receiver)
        assert "".join(receiver.chunks) == "Hi!"


async def test_other_runtime_notes_are_answered_like_any_message_and_never_loop_back(tmp_path: Path) -> None:
    _database(tmp_path, {"responses": [{"message": "hello", "response": "!?@nobody do it"}]})
    note = ChatMessage("user", content="[Dominds note] the tellask to @nobody was not delivered")
    with pytest.raises(ScriptedResponseMissing, match="not delivered"):
        await ScriptedGenerator().generate(
            _request(tmp_path, ChatMessage("user", content="hello"), ChatMessage("assistant", content="!?@nobody do it"), note),
            Collect(),
        )


async def test_pace_comes_from_the_database_and_an_entry_overrides_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOMINDS_SCRIPTED_PACE")
    _database(
        tmp_path,
        {
            "pace": {"delay_ms": 10, "chunk_chars": 2},
            "responses": [
                {"message": "paced", "response": "abcdefghij"},
                {"message": "own", "response": "abcdefghij", "delay_ms": 0, "chunk_chars": 5},
            ],
        },
    )
    generator = ScriptedGenerator()
    paced = Collect()
    started = time.monotonic()
    await generator.generate(_request(tmp_path, ChatMessage("user", content="paced")), paced)
    assert paced.chunks == ["ab", "cd", "ef", "gh", "ij"] and time.monotonic() - started >= 0.05
    own = Collect()
    await generator.generate(_request(tmp_path, ChatMessage("user", content="own")), own)
    assert own.chunks == ["abcde", "fghij"]
    monkeypatch.setenv("DOMINDS_SCRIPTED_PACE", "0")
    fast = Collect()
    started = time.monotonic()
    await generator.generate(_request(tmp_path, ChatMessage("user", content="paced")), fast)
    assert fast.chunks == ["ab", "cd", "ef", "gh", "ij"]


@pytest.mark.parametrize("pace", ["fast", {"delay_ms": "soon"}, {"speed": 3}])
async def test_a_bad_pace_is_a_load_error(tmp_path: Path, pace: Any) -> None:
    _database(tmp_path, {"pace": pace, "responses": [{"message": "hello", "response": "Hi!"}]})
    with pytest.raises(ScriptedResponseMissing, match=r"`pace:`"):
        await ScriptedGenerator().generate(_request(tmp_path, ChatMessage("user", content="hello")), Collect())


async def test_a_changed_database_is_parsed_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug: a database was parsed on the event loop at the first generation after it changed. A big
    one (a bench's 1.5 MB of replies) held the whole daemon for 1-3 s: no request, no other stream.
    Held: while the parse of a big one is held in the middle, another task of the loop runs; once
    parsed, the next generation parses nothing. (A small one is parsed on the loop:
    ``tests/driver/test_write_economy.py`` holds a turn to one round of fsyncs.)"""
    import asyncio
    import threading

    from dominds.llm import scripted

    _database(tmp_path, {"responses": [{"message": "hello", "response": "Hi!"}]})
    entered, release = threading.Event(), threading.Event()
    parses: list[str] = []
    real = scripted.parse_entries

    def gated(raw: Any, path: Path) -> Any:
        parses.append(threading.current_thread().name)
        entered.set()
        release.wait(10)  # on the event loop itself (the bug) this holds the loop, and the test fails
        return real(raw, path)

    monkeypatch.setattr(scripted, "parse_entries", gated)
    monkeypatch.setattr(scripted, "PARSED_ON_THE_LOOP_BYTES", 0)  # as if it were a big one
    generator = ScriptedGenerator()
    answer = Collect()
    generating = asyncio.ensure_future(generator.generate(_request(tmp_path, ChatMessage("user", content="hello")), answer))
    try:
        assert await asyncio.to_thread(entered.wait, 10)
        ran = asyncio.Event()
        asyncio.get_running_loop().call_soon(ran.set)
        await asyncio.wait_for(ran.wait(), 5)
        assert not generating.done(), "the loop ran while the database was still being parsed"
    finally:
        release.set()
    await generating
    assert "".join(answer.chunks) == "Hi!"
    await generator.generate(_request(tmp_path, ChatMessage("user", content="hello")), Collect())
    assert len(parses) == 1 and parses[0] != threading.main_thread().name, parses
