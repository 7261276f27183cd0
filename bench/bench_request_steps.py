"""Steps of building a long dialog's request, each beside the simpler code it replaced (issue 31).

At 10,000 messages (``--messages``): the body an SDK posts (``message_reuse.json_array`` between ``sdk_clients.body_around``, one join)
beside the concatenation it replaced; which messages name an image (``images._naming`` on a request one
message longer than the last) beside the identity walk of every message it replaced; and the messages
after a kept start as a slice beside ``itertools.islice``, which steps over the first ones. Each figure
is the least CPU time of ``--calls`` calls (least, not median: what the step costs when nothing else
takes the CPU), the two forms alternately in one process.

    .venv/bin/python bench/bench_request_steps.py [--messages 10000] [--calls 200]
"""

from __future__ import annotations

import argparse
import itertools
import operator
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Figure, machine, print_figures

from dominds.driver import images
from dominds.llm.base import ChatMessage
from dominds.llm.message_reuse import encoded, json_array
from dominds.llm.sdk_clients import body_around


def _least_ms(step: Callable[[], Any], calls: int) -> float:
    best = float("inf")
    for _ in range(calls):
        started = time.process_time_ns()
        step()
        best = min(best, time.process_time_ns() - started)
    return best / 1e6


def _concatenated(kwargs: dict[str, Any], name: str, parts: list[bytes]) -> bytes:
    """The body as it was built before: the parts joined, then concatenated with the head and the tail."""
    body = {key: value for key, value in kwargs.items() if key != name}
    head = encoded(body)
    return head[:-1] + b"," + encoded(name) + b":[" + b",".join(parts) + b"]}"


def _naming_by_identity(messages: list[ChatMessage], kept: dict[str, Any]) -> list[int]:
    """Where the messages naming an image are, the previous request's start found by an identity test of
    every message (the code before)."""
    found: list[int] = []
    start = 0
    before = kept.get("walk")
    if before is not None:
        previous, naming = before
        start = len(list(itertools.takewhile(bool, map(operator.is_, previous, messages))))
        found = [index for index in naming if index < start]
    contents = map(operator.attrgetter("content"), itertools.islice(messages, start, None))
    found.extend(itertools.compress(itertools.count(start), map(operator.contains, contents, itertools.repeat("[image"))))
    kept["walk"] = (list(messages), found)
    return found


def figures(count: int, calls: int) -> list[Figure]:
    messages = [ChatMessage(role="user" if i % 2 else "assistant", content=f"message number {i} " * 12) for i in range(count)]
    parts = [encoded({"role": m.role, "content": [{"type": "text", "text": m.content}]}) for m in messages]
    kwargs = {"model": "m", "max_tokens": 100, "system": [{"type": "text", "text": "s" * 2000}]}
    size = len(json_array(parts, around=body_around(kwargs, "messages"))) / 1e6
    longer = [*messages, ChatMessage(role="user", content="one more")]
    kept_now: dict[str, Any] = {}
    kept_before: dict[str, Any] = {}
    images._naming(messages, kept_now)
    _naming_by_identity(messages, kept_before)
    now: dict[str, list[float]] = {"body": [], "naming": [], "after": []}
    before: dict[str, list[float]] = {"body": [], "naming": [], "after": []}
    start = count - 2
    for _ in range(3):  # alternately, so a slower minute of the machine touches both forms
        now["body"].append(_least_ms(lambda: json_array(parts, around=body_around(kwargs, "messages")), calls))
        before["body"].append(_least_ms(lambda: _concatenated(kwargs, "messages", parts), calls))
        now["naming"].append(_least_ms(lambda: images._naming(longer, dict(kept_now)), calls))
        before["naming"].append(_least_ms(lambda: _naming_by_identity(longer, dict(kept_before)), calls))
        now["after"].append(_least_ms(lambda: list(messages[start:]), calls))
        before["after"].append(_least_ms(lambda: list(itertools.islice(messages, start, None)), calls))
    note = f"{count:,} messages; least CPU of {calls} calls, three rounds"
    return [
        Figure(f"request body ({size:.1f} MB): one join (json_array)", "ms", now["body"], note=note),
        Figure("  ... concatenated with + (the code before)", "ms", before["body"], note=note),
        Figure("messages naming an image: kept start by one comparison (images._naming)", "ms", now["naming"], note=note),
        Figure("  ... by an identity test per message (the code before)", "ms", before["naming"], note=note),
        Figure("the last 2 messages: a slice", "ms", now["after"], note=note),
        Figure("  ... itertools.islice (the code before)", "ms", before["after"], note=note),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    print_figures(f"Steps of a long dialog's request — {machine()}", figures(args.messages, args.calls))


if __name__ == "__main__":
    main()
