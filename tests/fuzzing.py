"""Example counts for property tests: small in the suite, large under bin/fuzz (DOMINDS_FUZZ_EXAMPLES)."""

from __future__ import annotations

import os


def examples(default: int) -> int:
    return int(os.environ.get("DOMINDS_FUZZ_EXAMPLES", default))
