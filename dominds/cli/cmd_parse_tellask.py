"""`dominds parse-tellask`: parse stdin as one saying segment and print its segments as JSON."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "parse-tellask",
        help="parse Tellask text from stdin and print its segments as JSON",
        description=(
            "Read text from stdin, parse it as one saying segment with the Tellask grammar "
            "(see `dominds docs tellask`) and print one JSON array of markdown and tellask segments."
        ),
    )
    p.set_defaults(func=_parse_tellask)


def _parse_tellask(args: argparse.Namespace) -> int:
    # Bytes in, bytes out: the text must reach the parser exactly (`\r` included) and the JSON must
    # come out as UTF-8 whatever the locale; undecodable input bytes become U+FFFD instead of failing.
    raw = sys.stdin.buffer.read()
    from dominds.tellask import parse_segments, segment_to_json  # here: `--help` needs no parser

    segments = parse_segments(raw.decode("utf-8", errors="replace"))
    document = json.dumps([segment_to_json(s) for s in segments], ensure_ascii=False, separators=(",", ":"))
    out = sys.stdout.buffer
    out.write(document.encode("utf-8") + b"\n")
    out.flush()
    return 0
