"""The state-file writer (``store/fastyaml.py``) against PyYAML's dumpers, on a dialog's ``latest.yaml``.

Two documents: a dialog at rest (run state, title, usage) and one with three queued prompts. Each figure is
the best of five batches of 2,000 dumps, in microseconds per dump; the notes give the ratios, which
hold across loads far better than the times (docs/performance.md).

    .venv/bin/python bench/bench_yaml.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Figure, machine, print_figures

from dominds.store import fastyaml

AT_REST: dict[str, Any] = {
    "currentCourse": 3,
    "lastModified": "2026-11-28T21:00:00+00:00",
    "status": "run",
    "generating": False,
    "needsDrive": False,
    "runState": {"kind": "idle"},
    "title": "Refactor the parser and write its tests",
    "usage": {"inputTokens": 123456, "outputTokens": 6789, "cachedTokens": 100000},
}
QUEUED: dict[str, Any] = {
    **AT_REST,
    "queuedPrompts": [
        {"msgId": f"m{i}", "content": "Please look at the failing test again. " * 4, "origin": "user",
         "queuedAt": "2026-11-28T21:00:00+00:00"}
        for i in range(3)
    ],
}


def _per_dump_us(dump: Callable[[], object], batch: int = 2000, batches: int = 5) -> list[float]:
    samples = []
    for _ in range(batches):
        started = time.perf_counter()
        for _ in range(batch):
            dump()
        samples.append((time.perf_counter() - started) / batch * 1e6)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures: list[Figure] = []
    for name, data in (("at rest", AT_REST), ("3 queued prompts", QUEUED)):
        ours = _per_dump_us(lambda d=data: fastyaml.dump(d))
        c_dumper = _per_dump_us(lambda d=data: yaml.dump(d, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True))
        pure = _per_dump_us(lambda d=data: yaml.dump(d, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True))
        best = min(ours)
        figures += [
            Figure(f"latest.yaml {name}: fastyaml.dump", "us", ours,
                   note=f"{min(c_dumper) / best:.1f}x faster than PyYAML's C dumper, {min(pure) / best:.1f}x its pure one"),
            Figure(f"latest.yaml {name}: PyYAML CSafeDumper", "us", c_dumper),
            Figure(f"latest.yaml {name}: PyYAML SafeDumper", "us", pure),
        ]
    print_figures(f"State-file writer on {machine()}", figures)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in figures], indent=1))


if __name__ == "__main__":
    main()
