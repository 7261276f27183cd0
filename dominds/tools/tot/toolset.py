"""The ``tot`` toolset: the Tree-of-Thoughts tools as Dominds function tools, and their argument surface.

List ``tot`` under a member's ``toolsets:`` in team.yaml. Sessions live in ``<rtws>/.dominds/tot``,
the same directory ``dominds tot-mcp`` uses by default, so an agent and an MCP client can look at
each other's investigations. The descriptions, schemas and argument parsing here are also what the
MCP server uses, so the two surfaces cannot drift apart.

Arguments arrive from models and MCP hosts in many shapes, so ``call_tool`` is lenient where the
intent is unambiguous: camelCase or snake_case names, numbers as strings (``"5"``), lists and objects
as JSON text, states in any case, and ``"null"``/``""`` as a null parent. It is strict where a guess
could be wrong: an argument given under two spellings, an unknown argument (a typo would otherwise
silently fall back to a default), an id with spaces around it, or a text over its limit is
``INVALID_ARGUMENT`` naming the argument; nothing is trimmed or dropped silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from dominds.tools.base import (
    FuncTool,
    ToolCallContext,
    ToolError,
    ToolHandler,
    object_schema,
)
from dominds.tools.tot import machine
from dominds.tools.tot.machine import CommitResult, NodeState, ProposedNode, TotError
from dominds.tools.tot.report import end_answer
from dominds.tools.tot.sessions import SessionStore, TotService

USAGE = f"""\
Tree of Thoughts: explore a question as a tree of lines of thought, in rounds.
Ids: R[round].[suffix]. Roots are R1.A, R1.B, ... (parent null); a child is one round deeper and extends its
parent's suffix: R1.A -> R2.A1, R2.A2 -> R3.A1a. Never R1.A.1 or R2-A1.
Workflow: tot_start -> (tot_propose up to {machine.MAX_BATCH} nodes -> tot_commit their results) repeated ->
tot_end, which needs a committed node in round {machine.MIN_END_ROUND}.
States: DRILL (lead, needs >= 2 children), VERIFY (ambiguous, needs >= 1), DEAD, VALID (solution),
SPEC (theory); the last three are terminal. If every branch closes before round {machine.MIN_END_ROUND},
add lateral roots (R1.F, ...) or tot_reclassify a node back to DRILL/VERIFY."""

TEXT_LIMITS = {"query": 20_000, "title": 500, "plannedAction": 5_000, "findings": 20_000}
"""Characters each text argument may have: sessions are files that every later call reads back."""

_SESSION_ID = {"type": "string", "description": "Id returned by tot_start."}
_NODE_ID = {"type": "string", "description": "Node id, R[round].[suffix], e.g. R2.A1."}
_STATE = {"type": "string", "enum": [s.value for s in machine.NodeState]}

PROPERTIES: dict[str, dict[str, Any]] = {
    "query": {"type": "string", "maxLength": TEXT_LIMITS["query"], "description": "The question to investigate."},
    "minRoots": {
        "type": "integer",
        "minimum": machine.MIN_ROOTS_RANGE[0],
        "maximum": machine.MIN_ROOTS_RANGE[1],
        "description": f"Roots round 1 needs (default {machine.DEFAULT_MIN_ROOTS}).",
    },
    "sessionId": _SESSION_ID,
    "nodes": {
        "type": "array",
        "minItems": 1,
        "maxItems": machine.MAX_BATCH,
        "items": object_schema(
            {
                "id": _NODE_ID,
                "parent": {"type": ["string", "null"], "description": "Committed parent id; null for a root."},
                "title": {"type": "string", "maxLength": TEXT_LIMITS["title"], "description": "Short name of this line of thought."},
                "plannedAction": {
                    "type": "string", "maxLength": TEXT_LIMITS["plannedAction"], "description": "What you will do to explore it.",
                },
            },
            ["id", "parent", "title", "plannedAction"],
        ),
    },
    "results": {
        "type": "array",
        "minItems": 1,
        "maxItems": machine.MAX_BATCH,
        "items": object_schema(
            {
                "nodeId": {"type": "string", "description": "Id of a proposed node."},
                "state": _STATE,
                "findings": {
                    "type": "string", "maxLength": TEXT_LIMITS["findings"], "description": "What you found; the reason for the state.",
                },
            },
            ["nodeId", "state", "findings"],
        ),
    },
    "nodeId": {"type": "string", "description": "Id of a committed node."},
    "state": {**_STATE, "description": "The new state."},
}

# tool name -> (description, required arguments, optional arguments)
TOOL_SPECS: dict[str, tuple[str, list[str], list[str]]] = {
    "tot_start": (f"Start a Tree-of-Thoughts investigation; returns its sessionId.\n\n{USAGE}", ["query"], ["minRoots"]),
    "tot_propose": (
        f"Propose 1 to {machine.MAX_BATCH} nodes (phase 1 of 2). Parents must be committed and open "
        "(DRILL/VERIFY). Nothing is stored if any node breaks a rule.",
        ["sessionId", "nodes"],
        [],
    ),
    "tot_commit": (
        "Commit the results of proposed nodes (phase 2 of 2): the state each exploration reached and its "
        "findings. DRILL needs >= 2 children later, VERIFY >= 1; DEAD, VALID and SPEC close the branch.",
        ["sessionId", "results"],
        [],
    ),
    "tot_reclassify": (
        "Change a committed node's state; moving a terminal node back to DRILL or VERIFY revives its branch. "
        "A node with children cannot become terminal.",
        ["sessionId", "nodeId", "state"],
        [],
    ),
    "tot_status": (
        "With sessionId: the session's round, counts, open nodes, what blocks tot_end, and the tree. "
        "Without: every session in the workspace.",
        [],
        ["sessionId"],
    ),
    "tot_end": (
        f"End the investigation (only from round {machine.MIN_END_ROUND}, with every DRILL/VERIFY node given its "
        "children and nothing pending). Returns the counts, the VALID root-to-leaf paths, the SPEC theories and "
        "the tree, long texts clipped; the full report (every text, the tree as JSON and Markdown) is written "
        "to the files named under fullReport.",
        ["sessionId"],
        [],
    ),
}


def parameters_for(tool_name: str) -> dict[str, Any]:
    _, required, optional = TOOL_SPECS[tool_name]
    return object_schema({name: PROPERTIES[name] for name in required + optional}, required)


_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _bad(message: str, hint: str) -> TotError:
    return TotError.of("INVALID_ARGUMENT", message, hint=hint)


def _spellings(name: str) -> tuple[str, ...]:
    """The names an argument is accepted under: camelCase and its snake_case twin."""
    return tuple(dict.fromkeys((name, _CAMEL_HUMP.sub("_", name).lower())))


def _known(args: Mapping[str, Any], names: list[str], where: str) -> None:
    """Refuse arguments that are none of ``names`` (in either spelling): a typo must not fall back silently."""
    allowed = {spelling for name in names for spelling in _spellings(name)}
    unknown = [key for key in args if key not in allowed]
    if unknown:
        listed = ", ".join(repr(key) for key in unknown)
        raise _bad(f"unknown argument {listed}{' in ' + where if where else ''}.", "Known arguments: " + ", ".join(names) + ".")


def _get(args: Mapping[str, Any], name: str, *, required: bool = True, where: str = "", also: tuple[str, ...] = ()) -> Any:
    """The value of ``name`` (camelCase or snake_case, or an older name in ``also``); two spellings at once is an error."""
    present = [key for key in dict.fromkeys((*_spellings(name), *(s for a in also for s in _spellings(a)))) if key in args]
    label = f"{where}." if where else ""
    if len(present) > 1:
        both = " and ".join(f"{label}{key}" for key in present)
        raise _bad(f"both {both} were given; they are one argument.", f"Send only {name}.")
    if not present or args[present[0]] is None:
        if required:
            raise _bad(f"{label}{name} is missing.", f"Add {name} to the arguments.")
        return None
    return args[present[0]]


def _text(value: Any, name: str, limit: int | None = None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _bad(f"{name} must be a non-empty string.", f"Send {name} as text.")
    if limit is not None and len(value) > limit:
        raise _bad(f"{name} is {len(value):,} characters; at most {limit:,} are accepted.", "Shorten it; keep details in files.")
    return value.strip()


def _id(value: Any, name: str) -> str:
    """An id exactly as given: one with spaces around it is refused, never trimmed into another id."""
    if not isinstance(value, str) or not value.strip():
        raise _bad(f"{name} must be a non-empty string.", f"Send {name} as text.")
    if value != value.strip():
        raise _bad(f"{name} {value!r} has spaces around it.", "Send the id exactly as it was returned, without spaces.")
    return value


def _decoded(value: Any) -> Any:
    """``value`` parsed from JSON when it is JSON text (some hosts send arrays and objects that way)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _items(value: Any, name: str) -> list[Mapping[str, Any]]:
    decoded = _decoded(value)
    if not isinstance(decoded, list):
        raise _bad(f"{name} must be a list of objects.", f"Send {name} as a JSON array.")
    items = [_decoded(item) for item in decoded]
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise _bad(f"{name}[{i}] must be an object.", f"Send each item of {name} as a JSON object.")
    return items


