"""`dominds init [DIR]`: create a workspace from the template (a small team on the offline provider)."""

from __future__ import annotations

import argparse
import shlex
import shutil
from pathlib import Path

from dominds import bundled
from dominds.cli.common import CliError, command_name, program
from dominds.rtws import Rtws, is_rtws

_SKIPPED_NAMES = frozenset({"__pycache__", ".DS_Store"})


def template_dir() -> Path:
    """Where the workspace template is: ``rtws-template/`` in a clone, ``dominds/_template/`` in a
    built package (see ``dominds/bundled.py``)."""
    found = bundled.template_dir()
    if found is None or not (found / ".minds").is_dir():
        raise CliError(
            f"the workspace template is missing from this copy of dominds ({bundled.PACKAGE_DIR}); "
            "reinstall dominds from a wheel or a clone"
        )
    return found


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "init",
        help="create a workspace: a demo team, LLM settings and a demo Taskdoc",
        description="Create a Dominds workspace in DIR (default: the current directory). "
        "Existing files are kept; an existing workspace is never touched.",
    )
    p.add_argument("dir", nargs="?", metavar="DIR", help="directory to create the workspace in")
    p.set_defaults(func=_init)


def _init(args: argparse.Namespace) -> int:
    target = Path(args.dir or ".").resolve()
    if target.exists() and not target.is_dir():
        raise CliError(f"{target} exists and is not a directory")
    if is_rtws(target):
        raise CliError(
            f"{target} is already a Dominds workspace (it has .minds/ or .dialogs/); nothing changed"
        )
    created, kept = _copy_template(template_dir(), target)
    Rtws(target).ensure_layout()
    print(f"Created a Dominds workspace in {target}")
    for rel in created:
        print(f"  + {rel}")
    print("  + .dialogs/run/, .dialogs/done/, .dialogs/archive/")
    for rel in kept:
        print(f"  = {rel} (exists, kept)")
    me = command_name() if target == Path.cwd().resolve() else f"{program()} -C {shlex.quote(str(target))}"
    print(f"Next: {me} check && {me} serve")
    return 0


def _copy_template(template: Path, target: Path) -> tuple[list[str], list[str]]:
    """Copy every template file that does not exist yet; return (created, kept) relative paths."""
    created: list[str] = []
    kept: list[str] = []
    for source in sorted(template.rglob("*")):
        rel = source.relative_to(template)
        if _SKIPPED_NAMES.intersection(rel.parts) or not source.is_file():
            continue
        dest = target / rel
        if dest.exists():
            kept.append(rel.as_posix())
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        created.append(rel.as_posix())
    return created, kept
