"""Text that can be stored: lone UTF-16 surrogates are refused at the edge and scrubbed from model output.

JSON allows ``"\\ud800"`` and Python decodes it to a lone surrogate, which no UTF-8 file can hold. Input
from people and clients is refused with a clear message (the edge); text a provider or a tool produced is
scrubbed to U+FFFD before it is stored or published, so the reply is kept rather than lost.
"""

from __future__ import annotations

import re
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def scrub(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (cheap when there is none)."""
    return _LONE_SURROGATE.sub(REPLACEMENT, text) if _LONE_SURROGATE.search(text) else text


def join_surrogates(text: str) -> tuple[str, str]:
    """Join surrogate pairs split across chunks: (clean text, a trailing high surrogate to carry over)."""
    if not _LONE_SURROGATE.search(text):
        return text, ""
    carry = ""
    if "\ud800" <= text[-1] <= "\udbff":
        text, carry = text[:-1], text[-1]
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return scrub(joined), carry


def lone_surrogate_at(value: Any, path: str = "") -> str | None:
    """Where in a decoded JSON value a lone surrogate sits (``content``, ``items.2``), or None."""
    if isinstance(value, str):
        return (path or "text") if _LONE_SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = lone_surrogate_at(key, path) or lone_surrogate_at(item, f"{path}.{key}" if path else str(key))
            if where:
                return where
    elif isinstance(value, list):
        for index, item in enumerate(value):
            where = lone_surrogate_at(item, f"{path}.{index}" if path else str(index))
            if where:
                return where
    return None


def lone_surrogate_problem(where: str) -> str:
    return (
        f"`{where}` contains a lone UTF-16 surrogate (U+D800–U+DFFF), which is not valid Unicode text and cannot "
        "be stored; send the text as valid Unicode (a surrogate pair must stay together)"
    )