def parse_min_roots(value: Any) -> int:
    low, high = machine.MIN_ROOTS_RANGE
    hint = f"minRoots is a whole number from {low} to {high} (default {machine.DEFAULT_MIN_ROOTS})."
    if value is None:
        return machine.DEFAULT_MIN_ROOTS
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(f"minRoots must be a number, got {value!r}.", hint)
    if not low <= value <= high:
        raise _bad(f"minRoots {value} is out of range.", hint)
    return value


def parse_state(value: Any, name: str = "state") -> NodeState:
    try:
        return NodeState(value.strip().upper() if isinstance(value, str) else value)
    except ValueError:
        raise TotError.of("INVALID_STATE", f"{name} {value!r} is not a state.") from None


_NODE_FIELDS = ["id", "parent", "title", "plannedAction"]
_RESULT_FIELDS = ["nodeId", "state", "findings"]


def parse_nodes(value: Any) -> list[ProposedNode]:
    nodes = []
    for i, raw in enumerate(_items(value, "nodes")):
        where = f"nodes[{i}]"
        _known(raw, _NODE_FIELDS, where)
        parent = _get(raw, "parent", required=False, where=where)
        if isinstance(parent, str) and parent.strip().lower() in ("", "null", "none"):
            parent = None
        nodes.append(
            ProposedNode(
                id=_id(_get(raw, "id", where=where), f"{where}.id"),
                parent=None if parent is None else _id(parent, f"{where}.parent"),
                title=_text(_get(raw, "title", where=where), f"{where}.title", TEXT_LIMITS["title"]),
                planned_action=_text(
                    _get(raw, "plannedAction", where=where), f"{where}.plannedAction", TEXT_LIMITS["plannedAction"]
                ),
            )
        )
    return nodes


