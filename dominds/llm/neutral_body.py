"""The scripted provider's request body: the provider-neutral request as JSON, built in time independent
of the conversation's length.

A dialog's next request repeats the previous one's messages and adds a few: the messages' JSON of recent
requests is kept, a message object found at the same place in a kept request (a course's messages are the
same objects from one request to the next) is recognised by identity, in C, with no Python call per
message, and only the other messages are serialised. The bytes equal ``json.dumps`` of the whole request (``tests/llm/test_neutral_body.py``).
Bug this fixes: recording what the model saw made every scripted turn serialise the whole history, so a
turn at 3,000 turns did ~100 times the work of a turn at 10 (``tests/driver/test_long_dialogs.py``).
"""

from __future__ import annotations

import itertools
import json
import operator
from dataclasses import asdict
from typing import Any

from dominds.llm.base import ChatMessage, GenerationRequest

KEPT_REQUESTS = 16
"""How many recent requests' message JSON is kept (the least recently used dropped first)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def message_json(message: ChatMessage) -> str:
    return _dumps({key: value for key, value in asdict(message).items() if value not in (None, False, (), "")})


class NeutralBodies:
    """The message JSON of recent requests, reused where a new request has the same message object at
    the same place (the memory and Taskdoc messages are new objects each time, a course's are not)."""

    def __init__(self) -> None:
        self._kept: list[tuple[list[ChatMessage], list[str]]] = []

    def body(self, request: GenerationRequest) -> bytes:
        parts = self._message_parts(request.messages)
        head = _dumps({"model": request.model_name, "system": request.system_prompt})
        tail = _dumps(
            {
                "tools": [asdict(tool) for tool in request.tools],
                "params": request.model_params,
                "stream": request.streaming,
            }
        )
        text = f'{head[:-1]}, "messages": [{", ".join(parts)}], {tail[1:]}'
        return text.encode("utf-8")

    def _message_parts(self, messages: list[ChatMessage]) -> list[str]:
        # The kept request sharing the most messages in place (counted in C: no call per message).
        best, shared = -1, 0
        for index, (before, _) in enumerate(self._kept):
            same = sum(map(operator.is_, before, messages))
            if same > shared:
                best, shared = index, same
        if best < 0:
            parts = [message_json(message) for message in messages]
        else:
            before, before_parts = self._kept.pop(best)
            parts = before_parts[: len(messages)]
            for place in itertools.compress(range(len(parts)), map(operator.is_not, before, messages)):
                parts[place] = message_json(messages[place])
            parts.extend(message_json(message) for message in messages[len(parts) :])
        self._kept.append((list(messages), parts))
        del self._kept[:-KEPT_REQUESTS]
        return parts
