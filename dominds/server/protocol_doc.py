"""The reference of docs/protocol.md §5, generated from the typed models of ``dominds/events/``.

``python -m dominds.server.protocol_doc`` rewrites the part of docs/protocol.md between the markers;
``tests/server/test_protocol_doc.py`` fails when it is out of date.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from dominds import events
from dominds.pubchan import BROADCAST_TYPES

BEGIN = "<!-- BEGIN GENERATED REFERENCE (python -m dominds.server.protocol_doc; from dominds/events) -->"
END = "<!-- END GENERATED REFERENCE -->"
PROTOCOL_DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def _type_name(annotation: Any, absent_when_none: bool = False) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{json.dumps(a)}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        nullable = type(None) in args and not absent_when_none
        return " \\| ".join(names) + (" \\| null" if nullable else "")
    if origin in (list, tuple):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return "object"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "{" + ", ".join(annotation.model_fields) + "}"
    return {str: "string", int: "integer", bool: "boolean", float: "number"}.get(annotation, str(annotation))


def _md(text: str | None) -> str:
    """A docstring as one markdown line (reST's double backquotes become markdown's single ones)."""
    return " ".join((text or "").split()).replace("``", "`").replace("|", "\\|")


def _own_fields(model: type[BaseModel], base: type[BaseModel]) -> list[tuple[str, Any]]:
    inherited = set(base.model_fields)
    return [(name, info) for name, info in model.model_fields.items() if name not in inherited and name != "type"]


def _section(model: type[BaseModel], base: type[BaseModel], note: str = "") -> list[str]:
    kind = typing.get_args(model.model_fields["type"].annotation)[0]
    doc = _md(model.__doc__)
    lines = [f"#### `{kind}`", ""]
    if doc or note:
        lines += [" ".join(p for p in (doc, note) if p), ""]
    fields = _own_fields(model, base)
    if fields:
        lines += ["| Field | Type | Meaning |", "|---|---|---|"]
        for name, info in fields:
            required = info.is_required()
            absent = not required and info.default is None
            kind = _type_name(info.annotation, absent_when_none=absent)
            lines.append(f"| `{name}`{'' if required else '?'} | {kind} | {_md(info.description)} |")
        lines.append("")
    return lines


def protocol_reference() -> str:
    gen = set(events.Gen.model_fields) - set(events.DialogEvent.model_fields)
    out = [
        BEGIN,
        "",
        "Every message below is a model in `dominds/events/`; the test suite checks each frame the daemon",
        "sends against its model, so this list is complete and exact. `?` marks a field that may be absent.",
        "",
        "**Stamps.** Every published event carries `seq` (its position on the channel), `epoch` (the daemon",
        "run) and `timestamp`; a dialog event also `dialog: {selfId, rootId}`, and a replayed one",
        f"`replay: true`. A generation's events carry {', '.join(f'`{g}`' for g in sorted(gen))} as well.",
        "",
        "### Dialog events",
        "",
    ]
    for model in events.CHANNEL_EVENTS:
        base = events.Gen if issubclass(model, events.Gen) else events.DialogEvent
        note = "Broadcast to every socket." if typing.get_args(model.model_fields["type"].annotation)[0] in BROADCAST_TYPES else ""
        out += _section(model, base, note if "Broadcast" not in (model.__doc__ or "") else "")
    out += ["### Global events", ""]
    for model in events.GLOBAL_EVENTS:
        out += _section(model, events.GlobalEvent if issubclass(model, events.GlobalEvent) else events.WireModel)
    out += ["### Replies", "", "A reply echoes the request's `requestId` when it had one.", ""]
    for model in events.REPLIES:
        out += _section(model, events.Reply)
    out += [END]
    return "\n".join(out) + "\n"


def updated_doc(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END) + 1
    return text[:start] + protocol_reference() + text[end:]


def main() -> int:
    current = PROTOCOL_DOC.read_text(encoding="utf-8")
    fresh = updated_doc(current)
    if fresh != current:
        PROTOCOL_DOC.write_text(fresh, encoding="utf-8")
        print(f"updated {PROTOCOL_DOC}")
    else:
        print(f"{PROTOCOL_DOC} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
