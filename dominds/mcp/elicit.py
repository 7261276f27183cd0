"""An MCP server's elicitation becomes a question for the human on the calling dialog.

During a tool call a server may ask the client for input (``elicitation/create``). Dominds asks the
person: a Q4H on the dialog whose call it is (panel, ``dominds answer``, ``dominds mcp``), kind
``elicitation``, whose answer goes back to the server instead of into the dialog. The answer is read
against the server's requested schema: one field takes the whole answer; several take a JSON object or
one ``name: value`` a line. Answering ``decline`` declines; so does no answer within
``ELICIT_TIMEOUT_S``, a dialog that is gone, or an answer that does not fit the schema (the server then
decides what to do). A URL-mode request asks the person to open the URL and answer ``done``.
"""

from __future__ import annotations

import json
from typing import Any

ELICIT_TIMEOUT_S = 600.0

Value = str | int | float | bool | list[str] | None


class AnswerMisfit(ValueError):
    """The person's answer does not fit the requested schema."""


def _decline() -> Any:
    import mcp_types

    return mcp_types.ElicitResult(action="decline")


async def ask_person(server_id: str, ctx: Any, params: Any, timeout_s: float | None = None) -> Any:
    """The ``ElicitResult`` for ``params`` (an ``ElicitRequestParams``), asked of the person on ``ctx``'s dialog
    (for ``timeout_s``, default ``ELICIT_TIMEOUT_S``)."""
    import mcp_types

    timeout_s = ELICIT_TIMEOUT_S if timeout_s is None else timeout_s
    engine, dialog = ctx.services.get("engine"), ctx.services.get("dialog")
    if engine is None or dialog is None:
        return _decline()
    message = str(getattr(params, "message", "") or "").strip()
    if getattr(params, "mode", "form") == "url":
        head = f"@human [MCP {server_id}] {message}"
        body = f"Open {params.url} and do what it asks, then answer `done` (or `decline`)."
        answer = await engine.ask_human_and_wait(dialog, head, body, ctx.call_id, timeout_s)
        return mcp_types.ElicitResult(action="accept") if answer is not None else _decline()
    properties: dict[str, Any] = dict((params.requested_schema or {}).get("properties") or {})
    head = f"@human [MCP {server_id}] {message}"
    answer = await engine.ask_human_and_wait(dialog, head, how_to_answer(properties), ctx.call_id, timeout_s)
    if answer is None:
        return _decline()
    try:
        content = read_answer(answer, properties)
    except AnswerMisfit:
        return _decline()
    return mcp_types.ElicitResult(action="accept", content=content)


def how_to_answer(properties: dict[str, Any]) -> str:
    fields = [f"`{name}` ({_kind(spec)}){': ' + str(spec['description']) if spec.get('description') else ''}" for name, spec in properties.items()]
    if not fields:
        return "The MCP server asks during a tool call. Answer anything to go on, or `decline`."
    if len(fields) == 1:
        return f"The MCP server asks during a tool call for {fields[0]}. Answer with the value, or `decline`."
    listed = "\n".join(f"- {field}" for field in fields)
    return f"The MCP server asks during a tool call for:\n{listed}\n\nAnswer one `name: value` a line (or a JSON object), or `decline`."


def _kind(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return "one of " + ", ".join(str(v) for v in spec["enum"])
    return str(spec.get("type", "text"))


def read_answer(answer: str, properties: dict[str, Any]) -> dict[str, Value]:
    """The answer as the content of an accepted elicitation; ``AnswerMisfit`` when it cannot be."""
    if not properties:
        return {}
    if len(properties) == 1:
        [(name, spec)] = properties.items()
        return {name: _typed(answer.strip(), spec, name)}
    raw: dict[str, Any]
    try:
        loaded = json.loads(answer)
        raw = loaded if isinstance(loaded, dict) else {}
    except ValueError:
        raw = {}
        for line in answer.splitlines():
            name, sep, value = line.partition(":")
            if sep:
                raw[name.strip().strip("`")] = value.strip()
    unknown = set(raw) - set(properties)
    if unknown or not raw:
        raise AnswerMisfit(f"unknown or missing fields: {sorted(unknown) or 'none given'}")
    return {name: _typed(raw[name], properties[name], name) for name in properties if name in raw}


def _typed(value: Any, spec: dict[str, Any], name: str) -> Value:
    kind = spec.get("type")
    text = str(value).strip()
    try:
        if kind == "boolean":
            if isinstance(value, bool):
                return value
            if text.lower() in ("yes", "true", "y", "1", "是"):
                return True
            if text.lower() in ("no", "false", "n", "0", "否"):
                return False
            raise AnswerMisfit(f"{name}: yes or no, not {text!r}")
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError as exc:
        raise AnswerMisfit(f"{name}: not a {kind}: {text!r}") from exc
    if "enum" in spec and text not in [str(v) for v in spec["enum"]]:
        raise AnswerMisfit(f"{name}: one of {spec['enum']}, not {text!r}")
    return text
