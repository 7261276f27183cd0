"""The one build step ``pyproject.toml`` cannot declare: the package carries the workspace template and the docs.

``rtws-template/`` and ``docs/`` stay where a clone has them (one copy each, edited in place); building a
wheel copies them into the package as ``dominds/_template/`` and ``dominds/_docs/``, dot-files included
(setuptools' package-data globs skip names starting with a dot, which would drop ``.minds/`` and
``.gitignore``). An editable install copies nothing: the checkout's own folders are found next to the
package (``dominds/bundled.py``). ``tests/test_wheel_contents.py`` fails when a run-time file is missing
from the built wheel.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUNDLED = {"rtws-template": ("_template", "**/*"), "docs": ("_docs", "*.md")}
"""Source folder (at the project's root) -> its place inside the ``dominds`` package and the files taken
(the docs' text; their screenshots stay in the repository). ``**/*`` takes dot-files too."""
SKIPPED = frozenset({"__pycache__", ".DS_Store"})


def bundled_files() -> list[tuple[Path, str]]:
    """(source file, path inside the package) of every bundled file."""
    found = []
    for source_name, (package_name, pattern) in BUNDLED.items():
        source = ROOT / source_name
        for path in sorted(source.glob(pattern)):
            rel = path.relative_to(source)
            if path.is_file() and not SKIPPED.intersection(rel.parts):
                found.append((path, f"{package_name}/{rel.as_posix()}"))
    return found


class BuildPyWithBundled(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        package = Path(self.build_lib) / "dominds"
        for package_name, _pattern in BUNDLED.values():
            shutil.rmtree(package / package_name, ignore_errors=True)
        for source, inside in bundled_files():
            target = package / inside
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:  # type: ignore[override]
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs += [str(Path(self.build_lib) / "dominds" / inside) for _source, inside in bundled_files()]
        return outputs


setup(cmdclass={"build_py": BuildPyWithBundled})
