"""`dominds check`: validate `.minds/team.yaml`, `.minds/llm.yaml` and `.minds/mcp.yaml` and report every problem.

MCP servers are started (and stopped) to list their tools, so unreachable servers and tool-name
clashes show up too, and each provider a member or workflow role uses is asked whether it takes the key
set now (``key_probe.py``); ``--no-connect`` skips both.

Prints ``file:line: severity: message`` per problem and a summary; exits 0 when there is none,
1 otherwise (warnings included, so a typo in a key is never silently ignored in CI).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any

from dominds.cli.common import workspace

if TYPE_CHECKING:
    from dominds.llm.catalog import Catalog, ProviderConfig, ResolvedLlm
    from dominds.problems import Problem, Severity
    from dominds.rtws import Rtws
    from dominds.team import Member, Team

KEY_MISSING = "llm_provider_key_missing"
KEY_REFUSED = "llm_provider_key_refused"
UNREACHABLE = "llm_provider_unreachable"
REJECTED = "llm_provider_rejected_request"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "check",
        help="check the configuration and the API key of each provider in use; exit 1 on problems",
        description="Load the team and the LLM providers as the daemon would and report every problem: the "
        "configuration, an API key missing in this environment, a key a provider the team uses refuses (each "
        "is asked now, with the key set now), an MCP server that does not start.",
        epilog="examples:\n  dominds check\n  dominds check --no-connect      the files and the environment only\n"
        "  dominds check --json | jq '.[].message'\nexit status: 0 no problems, 1 problems (warnings included).\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", action="store_true", help="print the problems as a JSON list")
    p.add_argument(
        "--no-connect", action="store_true",
        help="connect to nothing: neither start the MCP servers of .minds/mcp.yaml nor ask the providers about their keys",
    )
    p.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    # Imported here: every `dominds` command imports every command module to build its parser.
    from dominds.driver.extensions import with_builtins
    from dominds.llm.catalog import LlmResolutionError, resolve_member_llm
    from dominds.llm.catalog_yaml import load_catalog
    from dominds.team import load_team
    from dominds.workflows.mount import workflow_extensions

    rtws = workspace()
    catalog, problems = load_catalog(rtws)
    from dominds.mcp.manager import McpManager

    extensions = with_builtins(workflow_extensions())  # what `dominds serve` offers
    mcp = McpManager(rtws, extensions.toolsets)
    problems += mcp.reload()
    team, team_problems = load_team(
        rtws,
        extensions.toolsets,
        more_toolset_names=mcp.toolset_names(),
        catalog=catalog,
        workflow_members=extensions.members,
    )
    problems += team_problems
    team, team_fallback = _team_in_use(rtws, team, team_problems, extensions, mcp.toolset_names(), catalog)
    problems += team_fallback
    if mcp.servers and not args.no_connect:
        problems += _mcp_runtime_problems(mcp)
    resolutions: dict[str, str] = {}
    for member in team.members.values():
        try:
            resolved = resolve_member_llm(member, catalog, os.environ)
        except LlmResolutionError as exc:
            problems += _resolution_problem(team, member.id, str(exc), problems)
        else:
            resolutions[member.id] = f"{resolved.provider_key}/{resolved.model_key}"
            if member.provider is None:  # chosen here by the keys set; team.yaml's loader could not check it
                problems += _param_problems(member, resolved, problems)
    problems += _key_problems(team, catalog)
    if not args.no_connect:
        problems += _probe_problems(team, catalog)
    problems += _runtime_problems(rtws, catalog)
    problems.sort(key=lambda p: (p.source, p.line or 0))
    if args.json:
        print(json.dumps([p.to_json() for p in problems], ensure_ascii=False, indent=2))
    else:
        _print_report(team, resolutions, problems)
    return 1 if problems else 0


def _param_problems(member: Member, resolved: ResolvedLlm, seen: list[Problem]) -> list[Problem]:
    """``model_params`` the provider a member resolves to (automatically) would refuse or ignore."""
    from dominds.llm.catalog import provider_params_mistakes
    from dominds.problems import TEAM_CONFIG_ERROR, make_problem

    out: list[Problem] = []
    for key in ("model_params", "fbr_model_params"):
        params = getattr(member, key)
        if not params:
            continue
        refused, ignored = provider_params_mistakes(params, resolved.provider, resolved.model_key)
        line = member.key_lines.get(key)
        graded: list[tuple[str, Severity]] = [(m, "error") for m in refused] + [(m, "warning") for m in ignored]
        for message, severity in graded:
            text = f"`{key}` for provider {resolved.provider_key!r} ({resolved.provider.api_type}, chosen by the keys set): {message}"
            problem = make_problem(TEAM_CONFIG_ERROR, ".minds/team.yaml", line, text, severity)
            if all(p.id != problem.id for p in [*seen, *out]):
                out.append(problem)
    return out


def _key_problems(team: Team, catalog: Catalog) -> list[Problem]:
    """A provider some member uses whose API key is not set here, checked now (never a remembered verdict)."""
    from dominds.cli.common import command_name
    from dominds.cli.keys import missing_keys
    from dominds.problems import make_problem

    return [
        make_problem(
            KEY_MISSING,
            f"provider {m.provider}",
            None,
            f"{m.env_var} is not set in this environment, and {m.who()} use{'s' if len(m.members) + m.roles == 1 else ''} "
            f"provider {m.provider!r}: export {m.env_var}=<your key> before `{command_name()} serve` or `run` "
            "(or choose another provider in .minds/team.yaml)",
        )
        for m in missing_keys(team, catalog)
    ]


def _probe_problems(team: Team, catalog: Catalog) -> list[Problem]:
    """Each provider in use whose key is set (or that needs none) is asked whether it takes it, all at once."""
    import asyncio

    from dominds.cli.common import command_name
    from dominds.llm.catalog import LlmResolutionError, resolve_member_llm
    from dominds.llm.key_probe import probe_key
    from dominds.problems import make_problem

    used: dict[str, tuple[ProviderConfig, list[str], int]] = {}
    for member in team.members.values():
        try:
            provider = resolve_member_llm(member, catalog, os.environ).provider
        except LlmResolutionError:
            continue  # reported as a configuration problem
        env_var = provider.api_key_env_var
        if provider.api_type == "scripted" or (env_var and not os.environ.get(env_var, "").strip()):
            continue  # offline, or its key is missing (reported by _key_problems)
        _provider, named, roles = used.setdefault(provider.key, (provider, [], 0))
        if member.hidden:
            used[provider.key] = (provider, named, roles + 1)
        else:
            named.append(f"@{member.id}")
    if not used:
        return []

    async def ask_all() -> list[Any]:
        return await asyncio.gather(
            *(probe_key(p, os.environ.get(p.api_key_env_var or "", "").strip() or None) for p, _n, _r in used.values())
        )

    out = []
    for (provider, named, roles), verdict in zip(used.values(), asyncio.run(ask_all()), strict=True):
        who = ", ".join(named + ([f"{roles} workflow role{'' if roles == 1 else 's'}"] if roles else []))
        source = f"provider {provider.key}"
        if verdict.kind == "refused":
            env_var = provider.api_key_env_var or "its key variable"
            out.append(make_problem(
                KEY_REFUSED, source, None,
                f"the provider refused the key in {env_var} ({verdict.detail}), and {who} use{'s' if len(named) + roles == 1 else ''} it: "
                f"export {env_var}=<the right key> before `{command_name()} serve` or `run`",
            ))
        elif verdict.kind == "unreachable":
            out.append(make_problem(
                UNREACHABLE, source, None,
                f"could not ask whether it takes the key: {verdict.detail}; {who} use{'s' if len(named) + roles == 1 else ''} it "
                f"({_unreachable_hint(provider.base_url or '')})",
                "warning",
            ))
    return out


def _unreachable_hint(base_url: str) -> str:
    """A server on this machine is probably not running; a hosted one probably not reachable from here."""
    from urllib.parse import urlsplit

    if urlsplit(base_url).hostname in ("127.0.0.1", "localhost", "::1"):
        return "is the server running? its address is baseUrl in .minds/llm.yaml"
    return "is this machine offline, or behind a proxy? `--no-connect` leaves this out"


def _runtime_problems(rtws: Rtws, catalog: Catalog) -> list[Problem]:
    """Rejections met at run time (bad key, unknown model) that still hold.

    With a daemon running, its own view (its environment holds the keys its requests use). Without one,
    the recorded ones whose key is still the one set here: a rejection recorded before the key was
    exported or changed is stale. A missing key is left to ``_key_problems``, which checks it live.
    """
    from dominds.cli.client import DaemonClient, find_daemon
    from dominds.problems import make_problem
    from dominds.store import provider_problems

    daemon = find_daemon(rtws)
    if daemon is not None:
        import asyncio

        async def fetch() -> list[dict[str, Any]]:
            async with DaemonClient(daemon) as client:
                return list((await client.get("/api/problems"))["problems"])

        return [
            make_problem(str(p["kind"]), f"{p['source']} (daemon pid {daemon.pid})", p.get("line"), str(p["message"]))
            for p in asyncio.run(fetch())
            if p.get("kind") == REJECTED
        ]
    out = []
    for seen in provider_problems.load(rtws):
        provider = catalog.provider(seen.provider)
        env_var = provider.api_key_env_var if provider is not None else None
        if seen.key != "unset" and provider_problems.is_current(seen, env_var, os.environ):
            out.append(make_problem(REJECTED, f"provider {seen.provider}", None, seen.message))
    return out


def _mcp_runtime_problems(mcp: Any) -> list[Problem]:
    import asyncio

    async def probe() -> list[Problem]:
        try:
            await mcp.discover_all()
            return list(mcp.runtime_problems())
        finally:
            await mcp.close()

    return asyncio.run(probe())


def _resolution_problem(team: Team, member_id: str, message: str, known: list[Problem]) -> list[Problem]:
    """A problem for a member that resolves to no provider/model, unless its line already has one."""
    member = team.members[member_id]
    from dominds.problems import TEAM_CONFIG_ERROR, make_problem
    from dominds.team import TEAM_YAML

    line = member.key_lines.get("model", member.key_lines.get("provider", member.line))
    if line is not None and any(
        p.source == TEAM_YAML and p.line == line and p.severity == "error" for p in known
    ):
        return []  # load_team already reported the bad provider/model on this line
    return [make_problem(TEAM_CONFIG_ERROR, TEAM_YAML, line, message)]


def _team_in_use(rtws: Rtws, team: Team, team_problems: list[Problem], extensions: Any, mcp_names: list[str], catalog: Any) -> tuple[Team, list[Problem]]:
    """The team a daemon (``run``, ``serve``) would use: with errors in team.yaml, its last good copy when
    there is one (before, `check` reported the broken file's empty team, "0 members, default responder
    fuxi", while `run` went on with the last good one), and the problem that says so."""
    from dominds.driver.last_good import LastGood, has_errors
    from dominds.team import load_team

    if not has_errors(team_problems):
        return team, []
    last_good = LastGood(rtws)
    saved_at = last_good.saved_at(rtws.team_yaml)
    if saved_at is None:
        return team, []  # what could be read is what a daemon uses too
    kept, _ = load_team(last_good.shadow, extensions.toolsets, more_toolset_names=mcp_names, catalog=catalog, workflow_members=extensions.members)
    return kept, [last_good.fallback_problem(rtws.team_yaml, saved_at)]


def _print_report(team: Team, resolutions: dict[str, str], problems: list[Problem]) -> None:
    for problem in problems:
        print(problem.format())
    visible = [m.id for m in team.visible_members()]
    print(f"team: {len(visible)} member(s) ({', '.join(visible) or 'none'}); default responder: {team.default_responder}")
    for member_id in visible:
        print(f"  {member_id} -> {resolutions.get(member_id, 'unresolved')}")
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    if problems:
        print(f"{errors} error(s), {warnings} warning(s)")
    else:
        print("no problems")
