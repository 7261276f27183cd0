"""Optional features, the extra of ``pyproject.toml`` that installs each, and the one line that says so.

The core install runs the dialog runtime, the panel, ToT, the debate and the MCP commands. Plan & Solve
needs DuckDB and python-pptx (~100 MB), installed by ``dominds[plan-solve]``. A feature whose extra is
missing answers everywhere it is reached (the CLI, its panel page and API, the agents' data tool) with
``missing_extra_message``: one line naming the extra and the command that installs it for this copy.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Extra:
    name: str
    """The extra's name in ``pyproject.toml``."""
    feature: str
    modules: tuple[str, ...]
    """The modules it provides (checked without importing them)."""
    requirements: tuple[str, ...]
    """Its requirements, as ``pyproject.toml`` lists them (a test keeps the two equal)."""
    what: str


PLAN_SOLVE = Extra(
    name="plan-solve",
    feature="Plan & Solve",
    modules=("duckdb", "pptx"),
    requirements=("duckdb>=1.1", "python-pptx>=1.0"),
    what="DuckDB and python-pptx",
)


def missing_modules(extra: Extra) -> list[str]:
    return [module for module in extra.modules if importlib.util.find_spec(module) is None]


def missing_extra_message(extra: Extra) -> str | None:
    """One line saying the extra is not installed and how to install it, or None when it is."""
    if not missing_modules(extra):
        return None
    return (
        f"{extra.feature} needs the optional dependencies of dominds[{extra.name}] ({extra.what}), "
        f"which this install lacks; install them with: {install_command(extra)}"
    )


def install_command(extra: Extra) -> str:
    """The command that adds the extra to the environment this interpreter runs in."""
    prefix = Path(sys.prefix)
    specs = " ".join(shlex.quote(req) for req in extra.requirements)
    checkout = Path(__file__).resolve().parent.parent
    if (prefix / "pipx_metadata.json").is_file():  # a pipx venv
        return f"pipx inject dominds {specs}"
    if (prefix / "uv-receipt.toml").is_file():  # a `uv tool` venv (it has no pip)
        return f"uv pip install --python {shlex.quote(sys.executable)} {specs}"
    if (checkout / "pyproject.toml").is_file() and (checkout / "bin" / "dominds").is_file():
        return f"{shlex.quote(sys.executable)} -m pip install -e {shlex.quote(f'{checkout}[{extra.name}]')}"
    return f"{shlex.quote(sys.executable)} -m pip install {shlex.quote(f'dominds[{extra.name}]')}"
