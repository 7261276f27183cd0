"""What `dominds check` asks outside the files: each MCP server started to list its tools, each provider in
use asked whether it takes its key. Both can take seconds each (a server that starts slowly, a provider
that does not answer), so each probe is announced on stderr when it starts and when it ends: before, the
command ran 20 s and more with no output at all.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dominds.llm.catalog import Catalog, ProviderConfig
    from dominds.problems import Problem
    from dominds.team import Team

KEY_REFUSED = "llm_provider_key_refused"
UNREACHABLE = "llm_provider_unreachable"


def progress(text: str) -> None:
    """One line of progress on stderr, at once (stdout keeps the report, and `--json` its JSON)."""
    print(text, file=sys.stderr, flush=True)


def mcp_runtime_problems(mcp: Any) -> list[Problem]:
    """Start every server of mcp.yaml (all at once), list its tools, stop it; say each as it goes."""

    async def one(name: str) -> None:
        started = time.monotonic()
        progress(f"checking MCP server {name} …")
        await mcp.prepare([name])
        state = mcp.servers[name]
        took = f"{time.monotonic() - started:.1f} s"
        if state.listed is not None:
            progress(f"MCP server {name}: {len(state.listed)} tool(s) ({took})")
        else:
            progress(f"MCP server {name}: failed ({took})")

    async def probe() -> list[Problem]:
        try:
            await asyncio.gather(*(one(name) for name in list(mcp.servers)))
            return list(mcp.runtime_problems())
        finally:
            await mcp.close()

    return asyncio.run(probe())


def probe_problems(team: Team, catalog: Catalog) -> list[Problem]:
    """Each provider in use whose key is set (or that needs none) is asked whether it takes it, all at once."""
    from dominds.cli.common import command_name
    from dominds.llm.catalog import LlmResolutionError, resolve_member_llm
    from dominds.llm.key_probe import KeyVerdict, probe_key
    from dominds.problems import make_problem

    used: dict[str, tuple[ProviderConfig, list[str], int]] = {}
    for member in team.members.values():
        try:
            provider = resolve_member_llm(member, catalog, os.environ).provider
        except LlmResolutionError:
            continue  # reported as a configuration problem
        env_var = provider.api_key_env_var
        if provider.api_type == "scripted" or (env_var and not os.environ.get(env_var, "").strip()):
            continue  # offline, or its key is missing (reported by the key check)
        _provider, named, roles = used.setdefault(provider.key, (provider, [], 0))
        if member.hidden:
            used[provider.key] = (provider, named, roles + 1)
        else:
            named.append(f"@{member.id}")
    if not used:
        return []

    async def ask(provider: ProviderConfig) -> KeyVerdict:
        started = time.monotonic()
        env_var = provider.api_key_env_var
        progress(f"asking provider {provider.key} whether it takes {'the key in ' + env_var if env_var else 'requests'} …")
        verdict = await probe_key(provider, os.environ.get(env_var or "", "").strip() or None)
        said = {"accepted": "key accepted", "refused": "key refused", "unreachable": "no answer", "unknown": "could not tell"}
        progress(f"provider {provider.key}: {said[verdict.kind]} ({time.monotonic() - started:.1f} s)")
        return verdict

    async def ask_all() -> list[KeyVerdict]:
        return list(await asyncio.gather(*(ask(p) for p, _n, _r in used.values())))

    out = []
    for (provider, named, roles), verdict in zip(used.values(), asyncio.run(ask_all()), strict=True):
        who = ", ".join(named + ([f"{roles} workflow role{'' if roles == 1 else 's'}"] if roles else []))
        uses = f"use{'s' if len(named) + roles == 1 else ''}"
        source = f"provider {provider.key}"
        if verdict.kind == "refused":
            env_var = provider.api_key_env_var or "its key variable"
            out.append(make_problem(
                KEY_REFUSED, source, None,
                f"the provider refused the key in {env_var} ({verdict.detail}), and {who} {uses} it: "
                f"export {env_var}=<the right key> before `{command_name()} serve` or `run`",
            ))
        elif verdict.kind == "unreachable":
            out.append(make_problem(
                UNREACHABLE, source, None,
                f"could not ask whether it takes the key: {verdict.detail}; {who} {uses} it "
                f"({_unreachable_hint(provider.base_url or '')})",
                "warning",
            ))
    return out


def _unreachable_hint(base_url: str) -> str:
    from dominds.llm.retry import unreachable_hint

    hint = unreachable_hint(base_url)
    return hint if hint.startswith("is the server") else f"{hint} `--no-connect` leaves this out"
