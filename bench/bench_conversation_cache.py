"""Cost of a 30-turn dialog on Anthropic, with and without conversation caching (issue 16).

The real engine and ``AnthropicGenerator`` (the real ``anthropic`` SDK) against the fake server on
127.0.0.1, whose replies report the usage the Messages API's prompt cache would give for each request
(``tests/llm/fake_servers.AnthropicPromptCache``: prefixes written at ``cache_control`` breakpoints,
read back by a later request that starts with the same prefix). A lead with a long persona talks for
30 turns; in the first it adds a reminder (so every later context carries the moving reminders block).
Each variant runs the same dialog:

- ``conversation``: the default since issue 16, breakpoints on the system prompt and the conversation;
- ``system``: only the system prompt cached (what Dominds did before);
- ``off``: no caching at all.

Cost uses the catalog's prices of ``claude-sonnet-4-6`` (USD per million tokens).
Run: ``.venv/bin/python bench/bench_conversation_cache.py [--turns 30] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "llm"))

from _common import Figure, machine, print_figures  # noqa: E402
from fake_servers import AnthropicPromptCache, RecordedRequest, Reply, anthropic_frames, running_fake_server  # noqa: E402

from dominds.driver.engine import Engine  # noqa: E402
from dominds.llm.catalog_yaml import builtin_catalog  # noqa: E402
from dominds.rtws import Rtws  # noqa: E402

MODEL = "claude-sonnet-4-6"
PERSONA = "\n".join(
    f"- Rule {i}: when you review code, check naming, error handling, tests and docs; explain each finding."
    for i in range(120)
)
"""About 3,000 tokens: personas, team directory and tool schemas make system prompts long."""
TEAM = """\
member_defaults: {{provider: fake-anthropic, model: {model}, diligence_push_max: 0,
  model_params: {{anthropic: {{prompt_caching: {caching}}}}}}}
default_responder: lead
members:
  lead: {{name: Lead, gofor: [reviews the code]}}
"""
LLM = """\
providers:
  fake-anthropic:
    apiType: anthropic
    baseUrl: {url}
    apiKeyEnvVar: BENCH_FAKE_ANTHROPIC_KEY
    models:
      {model}: {{context_length: 1000000, pricing: {pricing}}}
"""
REPLY = " ".join(["The function reads well; consider a clearer name for the loop variable."] * 12)
"""About 250 tokens per reply."""


class CachingPlayer:
    def __init__(self) -> None:
        self.cache = AnthropicPromptCache()

    def __call__(self, request: RecordedRequest) -> Reply:
        input_tokens, read, written = self.cache.usage(request.body)
        last = request.body["messages"][-1]["content"]
        first_turn = any("turn 1:" in b.get("text", "") for b in last if isinstance(b, dict))
        if first_turn:
            blocks: list[dict[str, Any]] = [
                {"text": "Noted; I keep a reminder."},
                {"tool_use": {"id": "toolu_rem", "name": "add_reminder", "input": {"content": "check the tests"}}},
            ]
        else:
            blocks = [{"text": REPLY}]
        frames = anthropic_frames(
            blocks, input_tokens=input_tokens, output_tokens=len(REPLY) // 4, cache_read=read, cache_write=written
        )
        return Reply(frames=frames)


async def one_dialog(caching: str, turns: int) -> dict[str, float]:
    pricing = builtin_catalog().model("anthropic", MODEL).pricing  # type: ignore[union-attr]
    assert pricing is not None
    price = {"input": pricing.input, "output": pricing.output, "cache_read": pricing.cache_read,
             "cache_write": pricing.cache_write}  # fmt: skip
    async with running_fake_server() as fake:
        fake.responder = CachingPlayer()
        root = Path(tempfile.mkdtemp(prefix="dominds-bench-cache-"))
        rtws = Rtws(root)
        rtws.minds_dir.mkdir(parents=True)
        rtws.team_yaml.write_text(TEAM.format(model=MODEL, caching=caching))
        rtws.llm_yaml.write_text(LLM.format(url=fake.url, model=MODEL, pricing=json.dumps(price)))
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
            return dict(engine.usage_totals(dialog.root_id)["total"])
        finally:
            await engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ["BENCH_FAKE_ANTHROPIC_KEY"] = "sk-ant-bench-not-a-real-key"
    figures = []
    for caching in ("conversation", "system", "off"):
        total = asyncio.run(one_dialog(caching, args.turns))
        note = (f"{int(total['generations'])} generations; input {int(total['inputTokens'])}, "
                f"cache read {int(total['cacheReadTokens'])}, cache write {int(total['cacheWriteTokens'])}, "
                f"output {int(total['outputTokens'])} tokens")  # fmt: skip
        figures.append(
            Figure(f"{args.turns}-turn dialog, prompt_caching: {caching}", "USD", [round(total["costUsd"], 4)], note=note, extra=total)
        )
    print(f"# conversation caching ({machine()})")
    print_figures(f"Cost of a {args.turns}-turn dialog ({MODEL} prices)", figures)
    if args.json:
        args.json.write_text(json.dumps([f.to_json() for f in figures], indent=2))


if __name__ == "__main__":
    main()
