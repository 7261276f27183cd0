"""What ``pyproject.toml`` declares against what the code imports.

Bugs: ``httpx2``, ``anyio``, ``mcp_types`` and ``yarl`` were imported directly but not declared (they
came with other packages, until one of those drops them), and the core install carried DuckDB and
python-pptx for Plan & Solve alone.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from dominds.extras import PLAN_SOLVE

REPO = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return match.group(0).lower().replace("_", "-")


def _imported_top_level_modules() -> set[str]:
    found: set[str] = set()
    for path in (REPO / "dominds").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "dominds" and m != "__future__"}


def test_every_directly_imported_package_is_declared_with_a_lower_bound() -> None:
    distributions = importlib.metadata.packages_distributions()
    optional = PROJECT["optional-dependencies"]
    declared = {_name(r): r for r in PROJECT["dependencies"]}
    declared |= {_name(r): r for name in ("plan-solve", "embeddings", "otel") for r in optional[name]}
    undeclared = {}
    for module in sorted(_imported_top_level_modules()):
        names = {_name(d) for d in distributions.get(module, [module])}
        if not names & declared.keys():
            undeclared[module] = sorted(names)
    assert not undeclared, f"imported but not in pyproject.toml: {undeclared}"
    assert {"httpx2", "anyio", "mcp-types", "yarl"} <= declared.keys()
    unbounded = [r for r in declared.values() if ">=" not in r and "==" not in r]
    assert not unbounded, f"requirements without a lower bound: {unbounded}"


def test_plan_solve_packages_are_an_extra_and_its_install_hint_names_them() -> None:
    core = {_name(r) for r in PROJECT["dependencies"]}
    assert not core & {"duckdb", "python-pptx", "wordllama"}, "the core install is the dialog runtime only"
    assert tuple(PROJECT["optional-dependencies"]["plan-solve"]) == PLAN_SOLVE.requirements
    assert PROJECT["optional-dependencies"]["all"] == ["dominds[plan-solve,embeddings,otel]"]
    assert "dominds[all]" in PROJECT["optional-dependencies"]["dev"], "the tests run every workflow"
