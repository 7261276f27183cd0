"""Tellask as function tools (DESIGN §5 "Two forms, one semantics"): the five tools a member with
``tellask: tools | both`` is offered, and how one call of them reads as the ``TellaskCall`` the text
grammar would have produced, so both forms run through the same execution (``driver/tellask_exec.py``).

Pure: the driver records the call, runs it, and answers it with the callee's reply as the tool result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dominds.tellask_events import TellaskCall, build_tellask_call
from dominds.tellask_headline import is_mention_char

TELLASK = "tellask"
TELLASK_SESSIONLESS = "tellaskSessionless"
TELLASK_BACK = "tellaskBack"
ASK_HUMAN = "askHuman"
FRESH_BOOTS_REASONING = "freshBootsReasoning"
TELLASK_TOOL_NAMES = frozenset({TELLASK, TELLASK_SESSIONLESS, TELLASK_BACK, ASK_HUMAN, FRESH_BOOTS_REASONING})

RESERVED_TARGETS = {
    "human": f"use `{ASK_HUMAN}` to ask the human",
    "self": f"use `{FRESH_BOOTS_REASONING}` to think with a fresh mind",
    "tellasker": f"use `{TELLASK_BACK}` to ask back whoever gave you your task",
}

_CONTENT = {"type": "string", "description": "The request: everything the recipient needs, self-contained."}
_TARGET = {"type": "string", "description": "Member id of the teammate (from the team directory, without '@')."}
_SESSION = {
    "type": "string",
    "description": "Session slug (letters, digits, _ - .): the same slug resumes the same subdialog with its context.",
}


@dataclass(frozen=True)
class TellaskToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def tellask_tool_specs(*, in_subdialog: bool) -> list[TellaskToolSpec]:
    """The tools offered in tool form; ``tellaskBack`` only in a subdialog (a root has no tellasker)."""
    specs = [
        TellaskToolSpec(
            TELLASK,
            "Give a teammate a task in a resumable session: the same targetAgentId and sessionSlug reach the same "
            "subdialog, which keeps its context. You wait; its final answer is this call's result.",
            _object({"targetAgentId": _TARGET, "sessionSlug": _SESSION, "tellaskContent": _CONTENT},
                    ["targetAgentId", "sessionSlug", "tellaskContent"]),  # fmt: skip
        ),
        TellaskToolSpec(
            TELLASK_SESSIONLESS,
            "Give a teammate a one-off task (a fresh subdialog each time). You wait; its final answer is this "
            "call's result. Several calls in one reply run in parallel.",
            _object({"targetAgentId": _TARGET, "tellaskContent": _CONTENT}, ["targetAgentId", "tellaskContent"]),
        ),
        TellaskToolSpec(
            ASK_HUMAN,
            "Ask the human a question. You wait until they answer; the answer is this call's result.",
            _object({"tellaskContent": _CONTENT}, ["tellaskContent"]),
        ),
        TellaskToolSpec(
            FRESH_BOOTS_REASONING,
            "Think about a sub-question with a fresh mind: a new subdialog of yourself answers it, and its "
            "conclusion is this call's result. sessionSlug (optional) resumes such a subdialog.",
            _object({"tellaskContent": _CONTENT, "sessionSlug": _SESSION}, ["tellaskContent"]),
        ),
    ]
    if in_subdialog:
        specs.insert(
            2,
            TellaskToolSpec(
                TELLASK_BACK,
                "Ask back whoever gave you your current task (when something essential is unclear). You wait; "
                "their answer is this call's result.",
                _object({"tellaskContent": _CONTENT}, ["tellaskContent"]),
            ),
        )
    return specs


def _valid_member_id(value: str) -> bool:
    return bool(value) and all(is_mention_char(ch) for ch in value) and not value.endswith(".")


def tool_call_tellask(name: str, arguments: dict[str, Any] | str, counter: int) -> TellaskCall | str:
    """The ``TellaskCall`` a tool call stands for, or why it cannot run (a note for the model).

    The headline is the one the text grammar would have needed (``@coder !tellaskSession s``), so the
    registry key, the assignment text, the panel and ``show`` read a tool-form call like a text-form one.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"`{name}`: the arguments are not JSON ({exc.msg})."
    if not isinstance(arguments, dict):
        return f"`{name}`: the arguments must be a JSON object."
    content = arguments.get("tellaskContent")
    if not isinstance(content, str) or not content.strip():
        return f"`{name}`: `tellaskContent` is required (a non-empty string)."
    session = arguments.get("sessionSlug")
    if session is not None and (not isinstance(session, str) or session.split() != [session]):
        return f"`{name}`: `sessionSlug` must be one slug (letters, digits, _ - .), without spaces."
    if name == TELLASK and session is None:
        return f"`{TELLASK}`: `sessionSlug` is required; use `{TELLASK_SESSIONLESS}` for a one-off task."
    if name in (TELLASK, TELLASK_SESSIONLESS):
        target = arguments.get("targetAgentId")
        if not isinstance(target, str) or not _valid_member_id(target.removeprefix("@")):
            return f"`{name}`: `targetAgentId` must be a member id from the team directory (without '@')."
        target = target.removeprefix("@")
        if target in RESERVED_TARGETS:
            return f"`{name}`: @{target} is not a teammate; {RESERVED_TARGETS[target]}."
        mention = target
    elif name == TELLASK_BACK:
        mention, session = "tellasker", None
    elif name == ASK_HUMAN:
        mention, session = "human", None
    elif name == FRESH_BOOTS_REASONING:
        mention = "self"
    else:
        return f"`{name}` is not a Tellask tool."
    headline = f"@{mention}" + (f" !tellaskSession {session}" if session else "") + "\n"
    call = build_tellask_call(headline, content, counter)
    if call.error or call.tellask_session != session:
        return f"`{name}`: the session slug {session!r} is not valid (letters, digits, _ - .; each dotted part starts with a letter)."
    return call
