"""``dominds serve`` imports aiohttp without parsing the system's CA bundle twice for a client it never uses.

aiohttp (3.10 on) builds two client TLS contexts when ``aiohttp.connector`` is imported, a verifying one
and one for ``ssl=False``, and each loads the system's CA bundle file (OpenSSL's
``set_default_verify_paths``): ~0.2 MB of PEM parsed twice, 470 M instructions, 40 % of what
``import aiohttp.web`` costs (80–160 ms a context on the development machine at load 2–3;
docs/performance.md, "Start-up"). The daemon never uses aiohttp's client: it serves with aiohttp, and every HTTP
client it makes (the LLM SDKs, key probes, MCP sessions) is built on ``dominds/tls.py``'s context.
aiohttp's client is used only by the ``dominds`` CLI commands, which are other processes and import
aiohttp the ordinary way.

So while ``serve`` imports aiohttp, ``SSL_CERT_FILE`` names an empty file (``os.devnull``), and is put
back as it was right after. What that leaves in aiohttp's two contexts:

- the verifying one still verifies: ``CERT_REQUIRED`` and host names checked (``create_default_context``
  sets both; no setting of ours touches them). It trusts what OpenSSL's certificate *directory* holds
  (``SSL_CERT_DIR`` or the system's, looked up lazily per certificate; on Debian and its kin the same
  authorities as the bundle), and nothing where there is no such directory: a daemon that ever used
  aiohttp's client for HTTPS would fail closed ("certificate verify failed"), never connect unverified;
- the other one verifies nothing by design, as before.

Environment variables are process-wide and ``setenv`` is not safe while other threads read them, so this
runs only while the process has a single thread (at the top of ``serve``, before the event loop);
otherwise aiohttp is imported as usual. Once the import is done, any context made later (an SDK's, the
shared one of ``dominds/tls.py``) sees the environment as the user set it.
"""

from __future__ import annotations

import os
import sys
import threading

CA_FILE_VARIABLE = "SSL_CERT_FILE"


def import_aiohttp_for_serving() -> bool:
    """Import aiohttp for the daemon (see the module docstring); whether the CA file was skipped."""
    if "aiohttp" in sys.modules or threading.active_count() != 1:
        import aiohttp

        return False
    saved = os.environ.get(CA_FILE_VARIABLE)
    os.environ[CA_FILE_VARIABLE] = os.devnull
    try:
        import aiohttp  # noqa: F401
    finally:
        if saved is None:
            del os.environ[CA_FILE_VARIABLE]
        else:
            os.environ[CA_FILE_VARIABLE] = saved
    return True
