"""A listing loads the team's configuration, not the built-in toolsets' modules.

Bug pinned here: the first ``GET /api/dialogs`` loads the configuration (for the prices), and the MCP
manager, rebuilding the tools of its servers, asked every built-in toolset for its tools' names (to
refuse a server tool that would shadow one) even when no server had listed any tool. That imported
every toolset's module (the file tools, the shell, the ToT machine and its models: 2.4 MiB) into a
daemon that had only been asked for a list: at 10,000 dialogs its memory went from 56.4 to 60.4 MiB
with the listing, 57.9 now. A server's tools are still checked against the built-in names once it
lists them (``tests/mcp/test_mcp_config.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

LIST_THEN_REPORT = """
import asyncio, json, sys
from pathlib import Path
from aiohttp.test_utils import TestClient, TestServer
from dominds.driver.engine import Engine
from dominds.rtws import Rtws
from dominds.server import make_app
from dominds.tools.builtin import BUILTIN_TOOLSETS
from dominds.workflows.mount import route_adders, workflow_extensions

TOOLSET_MODULES = sorted({where.partition(":")[0] for where in BUILTIN_TOOLSETS.values()} - {"dominds.tools.control"})

async def main():
    engine = Engine(Rtws(Path(sys.argv[1])), extensions=workflow_extensions())
    await engine.start()
    token = "t" * 20
    async with TestClient(TestServer(make_app(engine, token=token, extra_routes=route_adders()))) as client:
        listed = await client.get("/api/dialogs", headers={"Authorization": f"Bearer {token}"})
        body = await listed.json()
        problems = await client.get("/api/problems", headers={"Authorization": f"Bearer {token}"})
    await engine.close()
    print(json.dumps({
        "status": listed.status,
        "dialogs": len(body["dialogs"]),
        "problems": problems.status,
        "imported": [m for m in TOOLSET_MODULES if m in sys.modules],
    }))

asyncio.run(main())
"""


def test_a_listing_imports_no_built_in_toolset(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".minds").mkdir(parents=True)
    # members without toolsets (as the demo team): nothing in the configuration needs a toolset's tools
    (workspace / ".minds" / "team.yaml").write_text(
        "member_defaults: {provider: scripted, model: demo}\ndefault_responder: lead\nmembers:\n  lead: {name: Lead}\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, "-c", LIST_THEN_REPORT, str(workspace)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen == {"status": 200, "dialogs": 0, "problems": 200, "imported": []}
