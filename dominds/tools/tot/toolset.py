"""The ``tot`` toolset: the Tree-of-Thoughts tools as Dominds function tools, and their argument surface.

List ``tot`` under a member's ``toolsets:`` in team.yaml. Sessions live in ``<rtws>/.dominds/tot``,
the same directory ``dominds tot-mcp`` uses by default, so an agent and an MCP client can look at
each other's investigations. The descriptions, schemas and argument parsing here are also what the
MCP server uses, so the two surfaces cannot drift apart.

Arguments arrive from models and MCP hosts in many shapes, so ``call_tool`` is lenient where the
intent is unambiguous: camelCase or snake_case names, numbers as strings (``"5"``), lists and objects
as JSON text, states in any case, and ``"null"``/``""`` as a null parent.
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

_SESSION_ID = {"type": "string", "description": "Id returned by tot_start."}
_NODE_ID = {"type": "string", "description": "Node id, R[round].[suffix], e.g. R2.A1."}
_STATE = {"type": "string", "enum": [s.value for s in machine.NodeState]}

PROPERTIES: dict[str, dict[str, Any]] = {
    "query": {"type": "string", "description": "The question to investigate."},
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
                "title": {"type": "string", "description": "Short name of this line of thought."},
                "plannedAction": {"type": "string", "description": "What you will do to explore it."},
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
                "findings": {"type": "string", "description": "What you found; the reason for the state."},
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
        "children and nothing pending). Returns the tree as JSON and Markdown and the VALID root-to-leaf paths.",
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


def _get(args: Mapping[str, Any], name: str, *, required: bool = True) -> Any:
    """The value of ``name`` given in camelCase or snake_case; both, with different values, is an error."""
    snake = _CAMEL_HUMP.sub("_", name).lower()
    present = [key for key in dict.fromkeys((name, snake)) if key in args]
    if len(present) == 2 and args[name] != args[snake]:
        raise _bad(f"both {name} and {snake} were given, with different values.", f"Send only {name}.")
    if not present or args[present[0]] is None:
        if required:
            raise _bad(f"{name} is missing.", f"Add {name} to the arguments.")
        return None
    return args[present[0]]


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _bad(f"{name} must be a non-empty string.", f"Send {name} as text.")
    return value.strip()


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


def parse_nodes(value: Any) -> list[ProposedNode]:
    nodes = []
    for i, raw in enumerate(_items(value, "nodes")):
        parent = _get(raw, "parent", required=False)
        if isinstance(parent, str) and parent.strip().lower() in ("", "null", "none"):
            parent = None
        nodes.append(
            ProposedNode(
                id=_text(_get(raw, "id"), f"nodes[{i}].id"),
                parent=None if parent is None else _text(parent, f"nodes[{i}].parent"),
                title=_text(_get(raw, "title"), f"nodes[{i}].title"),
                planned_action=_text(_get(raw, "plannedAction"), f"nodes[{i}].plannedAction"),
            )
        )
    return nodes


def parse_results(value: Any) -> list[CommitResult]:
    return [
        CommitResult(
            node_id=_text(_get(raw, "nodeId"), f"results[{i}].nodeId"),
            state=parse_state(_get(raw, "state"), f"results[{i}].state"),
            findings=_text(_get(raw, "findings"), f"results[{i}].findings"),
        )
        for i, raw in enumerate(_items(value, "results"))
    ]


def call_tool(service: TotService, tool_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Parse ``args`` for ``tool_name`` and run it; raises ``TotError`` for bad arguments and broken rules."""
    if tool_name == "tot_start":
        return service.start(_text(_get(args, "query"), "query"), parse_min_roots(_get(args, "minRoots", required=False)))
    if tool_name == "tot_status":
        session_id = _get(args, "sessionId", required=False)
        return service.status(None if session_id is None else _text(session_id, "sessionId"))
    if tool_name not in TOOL_SPECS:
        raise _bad(f"unknown tool {tool_name}.", "Use one of " + ", ".join(TOOL_SPECS) + ".")
    sid = _text(_get(args, "sessionId"), "sessionId")
    if tool_name == "tot_propose":
        return service.propose(sid, parse_nodes(_get(args, "nodes")))
    if tool_name == "tot_commit":
        return service.commit(sid, parse_results(_get(args, "results")))
    if tool_name == "tot_reclassify":
        # the origin named this argument newState
        given = _get(args, "state", required=False)
        state = parse_state(given if given is not None else _get(args, "newState"))
        return service.reclassify(sid, _text(_get(args, "nodeId"), "nodeId"), state)
    return service.end(sid)


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

