"""`dominds docs [TOPIC]`: the user documentation, readable from any installed copy.

The help texts name topics (``dominds docs plan-solve``) rather than ``docs/*.md`` paths, which only a
clone has; the package carries the same files (``dominds/bundled.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dominds import bundled
from dominds.cli.common import CliError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "docs",
        help="read the documentation: `dominds docs` lists the topics, `dominds docs TOPIC` prints one",
        description="Print a documentation topic (Markdown) or, with no TOPIC, list the topics.",
    )
    p.add_argument("topic", nargs="?", metavar="TOPIC", help="a topic, e.g. cli, install, plan-solve")
    p.add_argument("--path", action="store_true", help="print the file's path instead of its text")
    p.set_defaults(func=_docs)


def _docs(args: argparse.Namespace) -> int:
    folder = bundled.docs_dir()
    if folder is None:
        raise CliError(f"the documentation is missing from this copy of dominds ({bundled.PACKAGE_DIR})")
    topics = {path.stem: path for path in sorted(folder.glob("*.md"))}
    if not args.topic:
        width = max(map(len, topics))
        for name, path in topics.items():
            print(f"{name.ljust(width)}  {_title(path)}")
        return 0
    topic = args.topic.removesuffix(".md").removeprefix("docs/")
    chosen = topics.get(topic)
    if chosen is None:
        raise CliError(f"no documentation topic {args.topic!r}; the topics: {', '.join(topics)}")
    if args.path:
        print(chosen)
    else:
        sys.stdout.write(chosen.read_text(encoding="utf-8"))
    return 0


def _title(path: Path) -> str:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("# "):
                return line[2:].strip()
    return ""
