"""The team: members of ``.minds/team.yaml``, their defaults, and the always-present shadow members.

``load_team`` never raises. Every mistake in the file becomes a ``Problem`` pointing at its line and
the best-effort team is returned: a bad key or value is ignored (the default applies), a broken
member is left out, a missing or unreadable file gives the bootstrap team (``fuxi`` + ``pangu``).
The driver reloads the team before every generation, so hand edits take effect without a restart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dominds.llm.catalog import Catalog
from dominds.llm.catalog_yaml import load_catalog
from dominds.problems import (
    TEAM_CONFIG_ERROR,
    Problem,
    ProblemCollector,
    compose_yaml,
    did_you_mean,
    is_invalid,
    is_mapping,
    is_null,
    mapping_entries,
    node_line,
    try_node_value,
)
from dominds.rtws import Rtws
from dominds.team_settings import MemberSettingsReader, MemberSpec, NoToolsets, OfferedToolsets, merge_specs

TEAM_YAML = ".minds/team.yaml"
SHADOW_MEMBER_IDS = ("fuxi", "pangu")
"""Hidden members every team has: ``fuxi`` administers the team, ``pangu`` is a general worker."""
SHELL_TOOL_NAMES = frozenset({"shell_cmd", "stop_daemon", "get_daemon_output"})
"""Tools only ``shell_specialists`` keep; the runtime filters them out for everyone else."""
RESERVED_IDS = frozenset({"human", "self", "tellasker"})
"""Tellask targets with a fixed meaning, so no member may be called that."""
_MEMBER_ID_RE = re.compile(r"[\w][\w.-]*", re.UNICODE)  # the characters a `@mention` can carry


@dataclass(frozen=True)
class Member:
    """One teammate with ``member_defaults`` and built-in defaults already applied."""

    id: str
    """Call sign used in ``!?@<id>``; the key under ``members:``."""
    name: str
    provider: str | None = None
    """Catalog provider key; ``None`` = chosen at run time (see ``resolve_member_llm``)."""
    model: str | None = None
    """Model key of the provider; ``None`` = the provider's first model."""
    gofor: tuple[str, ...] | Mapping[str, str] = ()
    """What the member is for, shown in the team directory of every system prompt."""
    toolsets: tuple[str, ...] = ()
    """Toolset names as written (``'*'`` = all, ``'!name'`` excludes); see ``expand_toolsets``."""
    tools: tuple[str, ...] = ()
    """Single tools added after the toolsets."""
    model_params: Mapping[str, Any] = field(default_factory=dict)
    fbr_effort: int = 1
    """How many tool-less ``@self`` subdialogs a fresh-boots reasoning fans out to; 0 disables."""
    fbr_model_params: Mapping[str, Any] = field(default_factory=dict)
    diligence_push_max: int = 3
    """Diligence Push budget of a root dialog; below 1 disables it."""
    read_dirs: tuple[str, ...] = ()
    """Read allow-list (glob patterns); empty = everything not denied."""
    write_dirs: tuple[str, ...] = ()
    no_read_dirs: tuple[str, ...] = ()
    """Read deny-list, checked before the allow-list."""
    no_write_dirs: tuple[str, ...] = ()
    icon: str | None = None
    streaming: bool = True
    """``False`` = batch generation instead of streaming."""
    continue_on_max_tokens: int = 0
    """How many replies in a row that reach the output limit are continued at once; 0 = the model is
    only told on its next turn that its reply was cut."""
    tellask: Literal["text", "tools", "both"] = "text"
    """How the member delegates: the ``!?@`` text grammar (the seed's form), the Tellask function tools
    (``tellask``, ``tellaskSessionless``, ``tellaskBack``, ``askHuman``, ``freshBootsReasoning``), or both."""
    hidden: bool = False
    """Shadow members are hidden from listings but can still be called."""
    line: int | None = None
    """Line of the member's key in team.yaml (``None`` for a shadow member not written there)."""
    key_lines: Mapping[str, int] = field(default_factory=dict)
    """team.yaml line of each setting, the member's own or inherited from ``member_defaults``."""


