"""Find the JSON object in a model's answer: fenced, bare, or broken in the ways models break it.

Candidates, in order: each ```json fence, each other ``` fence, the text from its first ``{`` (an
unclosed fence from a truncated answer lands here), and the text as one JSON string (an object that
was escaped twice). Each candidate is parsed as is (the first top-level value wins, so glued objects
and trailing prose do not matter), then once more after ``repair_json``.

``repair_json`` fixes what the seed's own examples and real models produce: ``//`` and ``/* */``
comments, ``...`` placeholders, a leading ``+`` on numbers (the seed writes ``+0.05``), Chinese or
single quotes used as string delimiters, unquoted keys and bare-word values, Python ``True/False/None``,
trailing commas, and a truncated end (open string, dangling key, unclosed brackets).
"""

from __future__ import annotations

import json
import re
from typing import Any

_JSON_FENCE = re.compile(r"```[ \t]*json[ \t]*\n?(.*?)```", re.S | re.I)
_ANY_FENCE = re.compile(r"```[^\n`]*\n?(.*?)```", re.S)
_WORD = re.compile(r"[^\W\d][\w$-]*")
_LITERALS = {"true": "true", "false": "false", "null": "null", "True": "true", "False": "false", "None": "null"}
_OPEN_QUOTES = {'"': '"', "\u201c": "\u201d", "\u201d": "\u201d", "'": "'"}
"""Opening delimiter → the delimiter that closes it (an ASCII ``"`` also closes a curly-quoted string)."""


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object found in ``text`` (see the module docstring), or ``None``."""
    for candidate in _candidates(text):
        for attempt in (candidate, repair_json(candidate)):
            parsed = _first_object(attempt)
            if parsed is not None:
                return parsed
    return None


def _candidates(text: str) -> list[str]:
    found = [m.group(1) for m in _JSON_FENCE.finditer(text)]
    found += [m.group(1) for m in _ANY_FENCE.finditer(text) if m.group(1) not in found]
    brace = text.find("{")
    if brace >= 0:
        found.append(text[brace:])
    stripped = text.strip()
    if stripped.startswith('"') or '\\"' in stripped:
        found.append(stripped)
        found.append(stripped.replace('\\"', '"'))
    return [c for c in found if "{" in c]


def _first_object(candidate: str, depth: int = 0) -> dict[str, Any] | None:
    start = min((i for i in (candidate.find("{"), candidate.find('"')) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(candidate, start)
    except json.JSONDecodeError:
        return None
    if isinstance(value, str) and depth == 0:  # an object serialized into a string
        return _first_object(value, 1)
    return value if isinstance(value, dict) else None


def repair_json(text: str) -> str:
    """Best-effort rewrite of the first ``{…}`` in ``text`` into valid JSON (see the module docstring)."""
    start = text.find("{")
    if start < 0:
        return text
    return _Repairer(text).run(start)


class _Repairer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.closers: list[str] = []
        """Expected closing brackets of the open containers, innermost last."""
        self.pending_key = False
        """A string just closed where a key belongs and no ``:`` followed yet."""

    def run(self, start: int) -> str:
        text, i = self.text, start
        while i < len(text):
            ch = text[i]
            if ch in _OPEN_QUOTES:
                i = self._string(i)
            elif text.startswith("//", i):
                i = _line_end(text, i)
            elif text.startswith("/*", i):
                end = text.find("*/", i + 2)
                i = len(text) if end < 0 else end + 2
            elif ch in "{[":
                self.closers.append("}" if ch == "{" else "]")
                self.out.append(ch)
                i += 1
            elif ch in "}]":
                i += 1
                if not self.closers:
                    continue  # a stray closer
                self._drop_trailing_comma()
                self.out.append(self.closers.pop())
                if not self.closers:
                    break  # the top-level object is complete; whatever follows is not ours
            elif ch == "+" and i + 1 < len(text) and (text[i + 1].isdigit() or text[i + 1] == "."):
                i += 1  # JSON has no unary plus
            elif text.startswith("...", i) or ch == "\u2026":
                i += 3 if ch == "." else 1  # placeholder: "[...]" → "[]", "[1, ...]" → "[1]"
            elif ch == ":":
                self.pending_key = False
                self.out.append(ch)
                i += 1
            elif _WORD.match(text, i) and not _inside_number(text, i):
                i = self._word(i)
            else:
                self.out.append(ch)
                i += 1
        return self._finish()

    def _string(self, i: int) -> int:
        text = self.text
        closer = _OPEN_QUOTES[text[i]]
        key_position = self._last_significant() in ("{", ",") and self.closers[-1:] == ["}"]
        chars = ['"']
        i += 1
        while i < len(text):
            ch = text[i]
            if ch == "\\" and i + 1 < len(text):
                chars.append(text[i : i + 2])
                i += 2
                continue
            if ch == closer or (closer != "'" and ch == '"'):
                i += 1
                break
            chars.append('\\"' if ch == '"' else ch)
            i += 1
        chars.append('"')
        self.out.append("".join(chars))
        self.pending_key = key_position
        return i

    def _word(self, i: int) -> int:
        match = _WORD.match(self.text, i)
        assert match is not None
        word, end = match.group(0), match.end()
        if word in _LITERALS:
            self.out.append(_LITERALS[word])
            return end
        follow = end
        while follow < len(self.text) and self.text[follow] in " \t\r\n":
            follow += 1
        is_key = follow < len(self.text) and self.text[follow] == ":"
        self.out.append(json.dumps(word))
        self.pending_key = is_key
        return end

    def _last_significant(self) -> str:
        for piece in reversed(self.out):
            stripped = piece.strip()
            if stripped:
                return stripped[-1]
        return ""

    def _drop_trailing_comma(self) -> None:
        while self.out and not self.out[-1].strip():
            self.out.pop()
        if self.out and self.out[-1] == ",":
            self.out.pop()

    def _finish(self) -> str:
        self._drop_trailing_comma()
        if self.pending_key:
            self.out.append(": null")
        elif self._last_significant() == ":":
            self.out.append(" null")
        while self.closers:
            self._drop_trailing_comma()
            self.out.append(self.closers.pop())
        return "".join(self.out)


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def _inside_number(text: str, i: int) -> bool:
    # "1e5" and "2.5E-3": the exponent letter is part of a number, not a bare word
    return i > 0 and (text[i - 1].isdigit() or text[i - 1] == ".") and text[i] in "eE"
