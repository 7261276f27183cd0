"""Images the model sees: the image artifacts a message names (an MCP tool's picture, ``read_picture``, an
image a user attached) are sent as image content to a vision-capable model, newest first, at most
``IMAGE_BUDGET`` per request; older ones, and every one for a text-only model, stay the placeholder line
the text already holds (``mcp.results.save_artifact``).

Whether a model sees images: its catalog entry's ``vision`` (true/false); without one, Anthropic and
OpenAI Responses models do and Chat Completions servers (often local, text-only) do not.
"""

from __future__ import annotations

import base64
import itertools
import operator
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from dominds.llm.base import ChatMessage, ImagePart, SharedRun, known_same_start
from dominds.mcp.results import ARTIFACTS_DIR, IMAGE_ARTIFACT_LINE

IMAGE_BUDGET = 8
"""Images sent in one request (the newest); each replay sends the course again, so older ones are dropped."""
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Larger images stay placeholders (Anthropic's per-image limit)."""
VISION_BY_DEFAULT = frozenset({"anthropic", "openai-responses"})
_MARKER = "[image saved as artifact"
"""What every placeholder line holds (``IMAGE_ARTIFACT_LINE``): a message without it names no image."""
_CONTENT = operator.attrgetter("content")


def sees_images(api_type: str, model_info: dict[str, Any]) -> bool:
    vision = model_info.get("vision")
    return vision if isinstance(vision, bool) else api_type in VISION_BY_DEFAULT


def attach_images(
    messages: list[ChatMessage], dialog_dir: Path, *, budget: int = IMAGE_BUDGET, kept: dict[str, Any] | None = None
) -> list[ChatMessage]:
    """``messages`` with the images their placeholder lines name, newest first, up to ``budget``;
    ``kept``: where the dialog keeps what it found for the next request (its course cache)."""
    return with_images(messages, None, dialog_dir, budget=budget, kept=kept)[0]


def with_images(
    messages: list[ChatMessage],
    shared: SharedRun | None,
    dialog_dir: Path,
    *,
    budget: int = IMAGE_BUDGET,
    kept: dict[str, Any] | None = None,
) -> tuple[list[ChatMessage], SharedRun | None]:
    """``attach_images``, and what is known of the messages (``shared``) once a message that names an
    image is replaced by one that carries it (``messages`` itself when none is: the list is not copied)."""
    out = messages
    first_replaced = len(messages)
    left = budget
    for index in reversed(_naming(messages, kept if kept is not None else {}, shared)):
        message = out[index]
        if left <= 0:
            break
        if message.role == "assistant":
            continue
        images: list[ImagePart] = []
        # Newest first within a message too (its last lines), so that an older message cut by the budget
        # keeps its newer pictures; they are sent in the order the message names them.
        for found in reversed(list(IMAGE_ARTIFACT_LINE.finditer(message.content))):
            if left <= 0:
                break
            try:
                raw = (dialog_dir / ARTIFACTS_DIR / found["name"]).read_bytes()
            except OSError:
                continue  # removed by hand: the placeholder stays
            if len(raw) > MAX_IMAGE_BYTES:
                continue
            images.append(ImagePart(found["mime"], base64.b64encode(raw).decode("ascii"), found["name"]))
            left -= 1
        if images:
            if out is messages:
                out = list(messages)
            out[index] = replace(message, images=tuple(reversed(images)))
            first_replaced = index
    if shared is not None and first_replaced < len(messages):
        shared = shared.before(first_replaced)
    return out, shared


_KEPT_KEY = "image_naming"
_TAIL = 32
"""How many messages at the end of the previous request are compared one by one with the new one's (the
reminders move near the end every turn), when the context builder said nothing of them; the ones before
are compared as one list."""


def _naming(messages: list[ChatMessage], kept: dict[str, Any], shared: SharedRun | None = None) -> list[int]:
    """Where the messages naming an artifact are. Found in C (a Python test of every message walked the
    whole course at each generation of a vision model), and only among the messages after those the
    previous request had in place: searching every message's text cost 4 ms a turn at 10,000 messages.

    The previous request's start is known from what the context builder said of both (``SharedRun``), or
    else recognised by one list comparison (in C, no call for an identical item; an equal message names
    the same artifacts): comparing every message by identity (``map(operator.is_, …)``, a call and a
    boolean per pair) cost 0.9 ms of a turn at 10,000 messages. The previous request's list is kept as it
    is (no request's list is changed once built): a copy of it was one more pass over every message."""
    found: list[int] = []
    start = 0
    before = kept.get(_KEPT_KEY)
    if before is not None:
        earlier, earlier_shared, naming = before
        start = known_same_start(messages, shared, earlier, earlier_shared)
        if not start:
            start = max(0, len(earlier) - _TAIL)
            if start > len(messages) or earlier[:start] != messages[:start]:
                start = 0
        start += _same_count(earlier[start:], messages[start:]) if start else _same_count(earlier, messages)
        found = [index for index in naming if index < start]
    rest = map(operator.contains, map(_CONTENT, messages[start:]), itertools.repeat(_MARKER))
    found.extend(itertools.compress(itertools.count(start), rest))
    kept[_KEPT_KEY] = (messages, shared, found)
    return found


def _same_count(before: Iterable[ChatMessage], messages: Iterable[ChatMessage]) -> int:
    """How many messages at the start are the same objects in both."""
    return sum(1 for _ in itertools.takewhile(bool, map(operator.is_, before, messages)))