@dataclass(frozen=True)
class Team:
    """The effective team: members in file order, then the shadow members."""

    members: Mapping[str, Member]
    default_responder: str
    """Member that answers a dialog created without naming an agent."""
    shell_specialists: tuple[str, ...] = ()

    def member(self, member_id: str) -> Member | None:
        return self.members.get(member_id)

    def visible_members(self) -> list[Member]:
        return [m for m in self.members.values() if not m.hidden]

    def is_shell_specialist(self, member_id: str) -> bool:
        return member_id in self.shell_specialists

    def keeps_shell_tools(self, member_id: str) -> bool:
        """Whether shell tools stay in the member's tools: specialists, and hidden members (exempt)."""
        member = self.members.get(member_id)
        return member_id in self.shell_specialists or (member is not None and member.hidden)


def expand_toolsets(spec: Sequence[str], available: Sequence[str]) -> list[str]:
    """The toolsets ``spec`` selects among ``available``, in declaration order.

    ``'*'`` adds every available toolset; ``'!name'`` removes ``name`` wherever it is written;
    names that are not available are dropped (``load_team`` has reported them).
    """
    excluded = {entry[1:] for entry in spec if entry.startswith("!")}
    selected: list[str] = []
    for entry in spec:
        names = available if entry == "*" else [] if entry.startswith("!") else [entry]
        selected.extend(n for n in names if n in available and n not in excluded and n not in selected)
    return selected


_SHADOW_BASE = {
    "fuxi": MemberSpec({"name": "伏羲(Fuxi)", "toolsets": ("team-mgmt",), "gofor": ("manages the team: team.yaml, personas, providers",)}),
    "pangu": MemberSpec({"name": "盘古(Pangu)", "gofor": ("general-purpose worker with every toolset except team management",)}),
}  # fmt: skip


@dataclass(frozen=True)
class WorkflowMembers:
    """Members a workflow brings (its LLM roles): present in every team of an engine that has them.

    A value owned by the engine (never a process-wide registry filled at import time). They are
    hidden unless team.yaml says otherwise; team.yaml may define the same id to tune it (provider,
    model, model_params, persona file), and its settings are merged over the workflow's.
    """

    specs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Member id → its settings, as team.yaml would write them."""
    personas: Mapping[str, str] = field(default_factory=dict)
    """Member id → persona used when ``.minds/team/<id>/persona.md`` does not exist."""

    def ids(self) -> frozenset[str]:
        return frozenset(self.specs)

    def persona(self, member_id: str) -> str | None:
        return self.personas.get(member_id)

    def plus(self, other: WorkflowMembers) -> WorkflowMembers:
        return WorkflowMembers({**self.specs, **other.specs}, {**self.personas, **other.personas})

    def base_specs(self) -> dict[str, MemberSpec]:
        return {
            member_id: MemberSpec({"hidden": True, "diligence_push_max": 0, "fbr_effort": 0, **values})
            for member_id, values in self.specs.items()
        }


NO_WORKFLOW_MEMBERS = WorkflowMembers()

_SHADOW_TOOLSETS = ("team-mgmt",)
"""Toolsets ``_impose_shadow_constraints`` names (fuxi has it, pangu is denied it)."""


def _impose_shadow_constraints(member_id: str, values: dict[str, Any]) -> None:
    # team.yaml may tune a shadow member, but not turn it into something else
    values["hidden"] = True
    values["diligence_push_max"] = 0
    if member_id == "fuxi" and "team-mgmt" not in values.get("toolsets", ()):
        values["toolsets"] = (*values.get("toolsets", ()), "team-mgmt")
    if member_id == "pangu":
        values["toolsets"] = ("*", "!team-mgmt")
        for key in ("no_read_dirs", "no_write_dirs"):
            if ".minds/**" not in values.get(key, ()):
                values[key] = (*values.get(key, ()), ".minds/**")


def _member(member_id: str, spec: MemberSpec, line: int | None) -> Member:
    values = {"name": member_id, **spec.values}
    return Member(id=member_id, line=line, key_lines=dict(spec.lines), **values)


def bootstrap_team(workflow_members: WorkflowMembers = NO_WORKFLOW_MEMBERS) -> Team:
    """The team of a workspace without team.yaml: the shadow members and the workflows' members."""
    members = {}
    for member_id in SHADOW_MEMBER_IDS:
        values = dict(_SHADOW_BASE[member_id].values)
        _impose_shadow_constraints(member_id, values)
        members[member_id] = _member(member_id, MemberSpec(values), None)
    for member_id, base in workflow_members.base_specs().items():
        members[member_id] = _member(member_id, merge_specs(MemberSpec({"fbr_effort": 1}), base), None)
    return Team(members=members, default_responder="fuxi")


