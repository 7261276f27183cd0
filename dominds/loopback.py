"""Whether a host names this machine: the one rule for every listener that refuses to run without a token
off loopback (the daemon, the Plan & Solve service, ``dominds mcp --http``)."""

from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})


def is_loopback_host(host: str) -> bool:
    """True for a loopback IP address or name (``127.0.0.1``, ``::1``, ``[::1]``, ``localhost``)."""
    name = host.strip().lower().removeprefix("[").removesuffix("]")
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
