"""Building seed-000 messages, and turning an LLM's reply text back into one.

A teammate answers in text. ``reply_from_text`` finds the JSON object in it (a fenced block, or
the outermost braces), repairs what models commonly get wrong (trailing commas, smart quotes, a
bare payload without the envelope, a missing ``ranking``) and returns the message, or the reason
it could not. What is still invalid after repair is the caller's to retry or report.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from dominds.workflows.tot.schemas import INVALID_FORMAT, RESPONSE_TYPES

Message = dict[str, Any]

_PAYLOAD_MARKERS = {
    "decomposition_result": "thought_granularity",
    "generated_thoughts": "candidates",
    "evaluation_results": "evaluations",
    "final_solution": "answer",
}


@dataclass(frozen=True)
class ProtocolError:
    """The seed's ``error`` object."""

    code: str
    message: str
    recoverable: bool

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "recoverable": self.recoverable}


def message(type_: str, sender: str, to: str, task_id: str, payload: dict[str, Any]) -> Message:
    return {"from": sender, "to": to, "type": type_, "payload": payload, "task_id": task_id}


def reply_to(request: Message, payload: dict[str, Any], error: ProtocolError | None = None) -> Message:
    """The response to ``request``, from the agent it was sent to."""
    reply = message(RESPONSE_TYPES[request["type"]], request["to"], request["from"], request["task_id"], payload)
    if error is not None:
        reply["error"] = error.to_dict()
    return reply


def error_reply(request: Message, code: str, text: str, *, recoverable: bool = True) -> Message:
    return reply_to(request, {}, ProtocolError(code, text, recoverable))


def reply_error(reply: Message) -> ProtocolError | None:
    raw = reply.get("error")
    if not isinstance(raw, dict):
        return None
    return ProtocolError(str(raw.get("code", INVALID_FORMAT)), str(raw.get("message", "")), bool(raw.get("recoverable", True)))


_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)
_TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")
_SMART_QUOTES = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})


def _json_candidates(text: str) -> list[str]:
    found = [block.strip() for block in _FENCE_RE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        found.append(text[start : end + 1])
    return found


def parse_json_object(text: str) -> dict[str, Any] | str:
    """The JSON object in ``text``, or a one-line reason why there is none."""
    candidates = _json_candidates(text)
    if not candidates:
        return "the reply contains no JSON object"
    reason = ""
    for candidate in candidates:
        for attempt in (candidate, _TRAILING_COMMA_RE.sub(r"\1", candidate.translate(_SMART_QUOTES))):
            try:
                value = json.loads(attempt)
            except json.JSONDecodeError as exc:
                reason = f"the reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
                continue
            if isinstance(value, dict):
                return value
            reason = "the reply's JSON is not an object"
    return reason


def reply_from_text(request: Message, text: str) -> Message | str:
    """The response message a teammate's ``text`` carries (repaired), or why there is none."""
    parsed = parse_json_object(text)
    if isinstance(parsed, str):
        return parsed
    expected = RESPONSE_TYPES[request["type"]]
    if "payload" in parsed and isinstance(parsed.get("payload"), dict):
        if parsed.get("type", expected) != expected:
            return f"the reply is a {parsed.get('type')!r} message, expected {expected!r}"
        payload, error = parsed["payload"], parsed.get("error")
    elif _PAYLOAD_MARKERS.get(expected) in parsed or "error" in parsed:  # a bare payload: wrap it
        error = parsed.get("error")
        payload = {k: v for k, v in parsed.items() if k not in ("error", "from", "to", "type", "task_id")}
    else:
        return f"the reply is not a {expected!r} message (no payload)"
    reply = reply_to(request, _repair_payload(expected, payload))
    if error is not None:
        reply["error"] = error
    return reply


def _repair_payload(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    if kind != "evaluation_results" or not isinstance(payload.get("evaluations"), list):
        return payload
    evaluations = [e for e in payload["evaluations"] if isinstance(e, dict)]
    repaired = dict(payload)
    if "ranking" not in repaired:  # derivable from the scores, so not worth a retry
        ranked = sorted(evaluations, key=lambda e: -e["score"] if isinstance(e.get("score"), int | float) else 0)
        repaired["ranking"] = [str(e.get("node_id")) for e in ranked]
    repaired.setdefault("pruning_suggestions", [])
    return repaired
