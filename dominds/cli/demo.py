"""The demo workspace of ``dominds serve --demo``: one persistent copy of the template, always offline.

Where: ``--demo DIR``, else ``$XDG_DATA_HOME/dominds/demo`` (``~/.local/share/dominds/demo`` when
``XDG_DATA_HOME`` is unset or not absolute, as the XDG spec says). The same folder every run, so a
restart shows the dialogs of the last one.

Offline whatever the environment: the copy's ``team.yaml`` pins ``member_defaults`` to the scripted
provider, so an exported ``ANTHROPIC_API_KEY``/``OPENAI_API_KEY`` never switches a member (or a
workflow role, which inherits ``member_defaults``) to a real model. ``dominds init`` copies the same
template without the pin: a workspace of your own picks a provider by its key.

``.dominds/demo.json`` marks the folder as a demo workspace and records the SHA-256 of every file
copied from the template. Each ``serve --demo`` brings the copy up to date with the template of this
checkout (a newer scripted database, say): a file still as it was copied is replaced, a file someone
edited is kept and named, a missing one is copied again. Dialogs are never touched.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from dominds.cli.common import CliError
from dominds.rtws import DEMO_MARKER as MARKER
from dominds.rtws import Rtws, is_demo_workspace, is_rtws

MARKER_VERSION = 1
_SKIPPED_NAMES = frozenset({"__pycache__", ".DS_Store"})
TEAM_YAML = ".minds/team.yaml"
PIN_LINES = (
    "  # The demo workspace (`dominds serve --demo`) always answers from the offline scripted database,\n"
    "  # whatever API keys are exported. For a real model, make a workspace of your own: `dominds init`.\n"
    "  provider: scripted\n"
    "  model: demo\n"
)


DEMO_TEXTS = {
    # The template's Taskdoc speaks to `dominds init` (a workspace that picks a provider by its key); the
    # demo's never uses a key, so its Taskdoc says what the demo is instead.
    "tasks/demo.tsk/constraints.md": (
        b"# Constraints\n\n"
        b"- This is the demo workspace of `dominds serve --demo`: it runs offline, every member answers from\n"
        b"  `.minds/scripted/demo.yaml`, and it answers only the demo's example prompts.\n"
        b"- Members change this Taskdoc only through `change_mind`; file tools cannot open `*.tsk/`.\n"
        b"- Ask the human before anything irreversible.\n"
    ),
    "tasks/demo.tsk/progress.md": b"# Progress\n\n- Demo workspace created by `dominds serve --demo`. Nothing done yet.\n",
}
"""Template files the demo replaces with its own text (by template path)."""


@dataclass
class DemoPrepared:
    rtws: Rtws
    created: bool
    updated: list[str] = field(default_factory=list)
    """Template files brought up to date (they were unchanged since the last copy)."""
    kept: list[str] = field(default_factory=list)
    """Files someone edited, kept although the template has a newer version than the one copied."""
    edited: list[str] = field(default_factory=list)
    """Files someone edited whose template is still the one copied: kept, and nothing newer is missed."""


def prepare_demo(target: Path) -> DemoPrepared:
    """Create the demo workspace at ``target``, or bring an existing one up to date with the template."""
    from dominds.cli.cmd_init import template_dir

    target = target.expanduser().absolute()
    if target.exists() and not target.is_dir():
        raise CliError(f"--demo {target}: exists and is not a directory")
    existing = is_demo_workspace(target)
    if not existing:
        if is_rtws(target):
            raise CliError(
                f"{target} is a Dominds workspace but not the demo one; serve it with `dominds -C {target} serve`"
            )
        if target.is_dir() and any(target.iterdir()):
            raise CliError(f"--demo {target}: the directory is not empty; give a new or empty directory for the demo")
    recorded = _read_marker(target) if existing else {}
    prepared = DemoPrepared(Rtws(target), created=not existing)
    hashes: dict[str, str] = {}
    for rel, wanted in _template_files(template_dir()).items():
        dest = target / rel
        wanted_hash = _sha256(wanted)
        try:
            current = dest.read_bytes()
        except FileNotFoundError:
            current = None
        except OSError as exc:
            raise CliError(f"cannot read {dest}: {exc.strerror or exc}") from exc
        if current is None or (current != wanted and _sha256(current) == recorded.get(rel)):
            if current is not None:
                prepared.updated.append(rel)
            _write(dest, wanted)
            hashes[rel] = wanted_hash
        elif current == wanted:
            hashes[rel] = wanted_hash
        else:  # edited here: never overwritten
            # the template moved on since the copy only when its hash differs from the recorded one
            # (before, every edit was announced as "the template has a newer version")
            (prepared.edited if recorded.get(rel) == wanted_hash else prepared.kept).append(rel)
            hashes[rel] = recorded.get(rel, "")
    prepared.rtws.ensure_layout()
    _write(target / MARKER, (json.dumps({"v": MARKER_VERSION, "files": hashes}, indent=1, sort_keys=True) + "\n").encode())
    return prepared


def _template_files(template: Path) -> dict[str, bytes]:
    """Every template file as the demo wants it (``team.yaml`` pinned to the scripted provider)."""
    files: dict[str, bytes] = {}
    for source in sorted(template.rglob("*")):
        rel = source.relative_to(template)
        if _SKIPPED_NAMES.intersection(rel.parts) or not source.is_file():
            continue
        data = source.read_bytes()
        if rel.as_posix() == TEAM_YAML:
            data = pin_scripted(data.decode("utf-8")).encode("utf-8")
        data = DEMO_TEXTS.get(rel.as_posix(), data)
        files[rel.as_posix()] = data
    return files


def pin_scripted(team_yaml: str) -> str:
    """The template's team.yaml with ``member_defaults`` pinned to ``scripted/demo``.

    The template leaves provider/model unset (with commented examples) so ``dominds init`` picks a
    provider by its key; here the comment block right under ``member_defaults:`` is replaced by the pin.
    """
    import yaml

    lines = team_yaml.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if line.rstrip() == "member_defaults:") + 1
    except StopIteration:
        raise CliError("the template's .minds/team.yaml has no `member_defaults:` block to pin the demo to") from None
    end = start
    while end < len(lines) and lines[end].lstrip().startswith("#"):
        end += 1
    pinned = "".join([*lines[:start], PIN_LINES, *lines[end:]])
    defaults = (yaml.safe_load(pinned) or {}).get("member_defaults") or {}
    if defaults.get("provider") != "scripted" or defaults.get("model") != "demo":
        raise CliError("could not pin the demo's team.yaml to the scripted provider (the template changed shape)")
    return pinned


def _read_marker(target: Path) -> dict[str, str]:
    try:
        raw = json.loads((target / MARKER).read_text(encoding="utf-8"))
        files = raw.get("files") if isinstance(raw, dict) else None
        return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}
    except (OSError, ValueError):
        return {}  # a damaged marker: every differing file counts as edited, so nothing is overwritten


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(path: Path, data: bytes) -> None:
    from dominds.store.atomic import write_atomic
    from dominds.store.errors import StoreError

    try:
        write_atomic(path, data)
    except (OSError, StoreError) as exc:
        raise CliError(f"cannot write {path}: {exc}") from exc
