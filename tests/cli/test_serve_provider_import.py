"""The daemon's API answers while the first generation on a provider imports that provider's SDK.

The bug this pins: the SDK was imported on the event loop at the first generation (driver/providers.py),
so every request waited for the import: the HTTP API stopped answering for ~1 s (20 s at load 30). Here
the SDK's import is held open (a stand-in ``anthropic`` package first on the daemon's ``PYTHONPATH``
that waits for a file the test writes only after the API answered), so the old behaviour fails the test
deterministically instead of by a timing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from test_cli_kit import Daemon, cli_env, wait_until, write_provider_workspace

TEAM_YAML = "member_defaults: {provider: held, model: m, diligence_push_max: 0}\ndefault_responder: lead\nmembers:\n  lead: {name: Lead}\n"
LLM_YAML = "providers:\n  held:\n    apiType: anthropic\n    baseUrl: http://127.0.0.1:9\n    apiKeyEnvVar: HELD_KEY\n    models:\n      m: {context_length: 200000}\n"
HELD_SDK = """\
import os, pathlib, time
gate = pathlib.Path(os.environ["HELD_IMPORT_GATE"])
pathlib.Path(str(gate) + ".entered").touch()
while not gate.exists():  # an import that takes as long as the test wants (a slow disk, a loaded machine)
    time.sleep(0.01)
raise ImportError("the held stand-in SDK")
"""




def test_the_api_answers_while_the_first_generation_imports_its_sdk(tmp_path: Path) -> None:
    ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, LLM_YAML)
    shim = tmp_path / "shim" / "anthropic"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(HELD_SDK)
    gate = tmp_path / "gate"
    path = os.pathsep.join(p for p in (str(tmp_path / "shim"), os.environ.get("PYTHONPATH", "")) if p)
    env = cli_env(PYTHONPATH=path, HELD_IMPORT_GATE=str(gate), HELD_KEY="sk-ant-held-not-a-real-key")
    with Daemon(ws, env=env) as daemon:
        try:
            status, created = daemon.call("POST", "/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
            assert status == 201 and isinstance(created, dict)
            daemon.call("POST", f"/api/dialogs/{created['selfId']}/messages", {"content": "hello"})
            wait_until(lambda: Path(str(gate) + ".entered").exists())  # the generation is importing the SDK now
            status, listing = daemon.call("GET", "/api/dialogs")
            assert status == 200 and created["selfId"] in json.dumps(listing), "answered while the import runs"
            status, health = daemon.call("GET", "/api/health")
            assert status == 200 and isinstance(health, dict) and health["ok"]
        finally:
            gate.touch()  # the import ends (as a failed import: the generation reports the provider unavailable)
        wait_until(lambda: "not available" in json.dumps(daemon.call("GET", f"/api/dialogs/{created['selfId']}")[1]))