def parse_results(value: Any) -> list[CommitResult]:
    results = []
    for i, raw in enumerate(_items(value, "results")):
        where = f"results[{i}]"
        _known(raw, _RESULT_FIELDS, where)
        results.append(
            CommitResult(
                node_id=_id(_get(raw, "nodeId", where=where), f"{where}.nodeId"),
                state=parse_state(_get(raw, "state", where=where), f"{where}.state"),
                findings=_text(_get(raw, "findings", where=where), f"{where}.findings", TEXT_LIMITS["findings"]),
            )
        )
    return results


STATE_ALIASES = ("newState",)
"""The origin named tot_reclassify's ``state`` argument ``newState``; both names are accepted, not both at once."""


def call_tool(service: TotService, tool_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Parse ``args`` for ``tool_name`` and run it; raises ``TotError`` for bad arguments and broken rules."""
    if tool_name not in TOOL_SPECS:
        raise _bad(f"unknown tool {tool_name}.", "Use one of " + ", ".join(TOOL_SPECS) + ".")
    _, required, optional = TOOL_SPECS[tool_name]
    _known(args, required + optional + (list(STATE_ALIASES) if tool_name == "tot_reclassify" else []), "")
    if tool_name == "tot_start":
        query = _text(_get(args, "query"), "query", TEXT_LIMITS["query"])
        return service.start(query, parse_min_roots(_get(args, "minRoots", required=False)))
    if tool_name == "tot_status":
        session_id = _get(args, "sessionId", required=False)
        return service.status(None if session_id is None else _id(session_id, "sessionId"))
    sid = _id(_get(args, "sessionId"), "sessionId")
    if tool_name == "tot_propose":
        return service.propose(sid, parse_nodes(_get(args, "nodes")))
    if tool_name == "tot_commit":
        return service.commit(sid, parse_results(_get(args, "results")))
    if tool_name == "tot_reclassify":
        state = parse_state(_get(args, "state", also=STATE_ALIASES))
        return service.reclassify(sid, _id(_get(args, "nodeId"), "nodeId"), state)
    return end_answer(service, sid)


def _handler(tool_name: str) -> ToolHandler:
    async def handle(ctx: ToolCallContext, args: dict[str, Any]) -> str:
        service = TotService(SessionStore.for_rtws(ctx.rtws))
        try:
            result = call_tool(service, tool_name, args)
        except TotError as exc:
            raise ToolError(exc.describe()) from exc
        return json.dumps(result, ensure_ascii=False, indent=2)

    return handle


TOT_TOOLS = [
    FuncTool(name=name, description=spec[0], parameters=parameters_for(name), handler=_handler(name))
    for name, spec in TOOL_SPECS.items()
]

