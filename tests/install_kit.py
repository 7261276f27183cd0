"""Build the sdist and the wheel as a release does, and install the wheel into a venv outside the repository.

The build runs on a copy of what a clone holds (git's tracked files plus new ones not yet committed), with
``python -m build --no-isolation``: the sdist first, then the wheel from the unpacked sdist, so a file the
sdist forgets is missing from the wheel too. The venv is made with ``python -m venv`` and filled by pip
from the package index this machine is configured with (its cache makes a second install quick).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "rtws-template"
DOCS = REPO / "docs"


def clone_files() -> list[str]:
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    )
    return [rel for rel in listed.stdout.decode().split("\0") if rel and (REPO / rel).is_file()]


@dataclass(frozen=True)
class Built:
    sdist: Path
    wheel: Path


def build(tmp: Path) -> Built:
    source = tmp / "source"
    for rel in clone_files():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, source / rel)
    out = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    [sdist] = out.glob("dominds-*.tar.gz")
    [wheel] = out.glob("dominds-*.whl")
    return Built(sdist, wheel)


def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def sdist_names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as archive:
        return {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}


def runtime_files() -> list[str]:
    """Every file the installed program reads besides its modules, as the wheel must name it: the
    package's own data (pages, defaults, examples), the workspace template with its dot-files and the docs."""
    package = REPO / "dominds"
    wanted = [
        f"dominds/{path.relative_to(package).as_posix()}"
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".py", ".pyc"}
    ]
    wanted += [f"dominds/_template/{p.relative_to(TEMPLATE).as_posix()}" for p in TEMPLATE.rglob("*") if p.is_file()]
    wanted += [f"dominds/_docs/{p.name}" for p in DOCS.glob("*.md")]
    return sorted(wanted)


@dataclass
class Venv:
    root: Path
    home: Path
    """$HOME for the commands (the demo workspace lands in it)."""

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def dominds(self) -> Path:
        return self.root / "bin" / "dominds"

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.root / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "DOMINDS_FORBID_REAL_LLM": "1",
            "DOMINDS_SCRIPTED_PACE": "0",
            "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        }

    def pip_install(self, *requirements: str) -> None:
        subprocess.run(
            [str(self.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile", *requirements],
            check=True,
            capture_output=True,
            text=True,
            timeout=900,
        )

    def run(self, *args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.dominds), *args], cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
        )


def make_venv(root: Path, home: Path) -> Venv:
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
    home.mkdir(parents=True, exist_ok=True)
    return Venv(root, home)
