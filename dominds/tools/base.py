"""The function-tool seam: what a tool is, what it receives, and the named toolsets an engine offers.

A tool is a name, a description, a JSON schema for its arguments, and an async handler. The
driver validates arguments against the schema before calling the handler, records the call
before it runs and the result after (at most once, recorded exactly once). A handler signals a
user-visible failure by raising ``ToolError``; its message becomes the result the model sees.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Awaitable, Callable, Mapping, Sequence
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


@dataclass(frozen=True)
class Toolsets:
    """Named toolsets one engine offers: the built-in ones plus those its workflows bring.

    A value, owned by the engine that uses it (never a process-wide registry filled at import time),
    so two engines in one process, or a test and the daemon, never see each other's toolsets.
    """

    by_name: Mapping[str, tuple[FuncTool, ...]] = field(default_factory=dict)
    """Toolset name (as written in team.yaml ``toolsets:``) → its tools, in the order offered."""

    @classmethod
    def of(cls, toolsets: Mapping[str, Sequence[FuncTool]]) -> Toolsets:
        return cls({name: tuple(tools) for name, tools in toolsets.items()})

    def names(self) -> list[str]:
        return sorted(self.by_name)

    def get(self, name: str) -> list[FuncTool] | None:
        tools = self.by_name.get(name)
        return list(tools) if tools is not None else None

    def plus(self, other: Toolsets) -> Toolsets:
        """These toolsets and ``other``'s; a name in both takes ``other``'s tools (neither is loaded:
        the built-in toolsets import their modules only when first used)."""
        return Toolsets(ChainMap(other.by_name, self.by_name))  # type: ignore[arg-type]  # read-only use


def object_schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """Shorthand for a closed JSON-schema object."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required or []),
        "additionalProperties": False,
    }
