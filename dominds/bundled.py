"""The files the program reads besides its code: the workspace template and the docs.

A clone has them at its root (``rtws-template/``, ``docs/``), next to the package. A built wheel carries
them inside the package (``dominds/_template/``, ``dominds/_docs/``): ``setup.py`` copies them there when
it builds, so each has one copy in the repository. The package's own data (the panel's pages, workflow
examples, defaults) sits in the package in both cases and needs no lookup.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _first_dir(*candidates: Path) -> Path | None:
    return next((c for c in candidates if c.is_dir()), None)


def template_dir() -> Path | None:
    """The workspace template (``dominds init``, ``serve --demo``), or None when this copy lacks it."""
    return _first_dir(PACKAGE_DIR / "_template", PACKAGE_DIR.parent / "rtws-template")


def docs_dir() -> Path | None:
    """The user documentation (``*.md``), or None when this copy lacks it."""
    return _first_dir(PACKAGE_DIR / "_docs", PACKAGE_DIR.parent / "docs")
