"""`dominds check`: validate `.minds/team.yaml`, `.minds/llm.yaml` and `.minds/mcp.yaml` and report every problem.

MCP servers are started (and stopped) to list their tools, so unreachable servers and tool-name
clashes show up too, and each provider a member or workflow role uses is asked whether it takes the key
set now (``key_probe.py``); ``--no-connect`` skips both.

Prints ``file:line: severity: message`` per problem and a summary, and each probe on stderr as it runs
(``check_probes.py``). Exits 1 when there is an error, 0 otherwise: a warning (a setting ignored but
harmless, a provider that could not be asked) does not fail the command; ``--strict`` makes warnings
fail it too, for CI that must not let a typo in a key pass.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any

from dominds.cli.common import workspace

if TYPE_CHECKING:
    from dominds.llm.catalog import Catalog, ResolvedLlm
    from dominds.problems import Problem, Severity
    from dominds.rtws import Rtws
    from dominds.team import Member, Team

KEY_MISSING = "llm_provider_key_missing"
REJECTED = "llm_provider_rejected_request"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "check",
        help="check the configuration and the API key of each provider in use; exit 1 on errors",
        description="Load the team and the LLM providers as the daemon would and report every problem: the "
        "configuration, an API key missing in this environment, a key a provider the team uses refuses (each "
        "is asked now, with the key set now), an MCP server that does not start.",
        epilog="examples:\n  dominds check\n  dominds check --no-connect      the files and the environment only\n"
        "  dominds check --json | jq '.[].message'\n  dominds check --strict         in CI: warnings fail too\n"
        "exit status: 0 no errors (warnings are printed), 1 errors (or warnings with --strict).\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", action="store_true", help="print the problems as a JSON list")
    p.add_argument("--strict", action="store_true", help="exit 1 on warnings too, not only on errors")
    p.add_argument(
        "--no-connect", action="store_true",
        help="connect to nothing: neither start the MCP servers of .minds/mcp.yaml nor ask the providers about their keys",
    )
    p.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    # Imported here: every `dominds` command imports every command module to build its parser.
    from dominds.cli.check_probes import mcp_runtime_problems, probe_problems
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
        problems += mcp_runtime_problems(mcp)
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
        problems += probe_problems(team, catalog)
    problems += _runtime_problems(rtws, catalog)
    problems.sort(key=lambda p: (p.source, p.line or 0))
    if args.json:
        print(json.dumps([p.to_json() for p in problems], ensure_ascii=False, indent=2))
    else:
        _print_report(team, resolutions, problems)
    if args.strict:
        return 1 if problems else 0
    return 1 if any(p.severity == "error" for p in problems) else 0


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
    from dominds.driver.last_good import CONFIG_FALLBACK

    counted = [p for p in problems if p.kind != CONFIG_FALLBACK]  # a note on the errors it names, not one more
    errors = sum(p.severity == "error" for p in counted)
    warnings = len(counted) - errors
    if problems:
        print(f"{errors} error(s), {warnings} warning(s)")
    else:
        print("no problems")
