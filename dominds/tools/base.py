"""The function-tool seam: what a tool is, what it receives, and the toolset registry.

A tool is a name, a description, a JSON schema for its arguments, and an async handler. The
driver validates arguments against the schema before calling the handler, records the call
before it runs and the result after (at most once, recorded exactly once). A handler signals a
user-visible failure by raising ``ToolError``; its message becomes the result the model sees.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from dominds.rtws import Rtws


class ToolError(Exception):
    """A tool refused or failed in a way the model should read and can fix."""


@dataclass
class ToolCallContext:
    """What a tool handler knows about the call it serves."""

    rtws: Rtws
    """The workspace the daemon serves."""
    root_id: str
    """Id of the root dialog of the calling dialog's tree."""
    self_id: str
    """Id of the calling dialog (equal to ``root_id`` for a root)."""
    agent_id: str
    """Member id of the calling agent."""
    call_id: str = ""
    """The provider's id for this function call."""
    services: dict[str, Any] = field(default_factory=dict)
    """Engine hooks a tool may use (reminders, taskdoc access); keys are documented by the driver."""

    @property
    def is_root(self) -> bool:
        return self.root_id == self.self_id


ToolHandler = Callable[[ToolCallContext, dict[str, Any]], Awaitable[str]]


@dataclass(frozen=True)
class FuncTool:
    """One function tool."""

    name: str
    """Name the model calls; must match ``^[a-zA-Z0-9_-]{1,64}$``."""
    description: str
    """What the tool does, shown to the model."""
    parameters: dict[str, Any]
    """JSON schema (type ``object``) of the arguments."""
    handler: ToolHandler
    """Async function that runs the tool and returns the result text."""
    root_only: bool = False
    """Offered only to root dialogs (e.g. ``change_mind``)."""


_TOOLSETS: dict[str, list[FuncTool]] = {}


def register_toolset(name: str, tools: list[FuncTool]) -> None:
    """Register (or replace) a toolset by name."""
    _TOOLSETS[name] = list(tools)


def toolset_names() -> list[str]:
    return sorted(_TOOLSETS)


def get_toolset(name: str) -> list[FuncTool] | None:
    return _TOOLSETS.get(name)


def object_schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """Shorthand for a closed JSON-schema object."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required or []),
        "additionalProperties": False,
    }
