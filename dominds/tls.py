"""One TLS context for every HTTP client the process makes (SDK clients, key probes, MCP connections).

An ``httpx2`` client builds its own context otherwise, parsing the system's CA certificates again
(~0.8 MiB and a few milliseconds each, one more per proxy set in the environment): a daemon held the
same certificates once per SDK client, and once per session to an HTTP MCP server, of which a
stateful server has one per dialog that uses it. The context only verifies; each connection sets its
own protocols on it, the same ones (HTTP/1.1) for every client made with it.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """The TLS context every HTTP client is built on (see the module docstring), made on first use.

    ``httpx2``'s own default: the system's CA certificates, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set.
    """
    import httpx2

    return httpx2.create_ssl_context()
