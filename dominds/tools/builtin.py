"""The built-in toolsets, by the names team.yaml uses.

The driver and ``dominds check`` start from these (plus the toolsets workflows bring), so toolset
names in team.yaml are validated against what really exists.
"""

from __future__ import annotations

from dominds.tools.base import Toolsets
from dominds.tools.control import CONTROL_TOOLS
from dominds.tools.fs import WS_READ_TOOLS
from dominds.tools.fs_edit import WS_MOD_TOOLS
from dominds.tools.memory import MEMORY_TOOLS, TEAM_MEMORY_TOOLS
from dominds.tools.shell import OS_TOOLS
from dominds.tools.tot.toolset import TOT_TOOLS


def builtin_toolsets() -> Toolsets:
    return Toolsets.of(
        {
            "control": CONTROL_TOOLS,
            "ws_read": WS_READ_TOOLS,
            "ws_mod": WS_MOD_TOOLS,
            "memory": MEMORY_TOOLS,
            "team_memory": TEAM_MEMORY_TOOLS,
            "os": OS_TOOLS,
            "tot": TOT_TOOLS,
        }
    )
