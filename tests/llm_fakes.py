"""Import path for the fake LLM servers of tests/llm (a unique module name avoids test-dir collisions)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "llm"))

from fake_servers import *  # noqa: F403
from fake_servers import FakeLlmServer, anthropic_error, running_fake_server  # noqa: F401
