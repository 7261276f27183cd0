"""A fast emitter of block-style YAML for JSON-shaped data (dicts, lists, str, int, float, bool, None).

PyYAML's dumper spends ~0.3 ms per small document in Python-level representers; state files are
rewritten several times per dialog turn, so this emitter writes the same data ~20x faster. Strings
are emitted as JSON strings, which are valid YAML double-quoted scalars; the output parses back with
any YAML loader to the same data (a property test checks that).
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring
from typing import Any

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.!-]*")
# Characters YAML does not allow unescaped (tab, newlines and printable Unicode only). NEL (\x85),
# U+2028 and U+2029 are printable to YAML but read as line breaks inside quotes, and a BOM may be
# dropped by readers: all of them are escaped too.
# Written as the characters escaped rather than as the negation of those kept: the same set (a test walks
# every code point), but a negated class over all of Unicode took ~10 ms to compile at every start.
_NOT_PRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
_RESERVED = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"})

_KEY_CACHE: dict[str, str] = {}
_INF = float("inf")
_MAX_SIMPLE_KEY = 1000
"""YAML reads an implicit key of at most 1,024 characters; a longer one is written as an explicit ``? key``."""


def _key(key: Any) -> str:
    text = str(key)
    cached = _KEY_CACHE.get(text)
    if cached is not None:
        return cached
    plain = _PLAIN_KEY.fullmatch(text) and text.lower() not in _RESERVED
    result = text if plain else _quote(text)
    if len(_KEY_CACHE) < 4096:  # field names repeat; registry keys are bounded by the cap
        _KEY_CACHE[text] = result
    return result


def _quote(text: str) -> str:
    if _NOT_PRINTABLE.search(text):
        return _escape_slowly(text)
    return str(encode_basestring(text))  # the C encoder json.dumps(..., ensure_ascii=False) uses


def _escape_slowly(text: str) -> str:
    """A double-quoted YAML scalar escaping what YAML forbids raw (rare: control chars, lone surrogates)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif "\ud800" <= char <= "\udfff":
            # A lone surrogate is no Unicode text: libyaml refuses its escape and PyYAML does not join a
            # pair, so it is stored as U+FFFD, as everywhere else in the store (textcheck.scrub).
            out.append("\ufffd")
        elif _NOT_PRINTABLE.match(char) or char in "\t\r\x85":
            # YAML's own escapes: \U for astral code points (PyYAML does not join \u surrogate pairs)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _quote(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    number = float(value)
    if number != number:
        return ".nan"
    if number in (_INF, -_INF):
        return ".inf" if number > 0 else "-.inf"
    text = repr(number)
    if "e" in text and "." not in text:
        text = text.replace("e", ".0e")  # YAML 1.1 (PyYAML) reads floats only with a dot: 5e-324 → 5.0e-324
    return text


def _emit(value: Any, indent: str, out: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if len(_key(key)) > _MAX_SIMPLE_KEY:
                _emit_explicit(_key(key), item, indent, out)
            elif isinstance(item, dict) and item:
                out.append(f"{indent}{_key(key)}:\n")
                _emit(item, indent + "  ", out)
            elif isinstance(item, list) and item:
                out.append(f"{indent}{_key(key)}:\n")
                _emit(item, indent, out)
            else:
                out.append(f"{indent}{_key(key)}: {_inline(item)}\n")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list) and item:
                # The first line goes on the dash line; the rest align under it.
                lines: list[str] = []
                _emit(item, indent + "  ", lines)
                lines[0] = f"{indent}- {lines[0][len(indent) + 2:]}"
                out.extend(lines)
            else:
                out.append(f"{indent}- {_inline(item)}\n")
    else:
        out.append(f"{indent}{_scalar(value)}\n")


def _emit_explicit(key: str, item: Any, indent: str, out: list[str]) -> None:
    """``? key`` / ``: value``: the form YAML needs for a key longer than 1,024 characters."""
    out.append(f"{indent}? {key}\n")
    if isinstance(item, dict | list) and item:
        out.append(f"{indent}:\n")
        _emit(item, indent + "  ", out)
    else:
        out.append(f"{indent}: {_inline(item)}\n")


def _inline(value: Any) -> str:
    """A scalar or an empty collection (non-empty collections are always emitted in block style)."""
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def dump(data: Any, header: str = "") -> str:
    out: list[str] = [header] if header else []
    if isinstance(data, dict | list) and data:
        _emit(data, "", out)
    else:
        out.append(_inline(data) + "\n")
    return "".join(out)


# ---------------------------------------------------------------- reading
#
# The reader handles a strict subset of the dialect ``dump`` writes (block YAML whose scalars are JSON:
# quoted strings, numbers, true/false/null, [] and {}) in ~20 µs a file, where PyYAML's loader takes
# ~300 µs. The same file must never mean two things, so wherever YAML 1.1 (PyYAML) could read a token
# differently from JSON the reader declines with ``NotFastYaml`` and the caller hands the whole file to
# PyYAML: octal-looking ``012``, exponents without a dot or sign (``1e5`` is a string to PyYAML),
# boolean-looking keys (``on:``, ``No:``), characters YAML folds or forbids (tabs, CR, NEL, U+2028/9,
# BOM, controls), surrogate escapes (JSON joins a pair, PyYAML does not), keys past YAML's 1,024
# character limit. ``tests/store/test_fastyaml_agreement.py`` holds it to PyYAML over generated documents.