# ---------------------------------------------------------------- loading


def load_team(
    rtws: Rtws,
    toolsets: OfferedToolsets | None = None,
    *,
    more_toolset_names: Iterable[str] = (),
    catalog: Catalog | None = None,
    workflow_members: WorkflowMembers = NO_WORKFLOW_MEMBERS,
) -> tuple[Team, list[Problem]]:
    """Load ``.minds/team.yaml`` into the effective team and the problems found on the way.

    ``toolsets`` (the engine's) and ``more_toolset_names`` (e.g. MCP servers) validate ``toolsets:``
    entries; with neither, toolset names are not checked. ``catalog`` (default:
    ``load_catalog(rtws)``, whose own problems are not repeated here) validates ``provider``/``model``.
    ``workflow_members`` are added to the team (see ``WorkflowMembers``).
    """
    collector = ProblemCollector(TEAM_CONFIG_ERROR, TEAM_YAML)
    if catalog is None:
        catalog = load_catalog(rtws)[0]
    toolsets = toolsets or NoToolsets()
    known = [*toolsets.names(), *more_toolset_names]
    if known:  # the toolsets the runtime itself gives its shadow members must exist, or check says so
        for name in sorted({*_SHADOW_TOOLSETS} - set(known)):
            collector.error(None, f"the runtime gives the shadow members (fuxi, pangu) toolset {name!r}, which this daemon does not offer")
    try:
        text = rtws.team_yaml.read_text(encoding="utf-8")
    except FileNotFoundError:
        return bootstrap_team(workflow_members), []
    except (OSError, UnicodeDecodeError) as exc:
        collector.error(None, f"cannot read the file: {exc}; using the bootstrap team (fuxi, pangu)")
        return bootstrap_team(workflow_members), collector.problems
    root = compose_yaml(text, collector)
    if root is None or is_null(root):
        return bootstrap_team(workflow_members), collector.problems
    if not is_mapping(root):
        collector.wrong_type(root, node_line(root), "team.yaml", "a mapping", "using the bootstrap team")
        return bootstrap_team(workflow_members), collector.problems
    builder = _TeamBuilder(MemberSettingsReader(collector, catalog, known, toolsets), workflow_members.base_specs())
    return builder.build(root), collector.problems


