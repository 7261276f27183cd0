"""API keys the team's providers need, checked live in this process's environment.

Live on purpose: `dominds check` and the commands that drive a dialog here look at the environment
as it is now, never at a verdict remembered from an earlier run (export the key, and the next
command sees it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dominds.cli.common import CliError, command_name

if TYPE_CHECKING:
    from dominds.driver.engine import Engine
    from dominds.llm.catalog import Catalog
    from dominds.team import Team


@dataclass(frozen=True)
class MissingKey:
    provider: str
    env_var: str
    members: tuple[str, ...]
    """The visible members that use the provider (workflow roles are not named)."""
    roles: int
    """How many hidden workflow roles use it too."""

    def who(self) -> str:
        named = [f"@{m}" for m in self.members]
        if self.roles:
            named.append(f"{self.roles} workflow role{'' if self.roles == 1 else 's'}")
        return ", ".join(named)


def missing_keys(team: Team, catalog: Catalog, env: Mapping[str, str] | None = None) -> list[MissingKey]:
    """Providers used by some member whose API-key variable is unset (or blank) in ``env``."""
    from dominds.llm.catalog import LlmResolutionError, resolve_member_llm

    environ = os.environ if env is None else env
    users: dict[str, tuple[str, list[str], int]] = {}
    for member in team.members.values():
        try:
            resolved = resolve_member_llm(member, catalog, environ)
        except LlmResolutionError:
            continue  # reported as a configuration problem
        env_var = resolved.provider.api_key_env_var
        if not env_var or environ.get(env_var, "").strip():
            continue
        _var, named, roles = users.setdefault(resolved.provider_key, (env_var, [], 0))
        if member.hidden:
            users[resolved.provider_key] = (env_var, named, roles + 1)
        else:
            named.append(member.id)
    return [MissingKey(p, var, tuple(named), roles) for p, (var, named, roles) in users.items()]


def require_key(team: Team, catalog: Catalog, agent_id: str | None) -> None:
    """Refuse to drive ``agent_id`` here when its provider's key is not in this environment."""
    from dominds.llm.catalog import LlmResolutionError, resolve_member_llm

    member = team.member(agent_id or team.default_responder)
    if member is None:
        return  # the engine names the unknown agent
    try:
        resolved = resolve_member_llm(member, catalog)
    except LlmResolutionError as exc:
        raise CliError(f"{exc} (`{command_name()} check` lists every problem)") from exc
    env_var = resolved.provider.api_key_env_var
    if env_var and not os.environ.get(env_var, "").strip():
        raise CliError(
            f"@{member.id} answers with provider {resolved.provider_key!r}, which needs an API key, and "
            f"{env_var} is not set in this shell: export {env_var}=<your key> and run this again "
            f"(or choose another provider in .minds/team.yaml; `{command_name()} check` shows each member's)"
        )


def require_key_here(engine: Engine, agent_id: str | None) -> None:
    """Driven in this process: refuse before anything is written when the agent's API key is not set here."""
    config = engine.config.get()
    require_key(config.team, config.catalog, agent_id)