_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+(?:[eE][-+][0-9]+)?")
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
"""Characters the reader leaves to PyYAML: every YAML line break but LF, tabs, controls, BOM, surrogates
(listed, not negated, as ``_NOT_PRINTABLE``)."""
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_MAX_KEY = 1000
"""YAML limits an implicit key to 1,024 characters; longer ones are an error to PyYAML."""
_JSON = json.JSONDecoder()
_MISSING = object()
_CONSTANTS: dict[str, Any] = {"true": True, "false": False, "null": None}
_KNOWN_KEYS: set[str] = set()
"""Plain keys already validated (field names repeat in every file)."""


class NotFastYaml(ValueError):
    """Not the dialect ``store.fastyaml`` reads: parse with PyYAML instead."""


def load(text: str) -> Any:
    """Parse block YAML of JSON scalars (what ``fastyaml.dump`` emits) exactly as PyYAML would.

    Raises ``NotFastYaml`` (and nothing else) for anything outside that subset."""
    if _UNSAFE.search(text):
        raise NotFastYaml("characters YAML may read differently")
    try:
        return _load_lines(text)
    except NotFastYaml:
        raise
    except (ValueError, IndexError) as exc:
        raise NotFastYaml(str(exc)) from exc


def _load_lines(text: str) -> Any:
    lines: list[tuple[int, str]] = []
    for raw in text.split("\n"):
        stripped = raw.lstrip(" ")
        if stripped and stripped[0] != "#":
            lines.append((len(raw) - len(stripped), stripped))
    if not lines:
        return None
    if len(lines) == 1 and _read_split_key(lines[0][1]) is None:
        return _read_scalar(lines[0][1])
    value, pos = _read_block(lines, 0)
    if pos != len(lines):
        raise NotFastYaml("content after the document")
    return value


def _read_string(text: str) -> tuple[str, int]:
    """A JSON string at the start of ``text``: (value, end). Escapes JSON and YAML read alike only."""
    end = text.find('"', 1)
    if end > 0 and "\\" not in text[1:end]:
        return text[1:end], end + 1  # the common case, without the JSON decoder
    if _SURROGATE_ESCAPE.search(text):
        raise NotFastYaml("a surrogate escape")
    value, end = _JSON.raw_decode(text)
    if not isinstance(value, str):
        raise NotFastYaml(text)
    return value, end


def _read_scalar(text: str) -> Any:
    if text[:1] == '"':
        value, end = _read_string(text)
        if end != len(text):
            raise NotFastYaml(text)
        return value
    value = _CONSTANTS.get(text, _MISSING)
    if value is not _MISSING:
        return value
    if text in ("[]", "{}"):
        return [] if text == "[]" else {}
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    raise NotFastYaml(text)


def _read_split_key(text: str) -> tuple[str, str | None] | None:
    """``(key, value text or None)`` for a ``key: …``/``key:`` line; None when the line is no mapping entry."""
    if text[:1] == '"':
        key, end = _read_string(text)
        if text[end : end + 1] != ":":
            return None
        if end > _MAX_KEY:
            raise NotFastYaml("a key too long for YAML")
        rest = text[end + 1 :]
    else:
        key, colon, rest = text.partition(":")
        if not colon:
            return None
        if key not in _KNOWN_KEYS:
            # a plain key must read as a string: ``on``, ``No``, ``null`` and the like do not in YAML 1.1
            if not _PLAIN_KEY.fullmatch(key) or key.lower() in _RESERVED or len(key) > _MAX_KEY:
                raise NotFastYaml(text)
            if len(_KNOWN_KEYS) < 1024:
                _KNOWN_KEYS.add(key)
    if not rest:
        return key, None
    if rest[0] != " ":
        raise NotFastYaml(text)
    return key, rest[1:]


def _read_block(lines: list[tuple[int, str]], pos: int) -> tuple[Any, int]:
    indent, text = lines[pos]
    return _read_list(lines, pos, indent) if text[:2] == "- " else _read_map(lines, pos, indent)


def _read_map(lines: list[tuple[int, str]], pos: int, indent: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    count = len(lines)
    while pos < count:
        line_indent, text = lines[pos]
        if line_indent != indent or text[:2] == "- ":
            break
        pair = _read_split_key(text)
        if pair is None:
            raise NotFastYaml(text)
        pos += 1
        if pair[1] is not None:
            out[pair[0]] = _read_scalar(pair[1])
        elif pos < count and (lines[pos][0] > indent or (lines[pos][0] == indent and lines[pos][1][:2] == "- ")):
            out[pair[0]], pos = _read_block(lines, pos)
        else:
            out[pair[0]] = None
    if pos < count and lines[pos][0] > indent:
        raise NotFastYaml("unexpected indentation")
    return out, pos


def _read_list(lines: list[tuple[int, str]], pos: int, indent: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    while pos < len(lines) and lines[pos][0] == indent and lines[pos][1][:2] == "- ":
        text = lines[pos][1][2:]
        if _read_split_key(text) is None:
            out.append(_read_scalar(text))
            pos += 1
        else:  # a mapping item: its first key sits on the dash line, the rest align two columns in
            lines[pos] = (indent + 2, text)
            item, pos = _read_map(lines, pos, indent + 2)
            out.append(item)
    return out, pos
