"""Shared helpers for the benches: a temp workspace on the scripted provider, stats, RSS."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import tempfile
from pathlib import Path
from typing import Any

import yaml

from dominds.rtws import Rtws

TEAM = """\
member_defaults: {provider: scripted, model: bench, diligence_push_max: 0}
default_responder: lead
members:
  lead: {name: Lead}
  worker: {name: Worker}
"""
LLM = """\
providers:
  scripted:
    name: Scripted
    apiType: scripted
    baseUrl: .minds/scripted
    apiKeyEnvVar: null
    models: {bench: {context_length: 200000}}
"""


def make_workspace(responses: list[dict[str, Any]], root: Path | None = None) -> Rtws:
    base = root or Path(tempfile.mkdtemp(prefix="dominds-bench-"))
    rtws = Rtws(base)
    (base / ".minds" / "scripted").mkdir(parents=True, exist_ok=True)
    rtws.team_yaml.write_text(TEAM)
    rtws.llm_yaml.write_text(LLM)
    (base / ".minds" / "scripted" / "bench.yaml").write_text(yaml.safe_dump({"responses": responses}))
    (base / "tasks" / "b.tsk").mkdir(parents=True, exist_ok=True)
    rtws.ensure_layout()
    return rtws


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(values_ms: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(values_ms), 3) if values_ms else float("nan"),
        "p99_ms": round(percentile(values_ms, 99), 3),
        "n": len(values_ms),
    }


def rss_mib(pid: int | None = None) -> float:
    """Current resident set size of a process (this one by default), in MiB."""
    path = f"/proc/{pid or os.getpid()}/status"
    with open(path) as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def machine() -> str:
    return f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"


def print_table(title: str, rows: list[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in rows)
    print(f"\n{title}")
    for key, value in rows:
        print(f"  {key.ljust(width)}  {value}")
