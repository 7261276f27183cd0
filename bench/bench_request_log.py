"""What "what the model saw" costs on disk (issue 35, item 2): a long dialog's request log against its requests.

The real engine and SDKs (Anthropic with conversation caching, OpenAI Chat Completions) against the fake
server on 127.0.0.1. A lead with a long persona talks for ``--turns`` turns, adding a reminder in the first
(so every later request carries the moving reminders block). Every request repeats the whole conversation:
stored whole, the requests would take the sum of all request bodies (growing with the square of the turns);
the request log (``store/request_log.py``) stores what each request added. Printed per API: that sum, the
log's size, the log's size as a multiple of the last request, bytes per line over the last quarter of the
dialog, and the time to rebuild the last request from the log (``read_request``, 5 samples).
Run: ``.venv/bin/python bench/bench_request_log.py [--turns 100] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "llm"))

from _common import Figure, machine, print_figures  # noqa: E402
from dialects import AnthropicDialect, Dialect, OpenAiChatDialect, Script, Text, Tool  # noqa: E402
from fake_servers import RecordedRequest, Reply, running_fake_server  # noqa: E402

from dominds.driver.engine import Engine  # noqa: E402
from dominds.rtws import Rtws  # noqa: E402
from dominds.store.request_log import read_request, request_log_name  # noqa: E402

PERSONA = "\n".join(
    f"- Rule {i}: when you review code, check naming, error handling, tests and docs; explain each finding."
    for i in range(120)
)
TEAM = """\
member_defaults: {{provider: {provider}, model: fake-model, diligence_push_max: 0}}
default_responder: lead
members:
  lead: {{name: Lead, gofor: [reviews the code]}}
"""
LLM = """\
providers:
  fake-anthropic: {{apiType: anthropic, baseUrl: "{url}", apiKeyEnvVar: BENCH_FAKE_KEY, models: {{fake-model: {{context_length: 1000000}}}}}}
  fake-openai: {{apiType: openai-compatible, baseUrl: "{url}/v1", apiKeyEnvVar: BENCH_FAKE_KEY, models: {{fake-model: {{context_length: 1000000}}}}}}
"""
REPLY = " ".join(["The function reads well; consider a clearer name for the loop variable."] * 12)


async def one_dialog(provider: str, dialect: Dialect, turns: int) -> list[Figure]:
    async with running_fake_server() as fake:

        def player(request: RecordedRequest) -> Reply:
            if len(fake.requests) == 1:
                return dialect.reply(Script((Text("Noted."), Tool("call_rem", "add_reminder", {"content": "check the tests"}))))
            return dialect.reply(Script((Text(REPLY),)))

        fake.responder = player
        root = Path(tempfile.mkdtemp(prefix="dominds-bench-requests-"))
        rtws = Rtws(root)
        rtws.minds_dir.mkdir(parents=True)
        rtws.team_yaml.write_text(TEAM.format(provider=provider))
        rtws.llm_yaml.write_text(LLM.format(url=fake.url))
        persona = rtws.minds_dir / "team" / "lead" / "persona.md"
        persona.parent.mkdir(parents=True)
        persona.write_text(PERSONA)
        (root / "tasks" / "review.tsk").mkdir(parents=True)
        (root / "tasks" / "review.tsk" / "goals.md").write_text("Review the parser module.\n")
        engine = Engine(rtws)
        await engine.start()
        try:
            dialog = engine.create_dialog("lead", "tasks/review.tsk")
            for turn in range(1, turns + 1):
                engine.submit_user_message(dialog, f"turn {turn}: please review the next function, " + "x = 1; " * 40)
                await engine.wait_idle(timeout=60)
            log = dialog.files.dir / request_log_name(1)
        finally:
            await engine.close()
        bodies = [r.raw for r in fake.requests]
        lines = [0] * len(bodies)  # each generation's two lines: its request, and its attempts and timing
        for line in log.read_bytes().splitlines():
            lines[json.loads(line)["genseq"] - 1] += len(line) + 1
        quarter = max(1, len(lines) // 4)
        reads = []
        for _ in range(5):
            started = time.perf_counter()
            stored = read_request(log, len(bodies))
            reads.append((time.perf_counter() - started) * 1000)
            assert stored is not None and stored.body == bodies[-1]
        whole, kept = sum(map(len, bodies)), log.stat().st_size
        note = f"{len(bodies)} requests; last request {len(bodies[-1]):,} B"
        return [
            Figure(f"{provider}: all request bodies, stored whole", "kB", [round(whole / 1024, 1)], note=note),
            Figure(f"{provider}: request log", "kB", [round(kept / 1024, 1)], note=f"{whole / kept:.1f}x smaller"),
            Figure(f"{provider}: request log / last request", "x", [round(kept / len(bodies[-1]), 2)]),
            Figure(f"{provider}: bytes per generation, last quarter", "B", [round(sum(lines[-quarter:]) / quarter)]),
            Figure(f"{provider}: rebuild the last request", "ms", reads),
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ["BENCH_FAKE_KEY"] = "sk-bench-not-a-real-key"
    os.environ.setdefault("DOMINDS_FORBID_REAL_LLM", "1")
    figures = []
    for provider, dialect in (("fake-anthropic", AnthropicDialect()), ("fake-openai", OpenAiChatDialect())):
        figures += asyncio.run(one_dialog(provider, dialect, args.turns))
    print(f"# request log ({machine()})")
    print_figures(f"What the model saw, a {args.turns}-turn dialog", figures)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in figures], indent=2))


if __name__ == "__main__":
    main()
