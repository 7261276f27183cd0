"""``import_aiohttp_for_serving`` (server/aiohttp_import.py): the environment it borrows is given back as
it was, and with a second thread running it imports aiohttp the ordinary way (``setenv`` is not safe
while another thread may read the environment). Each case runs in a fresh interpreter: aiohttp is
imported once per process. The served daemon's side is in tests/cli/test_serve_imports.py.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, os, sys, threading
from dominds.server.aiohttp_import import import_aiohttp_for_serving
release = threading.Event()
if sys.argv[1] == "thread":
    threading.Thread(target=release.wait).start()
skipped = import_aiohttp_for_serving()
release.set()
import aiohttp.connector
verified = aiohttp.connector._SSL_CONTEXT_VERIFIED
print(json.dumps({
    "skipped": skipped,
    "cas": verified.cert_store_stats()["x509_ca"],
    "verify_mode": int(verified.verify_mode),
    "check_hostname": verified.check_hostname,
    "ca_file": os.environ.get("SSL_CERT_FILE", "<unset>"),
}))
"""


def _probe(mode: str, ca_file: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    if ca_file is not None:
        env["SSL_CERT_FILE"] = ca_file
    run = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    result: dict[str, object] = json.loads(run.stdout)
    return result


def _user_ca_file(tmp_path: Path) -> str:
    system_cas = ssl.create_default_context().get_ca_certs(binary_form=True)
    assert system_cas, "the machine has CA certificates"
    path = tmp_path / "user-ca.pem"
    path.write_text(ssl.DER_cert_to_PEM_cert(system_cas[0]))
    return str(path)


def test_alone_it_skips_the_ca_file_keeps_verifying_and_gives_the_users_setting_back(tmp_path: Path) -> None:
    ca_file = _user_ca_file(tmp_path)
    seen = _probe("alone", ca_file)
    assert seen == {"skipped": True, "cas": 0, "verify_mode": int(ssl.CERT_REQUIRED), "check_hostname": True, "ca_file": ca_file}


def test_an_unset_ca_file_stays_unset(tmp_path: Path) -> None:
    seen = _probe("alone", None)
    assert seen["skipped"] is True and seen["ca_file"] == "<unset>"


def test_with_another_thread_running_aiohttp_is_imported_as_usual(tmp_path: Path) -> None:
    ca_file = _user_ca_file(tmp_path)
    seen = _probe("thread", ca_file)
    assert seen == {"skipped": False, "cas": 1, "verify_mode": int(ssl.CERT_REQUIRED), "check_hostname": True, "ca_file": ca_file}
