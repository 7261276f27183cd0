"""Debate settings: built-in defaults, optionally tuned in ``.minds/debate.yaml``::

    max_rounds: 5              # 1..5 (seed §10.3 caps the debate at 5)
    agent_timeout_s: 180       # per teammate answer (§7.1: then skip it and reuse its last output)
    run_token_budget: 150000   # input + output tokens of the whole run, checked after each round
    timezone: Asia/Shanghai    # get_now and the date the agents are told
    taskdoc: tasks/debate.tsk  # Taskdoc package of the run's dialogs (may not exist)
    keepalive_s: 15            # SSE keep-alive comment interval
    embedder:
      kind: auto               # auto (wordllama if installed) | wordllama | provider | minilm | jaccard
      provider: openai         # kind provider: a provider key of .minds/llm.yaml or the built-ins
      model: text-embedding-3-small
      model_dir: null          # kind minilm: folder with model.onnx and tokenizer.json

The per-agent output limit (§10.2, 2000 tokens) is each member's ``model_params.max_tokens``, which
``.minds/team.yaml`` can override per member.

A bad value is reported and its default used: the debate should run even with a typo in this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from dominds.rtws import Rtws
from dominds.workflows.debate.embedder_kinds import EMBEDDER_KINDS, EmbedderKind
from dominds.workflows.debate.host import Thresholds

SETTINGS_FILE = "debate.yaml"
MAX_ROUNDS_CAP = 5


@dataclass(frozen=True)
class EmbedderSettings:
    kind: EmbedderKind = "auto"
    """``auto``: WordLlama when the embeddings extra is installed, else word overlap (Jaccard), said so."""
    provider: str | None = None
    model: str | None = None
    model_dir: str | None = None


@dataclass(frozen=True)
class DebateSettings:
    max_rounds: int = MAX_ROUNDS_CAP
    agent_timeout_s: float = 180.0
    run_token_budget: int = 150_000
    timezone: str = "Asia/Shanghai"
    taskdoc: str = "tasks/debate.tsk"
    keepalive_s: float = 15.0
    thresholds: Thresholds = field(default_factory=Thresholds)
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    problems: tuple[str, ...] = ()
    """What was wrong in debate.yaml (each entry fell back to its default)."""


_NUMBERS: dict[str, tuple[type, float, float]] = {
    "max_rounds": (int, 1, MAX_ROUNDS_CAP),
    "agent_timeout_s": (float, 0.01, 3600),
    "run_token_budget": (int, 1, 100_000_000),
    "keepalive_s": (float, 0.01, 3600),
}


def parse_settings(raw: Any) -> DebateSettings:
    defaults = DebateSettings()
    if raw is None:
        return defaults
    if not isinstance(raw, dict):
        return replace(defaults, problems=("debate.yaml: expected a mapping; using the defaults",))
    problems: list[str] = []
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _NUMBERS:
            kind, low, high = _NUMBERS[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                problems.append(f"debate.yaml: {key} must be a number in {low:g}..{high:g}; default used")
            elif kind is int and value != int(value):
                problems.append(f"debate.yaml: {key} must be a whole number; default used")
            else:
                values[key] = kind(value)
        elif key in ("timezone", "taskdoc"):
            if isinstance(value, str) and value.strip():
                values[key] = value.strip()
            else:
                problems.append(f"debate.yaml: {key} must be a non-empty string; default used")
        elif key == "embedder":
            embedder, embedder_problems = _parse_embedder(value)
            values["embedder"] = embedder
            problems += embedder_problems
        else:
            problems.append(f"debate.yaml: unknown key {key!r} ignored")
    return replace(defaults, **values, problems=tuple(problems))


def _parse_embedder(raw: Any) -> tuple[EmbedderSettings, list[str]]:
    if not isinstance(raw, dict):
        return EmbedderSettings(), ["debate.yaml: embedder must be a mapping; default used"]
    kind = raw.get("kind", "auto")
    if kind not in EMBEDDER_KINDS:
        return EmbedderSettings(), [f"debate.yaml: embedder.kind {kind!r} is not {'/'.join(EMBEDDER_KINDS)}"]
    texts = {key: raw.get(key) for key in ("provider", "model", "model_dir")}
    problems = [f"debate.yaml: embedder.{k} must be a string" for k, v in texts.items() if v is not None and not isinstance(v, str)]
    clean = {k: v for k, v in texts.items() if isinstance(v, str)}
    if kind == "provider" and not (clean.get("provider") and clean.get("model")):
        problems.append("debate.yaml: embedder kind provider needs `provider` and `model`")
    return EmbedderSettings(kind=kind, **clean), problems


def load_settings(rtws: Rtws) -> DebateSettings:
    path = rtws.minds_dir / SETTINGS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return DebateSettings()
    except (OSError, UnicodeDecodeError) as exc:
        return replace(DebateSettings(), problems=(f"debate.yaml: cannot read: {exc}",))
    try:
        return parse_settings(yaml.safe_load(text))
    except yaml.YAMLError as exc:
        return replace(DebateSettings(), problems=(f"debate.yaml: not valid YAML: {' '.join(str(exc).split())}",))
