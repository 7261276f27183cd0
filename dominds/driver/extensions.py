"""What code adds to an engine beyond the workspace's files: toolsets and workflow members.

An engine starts from the built-in toolsets; ``dominds serve`` adds every workflow's extensions, a
workflow command adds its own. Extensions belong to one engine: nothing is registered process-wide
at import time, so importing a workflow never changes another engine's team.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dominds.team import NO_WORKFLOW_MEMBERS, WorkflowMembers
from dominds.tools.base import Toolsets
from dominds.tools.builtin import builtin_toolsets


@dataclass(frozen=True)
class Extensions:
    toolsets: Toolsets = field(default_factory=Toolsets)
    """Toolsets added to the built-in ones (a workflow's own tools)."""
    members: WorkflowMembers = NO_WORKFLOW_MEMBERS
    """Members added to every team of the engine (a workflow's roles)."""

    def plus(self, other: Extensions) -> Extensions:
        return Extensions(self.toolsets.plus(other.toolsets), self.members.plus(other.members))

    def covers(self, other: Extensions) -> bool:
        """Whether everything ``other`` adds is already here, unchanged."""
        return all(self.toolsets.by_name.get(k) == v for k, v in other.toolsets.by_name.items()) and all(
            self.members.specs.get(k) == v for k, v in other.members.specs.items()
        )


def with_builtins(extensions: Extensions | None = None) -> Extensions:
    """The built-in toolsets plus ``extensions``."""
    builtins = Extensions(toolsets=builtin_toolsets())
    return builtins if extensions is None else builtins.plus(extensions)
