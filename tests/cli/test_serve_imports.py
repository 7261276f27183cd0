"""What a started ``dominds serve`` has loaded by the time ``GET /api/dialogs`` answers with data.

The start-up goal (issue 31) is the time until the listing answers; most of it is imports. Pinned here,
by what the daemon process holds rather than by a time:

- no LLM SDK, HTTP client library, MCP SDK or JSON-schema validator is imported before the first
  generation needs one, even when the team's members are on the Anthropic and OpenAI providers (each
  is imported in a worker thread at its first generation: tests/cli/test_serve_provider_import.py);
- aiohttp's client TLS contexts, built when aiohttp is imported, did not parse the CA bundle
  (server/aiohttp_import.py): the bug was two parses of ~0.2 MB of PEM on every start, for a client the
  daemon never uses. The verifying context still requires a certificate and checks host names, the
  user's ``SSL_CERT_FILE`` is back in the environment, and a context made afterwards loads it;
- the cycle collector, off while the modules load, is on again, and the modules' objects are frozen;
- importing the daemon's modules builds no pydantic validator (every model and adapter is built on first
  use), so pydantic's search for plugins through every installed package's metadata is not on the
  start path: the daemon does it in a warm-up thread once it serves, before a request needs it.

The daemon is a real ``dominds serve`` process; a ``sitecustomize`` on its ``PYTHONPATH`` answers
``SIGUSR1`` by writing what it holds to a file (a signal: no thread of the test's in the daemon, which
would change what it does at start).
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
from pathlib import Path

from test_cli_kit import Daemon, cli_env, wait_until, write_provider_workspace

TEAM_YAML = """\
member_defaults: {provider: claude, model: m, diligence_push_max: 0}
default_responder: lead
members:
  lead: {name: Lead}
  helper: {name: Helper, provider: gpt, model: g}
"""
LLM_YAML = """\
providers:
  claude:
    apiType: anthropic
    baseUrl: http://127.0.0.1:9
    apiKeyEnvVar: IMPORTS_TEST_KEY
    models: {m: {context_length: 200000}}
  gpt:
    apiType: openai
    baseUrl: http://127.0.0.1:9/v1
    apiKeyEnvVar: IMPORTS_TEST_KEY
    models: {g: {context_length: 128000}}
"""
REPORTER = """\
import gc, json, os, signal, ssl, sys

def _report(signum, frame):
    import aiohttp.connector
    verified = aiohttp.connector._SSL_CONTEXT_VERIFIED
    report = {
        "modules": sorted(sys.modules),
        "aiohttp_verify_mode": int(verified.verify_mode),
        "aiohttp_check_hostname": verified.check_hostname,
        "aiohttp_cas": verified.cert_store_stats()["x509_ca"],
        "ca_file": os.environ.get("SSL_CERT_FILE"),
        "later_context_cas": ssl.create_default_context().cert_store_stats()["x509_ca"],
        "gc_enabled": gc.isenabled(),
        "frozen": gc.get_freeze_count(),
    }
    path = os.environ["IMPORTS_REPORT"]
    with open(path + ".tmp", "w") as out:
        json.dump(report, out)
    os.rename(path + ".tmp", path)

signal.signal(signal.SIGUSR1, _report)
"""
HEAVY = ("anthropic", "openai", "httpx2", "httpcore2", "mcp", "mcp_types", "jsonschema", "google")




def test_the_listing_answers_before_any_sdk_is_imported_and_aiohttp_parsed_no_ca_bundle(tmp_path: Path) -> None:
    ws = write_provider_workspace(tmp_path / "ws", TEAM_YAML, LLM_YAML)
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(REPORTER)
    report = tmp_path / "report.json"
    path = os.pathsep.join(p for p in (str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")) if p)
    system_cas = ssl.create_default_context().get_ca_certs(binary_form=True)
    assert system_cas, "the machine has CA certificates"
    user_ca_file = str(tmp_path / "user-ca.pem")  # a CA file the user named: observable in the contexts made with it
    Path(user_ca_file).write_text(ssl.DER_cert_to_PEM_cert(system_cas[0]))
    env = cli_env(PYTHONPATH=path, IMPORTS_REPORT=str(report), IMPORTS_TEST_KEY="sk-not-a-real-key", SSL_CERT_FILE=user_ca_file)
    with Daemon(ws, env=env) as daemon:
        status, created = daemon.call("POST", "/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
        assert status == 201
        status, listing = daemon.call("GET", "/api/dialogs")
        assert status == 200 and created["rootId"] in json.dumps(listing), "the listing answers with data"
        os.kill(daemon.pid, signal.SIGUSR1)
        seen = wait_until(lambda: json.loads(report.read_text()) if report.exists() else None)

        def warmed_up() -> bool:
            report.unlink(missing_ok=True)
            os.kill(daemon.pid, signal.SIGUSR1)
            later = wait_until(lambda: json.loads(report.read_text()) if report.exists() else None)
            return {"pydantic.plugin._loader", "dominds.server.ws_handlers"} <= set(later["modules"])

        wait_until(warmed_up)  # with no request that validates anything
    loaded = [m for m in seen["modules"] if m.split(".")[0] in HEAVY]
    assert loaded == [], "imported only by a first generation, in a worker thread"
    assert "aiohttp.web" in seen["modules"], "the report comes from the serving daemon"
    assert seen["aiohttp_verify_mode"] == 2 and seen["aiohttp_check_hostname"] is True, "still verifies (CERT_REQUIRED)"
    assert seen["aiohttp_cas"] == 0, "aiohttp's import parsed no CA bundle"
    assert seen["ca_file"] == user_ca_file, "the user's SSL_CERT_FILE is back"
    assert seen["later_context_cas"] > 0, "a context made after the import loads the user's CA file"
    assert seen["gc_enabled"] is True and seen["frozen"] > 0, "collector on again, the imports' objects frozen"


IMPORT_AS_SERVE = """
import json, sys
import dominds.cli.main, dominds.cli.cmd_serve, dominds.driver.engine, dominds.server.run, dominds.workflows.mount
LATER = ("importlib.metadata", "pydantic.plugin._loader", "dominds.server.messages", "dominds.workflows.plan_solve.run_record",
         "dominds.workflows.plan_solve.dataset", "dominds.workflows.plan_solve.tasks", "dominds.workflows.debate.protocol",
         "dominds.workflows.debate.host", "dominds.workflows.debate.prompts")
print(json.dumps(sorted(m for m in LATER if m in sys.modules)))
"""


def test_importing_the_daemons_modules_builds_no_pydantic_validator_and_no_websocket_message_model() -> None:
    """Bug: the queue log's adapter (``store/queue_log.py``) was built at import, the one validator on the start
    path not deferred, and the first build loads pydantic's plugin search (``importlib.metadata``, a scan of every installed package): ~2.5 % of
    the instructions of the daemon's imports on every start, for validators the listing never uses. The
    websocket's message models (``server/messages.py``, ~40 classes) were imported with the app too, and the
    Plan & Solve members with the run record, the data table and the slide tasks, for three limits their
    texts quote (now in ``workflows/plan_solve/limits.py``), and the debate's members with its records, host
    and requests, for the member ids and personas (now in ``member_ids.py`` and ``members.py``)."""
    run = subprocess.run([sys.executable, "-c", IMPORT_AS_SERVE], capture_output=True, text=True, env=cli_env(), timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []
