"""Sample mutants of one module and run only the tests that cover it: does the suite notice each change?

    bin/mutate dominds.tellask                      # 30 sampled mutants, covering tests found by import
    bin/mutate dominds/driver/questions.py -n 60    # a path works too; more samples
    bin/mutate dominds.server.messages --tests tests/server/test_ws_bad_input.py
    bin/mutate dominds.tellask --list               # every mutation site, nothing run

A *mutant* is the module with one small change a careless edit could make: a comparison flipped
(``==``/``!=``, ``<``/``<=``, ``in``/``not in`` …), ``and``/``or`` swapped, a ``not`` dropped, a number
off by one, ``True``/``False`` swapped, a statement that only calls something removed, an ``if``'s
condition negated, a returned value replaced by ``None``. Each sampled mutant is written over the module,
its covering tests run (``pytest -x``), and the original is put back whatever happens (also on Ctrl-C).
A mutant is *killed* when a test fails, *survives* when all pass; the score is killed / run. A survivor
is either a missing test or an equivalent mutant (one no behaviour can tell apart): say which in a
comment beside the test you add, or beside the code.

The covering tests are the test files that import the module (``dominds.x.y`` or ``from dominds.x
import y``) and those of the mirrored test directory named for it (``covering_tests``); ``--tests`` names
them instead. The checkout is edited in
place while this runs: do not run two at once in one checkout, nor edit the module meanwhile.
See docs/testing.md.
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_FLIPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@dataclass(frozen=True)
class Site:
    """One place a mutant can be made: the n-th node the walk meets, and what is done to it."""

    index: int
    kind: str
    line: int
    text: str


def _docstring_ids(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first))
    return ids


def _kinds(node: ast.AST, docstrings: set[int]) -> Iterator[str]:
    """The mutations that apply to ``node``."""
    if isinstance(node, ast.Compare) and type(node.ops[0]) in _FLIPS:
        yield "flip comparison"
    elif isinstance(node, ast.BoolOp):
        yield "swap and/or"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop not"
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        yield "swap True/False"
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        yield "number + 1"
    elif isinstance(node, ast.Expr) and isinstance(node.value, (ast.Call, ast.Await)) and id(node) not in docstrings:
        yield "remove call"
    elif isinstance(node, ast.If):
        yield "negate if"
    elif isinstance(node, ast.Return) and node.value is not None and not (
        isinstance(node.value, ast.Constant) and node.value.value is None
    ):
        yield "return None"


def _walk(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node in a fixed order (annotations included: pydantic reads limits from them)."""
    yield from ast.walk(tree)


def sites(source: str) -> list[Site]:
    tree = ast.parse(source)
    docstrings = _docstring_ids(tree)
    lines = source.splitlines()
    found: list[Site] = []
    for index, node in enumerate(_walk(tree)):
        for kind in _kinds(node, docstrings):
            line = getattr(node, "lineno", 0)
            text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            found.append(Site(index, kind, line, text))
    return found


def mutate(source: str, site: Site) -> str:
    """The module's source with ``site``'s mutation made (unparsed: formatting differs, behaviour does not)."""
    tree = ast.parse(source)
    nodes = list(_walk(tree))
    node = nodes[site.index]
    if site.kind == "flip comparison":
        assert isinstance(node, ast.Compare)
        node.ops[0] = _FLIPS[type(node.ops[0])]()
    elif site.kind == "swap and/or":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif site.kind == "drop not":
        _replace(tree, node, node.operand)  # type: ignore[attr-defined]
    elif site.kind == "swap True/False":
        assert isinstance(node, ast.Constant)
        node.value = not node.value
    elif site.kind == "number + 1":
        assert isinstance(node, ast.Constant)
        node.value = node.value + 1
    elif site.kind == "remove call":
        _replace(tree, node, ast.Pass())
    elif site.kind == "negate if":
        assert isinstance(node, ast.If)
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
    elif site.kind == "return None":
        assert isinstance(node, ast.Return)
        node.value = ast.Constant(value=None)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return


def module_path(name: str) -> tuple[Path, str]:
    """(file, dotted name) of a module given either way."""
    if name.endswith(".py"):
        path = (ROOT / name).resolve() if not Path(name).is_absolute() else Path(name)
        dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    else:
        dotted = name
        path = ROOT.joinpath(*name.split(".")).with_suffix(".py")
        if not path.exists():
            path = ROOT.joinpath(*name.split("."), "__init__.py")
    if not path.exists():
        raise SystemExit(f"bin/mutate: no module {name!r} (looked for {path.relative_to(ROOT)})")
    return path, dotted.removesuffix(".__init__")


def covering_tests(dotted: str) -> list[Path]:
    """Test files that import the module (by reading their sources), and the test files of the mirrored
    directory named for it (``dominds/driver/recovery.py`` → ``tests/driver/test_*recovery*.py``; when
    none is, that whole directory: driver modules are mostly tested through the engine, not imported)."""
    package, _, leaf = dotted.rpartition(".")
    mirrored = ROOT / "tests" / Path(*package.split(".")[1:])
    found = set(_importers(dotted, package, leaf))
    if mirrored.is_dir():
        named = [p for p in mirrored.glob("test_*.py") if leaf.strip("_") in p.stem]
        found.update(named or mirrored.glob("test_*.py"))
    return sorted(found)


def _importers(dotted: str, package: str, leaf: str) -> list[Path]:
    patterns = [re.compile(rf"\b{re.escape(dotted)}\b")]
    if package:
        patterns.append(re.compile(rf"from {re.escape(package)} import [^\n]*\b{re.escape(leaf)}\b"))
        patterns.append(re.compile(rf"from {re.escape(package)} import \([^)]*\b{re.escape(leaf)}\b", re.S))
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if any(p.search(text) for p in patterns):
            found.append(path)
    return found


def run_tests(tests: list[Path], timeout: float, marks: str = "not browser") -> tuple[str, float]:
    """``killed``, ``survived`` or ``timeout`` (counted as killed: the mutant hung a test)."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", marks,
               *(str(t) for t in tests)]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - started
    elapsed = time.perf_counter() - started
    if done.returncode == 0:
        return "survived", elapsed
    if done.returncode in (1, 3):  # tests failed (or an error inside a test)
        return "killed", elapsed
    raise SystemExit(f"bin/mutate: pytest could not run the covering tests (exit {done.returncode}):\n{done.stdout[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bin/mutate", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("module", help="dotted name (dominds.tellask) or path (dominds/tellask.py)")
    parser.add_argument("-n", "--samples", type=int, default=30, help="mutants to sample (default 30)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0: repeatable)")
    parser.add_argument("--tests", nargs="+", type=Path, help="the covering tests (default: files importing the module)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per mutant's test run (default 600)")
    parser.add_argument("--list", action="store_true", help="print every mutation site and stop")
    parser.add_argument("--quick", action="store_true", help="leave out the tests marked slow (crash sweeps...)")
    args = parser.parse_args(argv)
    if args.samples < 1:
        parser.error("--samples must be 1 or more")
    path, dotted = module_path(args.module)
    original = path.read_text(encoding="utf-8")
    all_sites = sites(original)
    if args.list:
        for site in all_sites:
            print(f"{path.relative_to(ROOT)}:{site.line}: {site.kind}: {site.text}")
        return 0
    tests = [t if t.is_absolute() else ROOT / t for t in args.tests] if args.tests else covering_tests(dotted)
    if not tests:
        raise SystemExit(f"bin/mutate: no test file imports {dotted}; name them with --tests")
    sample = sorted(random.Random(args.seed).sample(all_sites, min(args.samples, len(all_sites))), key=lambda s: s.line)
    print(f"{dotted}: {len(all_sites)} mutation sites, {len(sample)} sampled (seed {args.seed}); "
          f"covering tests: {', '.join(str(t.relative_to(ROOT)) for t in tests)}", flush=True)
    marks = "not browser and not slow" if args.quick else "not browser"
    status, _ = run_tests(tests, args.timeout, marks)
    if status != "survived":
        raise SystemExit("bin/mutate: the covering tests fail on the unchanged module; fix that first")

    def restore(*_: object) -> None:
        path.write_text(original, encoding="utf-8")
        raise SystemExit(130)

    previous = signal.signal(signal.SIGINT, restore)
    survivors: list[Site] = []
    killed = 0
    try:
        for number, site in enumerate(sample, 1):
            path.write_text(mutate(original, site), encoding="utf-8")
            try:
                status, elapsed = run_tests(tests, args.timeout, marks)
            finally:
                path.write_text(original, encoding="utf-8")
            if status == "survived":
                survivors.append(site)
            else:
                killed += 1
            print(f"[{number}/{len(sample)}] {status:8} {elapsed:6.1f} s  line {site.line}: {site.kind}: {site.text}", flush=True)
    finally:
        path.write_text(original, encoding="utf-8")
        signal.signal(signal.SIGINT, previous)
    score = killed / len(sample)
    print(f"\n{dotted}: {killed} of {len(sample)} mutants killed ({score:.0%})")
    for site in survivors:
        print(f"  survived: {path.relative_to(ROOT)}:{site.line}: {site.kind}: {site.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
