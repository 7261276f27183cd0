"""Problems: configuration mistakes reported to the user instead of crashing.

Loading ``.minds/team.yaml`` or ``.minds/llm.yaml`` never raises. Every bad key, bad type or bad
reference becomes a ``Problem`` that names the file (rtws-relative) and the 1-based line, and the
loader carries on with a best-effort result. ``dominds check`` prints them; the daemon publishes
them as ``problems_snapshot``.

The second half of this module reads YAML as a node tree (``yaml.compose``) rather than as plain
Python values, because only the nodes remember where each key was written.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

Severity = Literal["error", "warning"]

TEAM_CONFIG_ERROR = "team_workspace_config_error"
"""Kind of every problem found in ``.minds/team.yaml``."""
LLM_CONFIG_ERROR = "llm_workspace_config_error"
"""Kind of every problem found in ``.minds/llm.yaml`` (or the built-in provider defaults)."""


@dataclass(frozen=True)
class Problem:
    """One configuration problem, located in a file."""

    kind: str
    """What area is misconfigured, e.g. ``team_workspace_config_error``."""
    source: str
    """The file, as a path relative to the rtws (``.minds/team.yaml``)."""
    line: int | None
    """1-based line in ``source``; ``None`` when the problem is about the file as a whole."""
    severity: Severity
    """``error``: the setting is ignored or cannot work; ``warning``: ignored but harmless."""
    message: str
    """One line a person can act on."""
    id: str
    """Stable id (same problem ⇒ same id across reloads), so a UI can de-duplicate."""

    def format(self) -> str:
        """``file:line: severity: message``, the shape compilers and editors understand."""
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.severity}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "source": self.source,
            "line": self.line,
            "severity": self.severity,
            "message": self.message,
            "id": self.id,
        }


def make_problem(
    kind: str, source: str, line: int | None, message: str, severity: Severity = "error"
) -> Problem:
    digest = hashlib.sha1(f"{source}\0{line}\0{message}".encode()).hexdigest()[:10]
    return Problem(
        kind=kind, source=source, line=line, severity=severity, message=message, id=f"{kind}/{digest}"
    )


@dataclass
class ProblemCollector:
    """Accumulates the problems of one file; loaders pass it down instead of raising."""

    kind: str
    source: str
    problems: list[Problem] = field(default_factory=list)

    def error(self, line: int | None, message: str) -> None:
        self.problems.append(make_problem(self.kind, self.source, line, message, "error"))

    def warning(self, line: int | None, message: str) -> None:
        self.problems.append(make_problem(self.kind, self.source, line, message, "warning"))

    def wrong_type(self, node: Node, line: int, what: str, expected: str, outcome: str = "ignored") -> None:
        """Report that ``what`` must be ``expected``, naming what was written instead."""
        self.error(line, f"{what} must be {expected}, got {describe_node(node)}; {outcome}")


# ---------------------------------------------------------------- YAML with line numbers

_Composer: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def node_line(node: Node) -> int:
    """The 1-based line where ``node`` starts."""
    return int(node.start_mark.line) + 1


def compose_yaml(text: str, collector: ProblemCollector) -> Node | None:
    """Parse ``text`` into a node tree; a syntax error becomes a problem and ``None``.

    An empty document is ``None`` too (callers treat it as an empty mapping).
    """
    try:
        return yaml.compose(text, Loader=_Composer)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = int(mark.line) + 1 if mark is not None else None
        detail = exc.problem or exc.context or "invalid YAML"
        collector.error(line, f"YAML syntax error: {detail}; nothing in the file can be read until it is fixed")
    except yaml.YAMLError as exc:  # reader errors (bad encoding, control characters) carry no mark
        collector.error(None, f"YAML error: {exc}; nothing in the file can be read until it is fixed")
    return None


def node_value(node: Node) -> Any:
    """The plain Python value of ``node`` (safe tags only).

    Raises ``yaml.YAMLError`` for values that cannot be built (e.g. a list used as a mapping key);
    ``try_node_value`` turns that into a problem.
    """
    return SafeConstructor().construct_document(node)


_INVALID = object()


def try_node_value(node: Node, collector: ProblemCollector) -> Any:
    """``node_value``, or a problem and ``INVALID`` when the value cannot be built."""
    try:
        return node_value(node)
    except yaml.YAMLError as exc:
        collector.error(node_line(node), f"cannot read this value: {getattr(exc, 'problem', None) or exc}")
        return _INVALID


def is_invalid(value: object) -> bool:
    return value is _INVALID


@dataclass(frozen=True)
class YamlEntry:
    """One ``key: value`` of a YAML mapping, with the line of its key."""

    key: str
    line: int
    node: Node


def mapping_entries(node: Node, collector: ProblemCollector, what: str) -> Iterator[YamlEntry]:
    """The entries of a mapping node, in file order.

    Keys written in the mapping come first, then keys pulled in by merge keys (``<<: *anchor``)
    that the mapping does not override. Non-string keys and duplicated keys are reported and
    skipped (a duplicate keeps the first value, as a person reading top-down expects).
    The caller has checked that ``node`` is a ``MappingNode``.
    """
    assert isinstance(node, MappingNode)
    own_pairs = [pair for pair in node.value if pair[0].tag != _MERGE_TAG]
    # flatten_mapping rewrites .value as merged pairs followed by own pairs; work on a copy so that
    # walking the same node twice gives the same entries
    flat = MappingNode(node.tag, list(node.value), node.start_mark, node.end_mark)
    try:
        SafeConstructor().flatten_mapping(flat)
        merged_pairs = flat.value[: len(flat.value) - len(own_pairs)]
    except yaml.YAMLError as exc:
        collector.error(node_line(node), f"{what}: bad merge key: {getattr(exc, 'problem', None) or exc}")
        merged_pairs = []
    seen: set[str] = set()
    for key_node, value_node in own_pairs:
        line = node_line(key_node)
        if not isinstance(key_node, ScalarNode) or key_node.tag != _STR_TAG:
            collector.error(line, f"{what}: keys must be strings, got {describe_node(key_node)}")
            continue
        key = str(key_node.value)
        if key in seen:
            collector.error(line, f"{what}: duplicate key {key!r}; the first one is used")
            continue
        seen.add(key)
        yield YamlEntry(key, line, value_node)
    for key_node, value_node in merged_pairs:
        if isinstance(key_node, ScalarNode) and key_node.tag == _STR_TAG and key_node.value not in seen:
            seen.add(str(key_node.value))
            yield YamlEntry(str(key_node.value), node_line(key_node), value_node)


_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


def describe_node(node: Node) -> str:
    """A short type name for messages: ``a list``, ``a number``, ``null``…

    A list of strings is ``a list of strings``; a list with another item says which item.
    """
    if isinstance(node, SequenceNode):
        for index, item in enumerate(node.value, 1):
            if not (isinstance(item, ScalarNode) and item.tag == _STR_TAG):
                return f"a list whose item {index} is {_type_name(item)}"
        return "a list of strings" if node.value else "an empty list"
    return _type_name(node)


def _type_name(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    tag = str(node.tag).rsplit(":", 1)[-1]
    return {
        "str": "a string",
        "int": "an integer",
        "float": "a number",
        "bool": "a boolean",
        "null": "null",
    }.get(tag, f"a {tag}")


def is_mapping(node: Node) -> bool:
    return isinstance(node, MappingNode)


def is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``; appended to "unknown key" messages."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
