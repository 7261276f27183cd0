"""Import every built-in toolset so that its ``register_toolset`` call runs.

The driver and ``dominds check`` import this module before loading the team, so toolset names in
team.yaml are validated against what really exists.
"""

from __future__ import annotations

from dominds.tools import control as _control  # noqa: F401  (registers "control")
from dominds.tools import fs as _fs  # noqa: F401  (registers "ws_read")
from dominds.tools import fs_edit as _fs_edit  # noqa: F401  (registers "ws_mod")
from dominds.tools import memory as _memory  # noqa: F401  (registers "memory", "team_memory")
from dominds.tools import shell as _shell  # noqa: F401  (registers "os")
from dominds.tools.tot import toolset as _tot  # noqa: F401  (registers "tot")
