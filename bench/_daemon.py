"""A bench daemon: a temp workspace on the scripted provider, the Engine and ``run_server``.

Prints the panel URL (with ``?auth=``) as its first stdout line, then serves until SIGTERM. Every
published event gets ``benchPublishedNs`` (``time.time_ns()`` at publish) so a client on the same
machine can measure publish-to-receive latency; that wrapper is the only difference from a real daemon.

    python bench/_daemon.py [--workspace DIR] [--port 0]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import make_workspace

from dominds.driver.engine import Engine
from dominds.server import run_server
from dominds.server.auth import new_token

RESPONSES: list[dict[str, Any]] = [
    {
        "message": "hello",
        "response": "Hello! This is a **scripted** reply.",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    },
    {"message": "stream", "response": "0123456789" * 200, "chunk_chars": 10, "delay_ms": 2},
]


def stamp_publish_times(engine: Engine) -> None:
    publish = engine.pubchan.publish

    def publish_stamped(dialog: tuple[str, str] | None, event: dict[str, Any]) -> dict[str, Any]:
        event["benchPublishedNs"] = time.time_ns()
        return publish(dialog, event)

    engine.pubchan.publish = publish_stamped  # type: ignore[method-assign]


async def main(workspace: Path, port: int) -> None:
    engine = Engine(make_workspace(RESPONSES, workspace))
    stamp_publish_times(engine)

    def ready(url: str) -> None:
        print(url, flush=True)

    await run_server(engine, "127.0.0.1", port, token=new_token(), on_ready=ready)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace", type=Path)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dominds-bench-") as tmp:
        asyncio.run(main(args.workspace or Path(tmp) / "ws", args.port))
    sys.exit(0)