@dataclass
class _TeamBuilder:
    loader: MemberSettingsReader
    workflow_base: dict[str, MemberSpec]
    defaults: MemberSpec = field(default_factory=MemberSpec)
    member_specs: dict[str, tuple[MemberSpec, int]] = field(default_factory=dict)
    default_responder: tuple[str, int] | None = None
    shell_specialists: tuple[tuple[str, ...], int] = ((), 0)

    def build(self, root: Any) -> Team:
        collector = self.loader.collector
        for entry in mapping_entries(root, collector, "team.yaml"):
            self.read_root_entry(entry.key, entry.line, entry.node)
        self.loader.check_llm_choice(self.defaults.values, self.defaults, "member_defaults")
        members: dict[str, Member] = {}
        baseline = MemberSpec({"fbr_effort": 1, "diligence_push_max": 3})
        for member_id, (spec, line) in self.member_specs.items():
            base = _SHADOW_BASE.get(member_id) or self.workflow_base.get(member_id) or MemberSpec()
            merged = merge_specs(baseline, self.defaults, base, spec)
            self.loader.check_llm_choice(merged.values, spec, f"member {member_id!r}")
            self.loader.check_params(merged, self.defaults, f"member {member_id!r}")
            if member_id in SHADOW_MEMBER_IDS:
                _impose_shadow_constraints(member_id, merged.values)
            members[member_id] = _member(member_id, merged, line)
        for member_id in SHADOW_MEMBER_IDS:
            if member_id not in members:
                merged = merge_specs(baseline, self.defaults, _SHADOW_BASE[member_id])
                _impose_shadow_constraints(member_id, merged.values)
                members[member_id] = _member(member_id, merged, None)
        for member_id, base in self.workflow_base.items():
            if member_id not in members:
                members[member_id] = _member(member_id, merge_specs(baseline, self.defaults, base), None)
        team = Team(members, self.pick_default_responder(members), self.shell_specialists[0])
        self.check_shell_specialists(team)
        return team

    def read_root_entry(self, key: str, line: int, node: Any) -> None:
        collector = self.loader.collector
        if key == "member_defaults":
            if is_mapping(node):
                self.defaults = self.loader.member_spec(node, "member_defaults")
            elif not is_null(node):
                collector.wrong_type(node, line, "`member_defaults`", "a mapping")
        elif key == "members":
            if is_mapping(node):
                self.read_members(node)
            elif not is_null(node):
                collector.wrong_type(node, line, "`members`", "a mapping of member id → settings")
        elif key == "default_responder":
            value = try_node_value(node, collector)
            if isinstance(value, str):
                self.default_responder = (value, line)
            elif value is not None and not is_invalid(value):
                collector.wrong_type(node, line, "`default_responder`", "a member id")
        elif key == "shell_specialists":
            value = try_node_value(node, collector)
            if isinstance(value, str):
                value = [value]
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                self.shell_specialists = (tuple(value), line)
            elif value is not None and not is_invalid(value):
                collector.wrong_type(node, line, "`shell_specialists`", "a member id or a list of them")
        else:
            known = ["member_defaults", "default_responder", "shell_specialists", "members"]
            hint = did_you_mean(key, known) or f"; known keys: {', '.join(known)}"
            collector.warning(line, f"unknown key {key!r} ignored{hint}")

    def read_members(self, node: Any) -> None:
        collector = self.loader.collector
        for entry in mapping_entries(node, collector, "members"):
            who = f"member {entry.key!r}"
            if not _MEMBER_ID_RE.fullmatch(entry.key) or entry.key.endswith("."):
                collector.error(
                    entry.line,
                    f"{who}: an id may hold letters, digits, '_', '-' and inner '.'; member ignored",
                )
            elif entry.key in RESERVED_IDS:
                collector.error(
                    entry.line, f"{who}: {entry.key!r} is a reserved tellask target; member ignored"
                )
            elif is_null(entry.node):
                self.member_specs[entry.key] = (MemberSpec(), entry.line)  # `id:` alone = all defaults
            elif not is_mapping(entry.node):
                collector.wrong_type(entry.node, entry.line, who, "a mapping of settings", "member ignored")
            else:
                self.member_specs[entry.key] = (self.loader.member_spec(entry.node, who), entry.line)

    def pick_default_responder(self, members: Mapping[str, Member]) -> str:
        if self.default_responder is not None:
            wanted, line = self.default_responder
            if wanted in members:
                return wanted
            self.loader.collector.error(
                line, f"`default_responder` {wanted!r} is not a member; known: {', '.join(members)}"
            )
        return next((m.id for m in members.values() if not m.hidden), "fuxi")

    def check_shell_specialists(self, team: Team) -> None:
        collector = self.loader.collector
        specialists, line = self.shell_specialists
        for member_id in specialists:
            if member_id not in team.members:
                collector.error(line, f"`shell_specialists`: {member_id!r} is not a member")
        for member in team.members.values():
            if member.hidden:  # shadow members are exempt
                continue
            shell_tools = _shell_tools_of(member, self.loader.known_toolsets, self.loader.toolsets)
            where = member.key_lines.get("toolsets", member.key_lines.get("tools", member.line))
            if shell_tools and member.id not in specialists:
                collector.warning(
                    where,
                    f"member {member.id!r} is not in `shell_specialists`, so its shell tools "
                    f"({', '.join(sorted(shell_tools))}) will be removed",
                )


def _shell_tools_of(member: Member, known_toolsets: Sequence[str], toolsets: OfferedToolsets) -> set[str]:
    names = set(member.tools) & SHELL_TOOL_NAMES
    for toolset in expand_toolsets(member.toolsets, known_toolsets):
        names.update(t.name for t in toolsets.get(toolset) or [] if t.name in SHELL_TOOL_NAMES)
    return names
