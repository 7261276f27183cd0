"""Memory of the real ``dominds serve`` (fsync on) as it drives more and more dialogs.

The goal is RSS ≤ 60 MiB idle at any dialog count: memory must not grow with dialogs that are not
being driven. For each stage (``--dialogs 200,1000``: cumulative counts), dialogs are created and
driven one turn each over the websocket (50 per connection, each followed by its connection while it
runs, as a panel does); when a stage is done its connections are closed, and the daemon's RSS is read
at once and again after ``--idle`` seconds (by then every resting tree was unloaded and collected:
server/resting.py unloads a tree after a second of quiet).

The members answer through the scripted provider by default; ``--provider openai`` or ``anthropic``
drives every turn through that SDK (the daemon's ``apiType``) against a local fake server
(``_fake_llm.py``, plain HTTP on 127.0.0.1), as real users' dialogs are driven.

    .venv/bin/python bench/bench_memory.py [--dialogs 200,1000] [--idle 21] [--provider scripted|openai|anthropic] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Figure, machine, make_workspace, print_figures, rss_mib, serve
from _fake_llm import PROVIDERS, fake_llm, provider_workspace
from bench_ws import RESPONSES, sequential

PER_CONNECTION = 50


async def drive(base: str, token: str, count: int) -> None:
    async with aiohttp.ClientSession() as session:
        while count > 0:
            await sequential(session, base, token, min(PER_CONNECTION, count))
            count -= PER_CONNECTION


@contextlib.contextmanager
def provider_url(provider: str) -> Iterator[str | None]:
    """The fake server's URL for a network provider (None for the scripted one), for the ``with`` block."""
    if provider == "scripted":
        yield None
        return
    with fake_llm() as server:
        yield server.url
        print(f"fake {provider} server answered {sum(server.requests.values()):,} requests", file=sys.stderr)


def run(stages: list[int], idle: float, provider: str = "scripted") -> list[Figure]:
    with provider_url(provider) as url:
        return measure(stages, idle, provider, url)


def measure(stages: list[int], idle: float, provider: str, url: str | None) -> list[Figure]:
    rtws = make_workspace(RESPONSES)
    if url is not None:
        provider_workspace(rtws, provider, url)
    daemon = serve(rtws.root)
    via = "" if url is None else f", {provider} SDK"
    base = f"ws://{daemon.base.removeprefix('http://')}"
    figures: list[Figure] = []
    try:
        time.sleep(1.0)
        figures.append(Figure(f"memory: RSS idle after start (empty workspace{via})", "MiB", [rss_mib(daemon.pid)], ("<=", 60)))
        driven = 0
        for stage in stages:
            asyncio.run(drive(base, daemon.token, stage - driven))
            driven = stage
            at_once = rss_mib(daemon.pid)
            time.sleep(idle)
            figures.append(Figure(f"memory: RSS right after {driven:,} dialogs driven{via}", "MiB", [at_once]))
            figures.append(
                Figure(f"memory: RSS {idle:g} s after {driven:,} dialogs driven{via}", "MiB", [rss_mib(daemon.pid)], ("<=", 60))
            )
    finally:
        daemon.stop()
        shutil.rmtree(rtws.root, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--dialogs", default="200,1000", help="cumulative dialog counts, comma-separated")
    parser.add_argument("--idle", type=float, default=21.0, help="seconds idle before the second reading")
    parser.add_argument("--provider", choices=("scripted", *PROVIDERS), default="scripted", help="who answers the turns")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    stages = sorted({int(n) for n in args.dialogs.split(",") if n.strip()})
    figures = run(stages, args.idle, args.provider)
    print_figures(f"Memory of the real `dominds serve`, {args.provider} provider — {machine()}", figures)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in figures], indent=1))


if __name__ == "__main__":
    main()
