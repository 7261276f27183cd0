"""The built-in toolsets, by the names team.yaml uses.

The driver and ``dominds check`` start from these (plus the toolsets workflows bring), so toolset
names in team.yaml are validated against what really exists. Each toolset's module is imported the
first time its tools are asked for: a daemon starts without importing tools it may never offer.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from dominds.tools.base import FuncTool, Toolsets

BUILTIN_TOOLSETS: dict[str, str] = {
    "control": "dominds.tools.control:CONTROL_TOOLS",
    "ws_read": "dominds.tools.fs:WS_READ_TOOLS",
    "ws_mod": "dominds.tools.fs_edit:WS_MOD_TOOLS",
    "memory": "dominds.tools.memory:MEMORY_TOOLS",
    "team_memory": "dominds.tools.memory:TEAM_MEMORY_TOOLS",
    "os": "dominds.tools.shell:OS_TOOLS",
    "tot": "dominds.tools.tot.toolset:TOT_TOOLS",
    "team-mgmt": "dominds.tools.team_mgmt:TEAM_MGMT_TOOLS",
}
"""Toolset name → ``module:attribute`` of its list of tools."""


class _OnFirstUse(Mapping[str, tuple[FuncTool, ...]]):
    """The built-in toolsets as a mapping whose values are imported on first access."""

    def __init__(self, where: Mapping[str, str]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, tuple[FuncTool, ...]] = {}

    def __getitem__(self, name: str) -> tuple[FuncTool, ...]:
        tools = self._loaded.get(name)
        if tools is None:
            module, _, attribute = self._where[name].partition(":")
            tools = self._loaded[name] = tuple(getattr(importlib.import_module(module), attribute))
        return tools

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


def builtin_toolsets() -> Toolsets:
    return Toolsets(_OnFirstUse(BUILTIN_TOOLSETS))
