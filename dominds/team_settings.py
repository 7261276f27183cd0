"""Settings of one member in ``.minds/team.yaml`` (or ``member_defaults``): their types, the checks
beyond the type (known toolsets, protected directories, provider parameters) and how layers of settings
merge. Every mistake becomes a ``Problem`` at its line; the setting is then left at its default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dominds.llm.catalog import Catalog, model_params_mistakes, provider_params_mistakes
from dominds.problems import ProblemCollector, did_you_mean, is_invalid, mapping_entries, try_node_value

# The type each setting must have; lists are stored as tuples on ``Member``.
_MEMBER_TYPES = {
    "name": "string", "provider": "string", "model": "string", "gofor": "gofor", "toolsets": "list",
    "tools": "list", "model_params": "mapping", "fbr_effort": "effort", "fbr_model_params": "mapping",
    "diligence_push_max": "integer", "read_dirs": "list", "write_dirs": "list", "no_read_dirs": "list",
    "no_write_dirs": "list", "icon": "string", "streaming": "boolean", "hidden": "boolean",
    "continue_on_max_tokens": "continuations", "tellask": "tellask_form",
}  # fmt: skip
_TYPE_NAMES = {
    "string": "a string", "boolean": "true or false", "integer": "an integer", "mapping": "a mapping",
    "effort": "an integer from 0 to 100", "continuations": "an integer from 0 to 10", "list": "a list of strings", "gofor": "a list of strings or a mapping",
    "tellask_form": "one of text, tools, both",
}  # fmt: skip


def _has_type(kind: str, v: Any) -> bool:
    is_int = isinstance(v, int) and not isinstance(v, bool)
    is_str_list = isinstance(v, list) and all(isinstance(x, str) for x in v)
    if kind == "gofor":
        is_str_map = isinstance(v, dict) and all(
            isinstance(k, str) and isinstance(x, str) for k, x in v.items()
        )
        return isinstance(v, str) or is_str_list or is_str_map
    return {
        "string": isinstance(v, str),
        "boolean": isinstance(v, bool),
        "integer": is_int,
        "effort": is_int and 0 <= v <= 100,
        "continuations": is_int and 0 <= v <= 10,
        "list": is_str_list,
        "mapping": isinstance(v, dict),
        "tellask_form": v in ("text", "tools", "both"),
    }[kind]


_KEY_ALIASES = {"fbr-effort": "fbr_effort", "diligence-push-max": "diligence_push_max"}


class NamedTool(Protocol):
    @property
    def name(self) -> str: ...


class OfferedToolsets(Protocol):
    """What the team needs of an engine's toolsets (``dominds.tools.base.Toolsets`` is one): their names,
    to check ``toolsets:``, and their tools' names, to find shell tools. Typed here so the team, which
    the tools read, does not import the tools."""

    def names(self) -> list[str]: ...

    def get(self, name: str) -> Sequence[NamedTool] | None: ...


class NoToolsets:
    """No toolsets known: toolset names are not checked."""

    def names(self) -> list[str]:
        return []

    def get(self, name: str) -> Sequence[NamedTool] | None:
        return None


@dataclass
class MemberSpec:
    """Settings written for one member (or ``member_defaults``), already type-checked."""

    values: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)


@dataclass
class MemberSettingsReader:
    collector: ProblemCollector
    catalog: Catalog
    known_toolsets: list[str]
    toolsets: OfferedToolsets
    reported: set[tuple[int, str]] = field(default_factory=set)
    """(line, message) of parameter problems already reported (members inheriting member_defaults)."""

    def member_spec(self, node: Any, who: str) -> MemberSpec:
        spec = MemberSpec()
        for entry in mapping_entries(node, self.collector, who):
            key = _KEY_ALIASES.get(entry.key, entry.key)
            if key not in _MEMBER_TYPES:
                hint = did_you_mean(entry.key, [*_MEMBER_TYPES, *_KEY_ALIASES])
                self.collector.warning(entry.line, f"{who}: unknown key {entry.key!r} ignored{hint}")
                continue
            if key in spec.values:
                self.collector.warning(
                    entry.line, f"{who}: {entry.key!r} repeats {key!r}; the first one is used"
                )
                continue
            raw = try_node_value(entry.node, self.collector)
            if is_invalid(raw) or raw is None:  # `key:` with no value = not set
                continue
            kind = _MEMBER_TYPES[key]
            if not _has_type(kind, raw):
                self.collector.wrong_type(entry.node, entry.line, f"{who}: `{entry.key}`", _TYPE_NAMES[kind])
                continue
            value = (raw,) if kind == "gofor" and isinstance(raw, str) else raw
            value = tuple(value) if isinstance(value, list) else value
            spec.values[key], spec.lines[key] = self.refine(key, value, entry.line, who), entry.line
        return spec

    def refine(self, key: str, value: Any, line: int, who: str) -> Any:
        """Checks beyond the type; returns the value with bad entries dropped."""
        if key == "toolsets" and self.known_toolsets:
            for entry in value:
                name = entry[1:] if entry.startswith("!") else entry
                if entry != "*" and name not in self.known_toolsets:
                    self.collector.error(
                        line,
                        f"{who}: unknown toolset {name!r}; known: {', '.join(self.known_toolsets)} "
                        "('*' = all, '!name' excludes)",
                    )
        if key in ("read_dirs", "write_dirs"):
            kept = tuple(p for p in value if not _names_protected_dir(p))
            for pattern in sorted(set(value) - set(kept)):
                self.collector.warning(
                    line,
                    f"{who}: `{key}` entry {pattern!r} ignored: .minds/ and *.tsk/ are never opened to file tools",
                )
            return kept
        if key in ("model_params", "fbr_model_params"):
            for mistake in model_params_mistakes(value):
                self.collector.warning(line, f"{who}: `{key}`: {mistake}")
        return value

    def check_llm_choice(self, merged: dict[str, Any], spec: MemberSpec, who: str) -> None:
        """Report a provider/model that the catalog lacks, at the line of ``spec`` that wrote it."""
        problem = self.catalog.choice_problem(merged.get("provider"), merged.get("model"))
        if problem is not None and problem[0] in spec.lines:
            self.collector.error(spec.lines[problem[0]], f"{who}: {problem[1]}")

    def check_params(self, merged: MemberSpec, defaults: MemberSpec, who: str) -> None:
        """``model_params`` the member's provider (when team.yaml names one) or its model would refuse
        (an error) or ignore (a warning); one report per line, however many members inherit it."""
        provider = self.catalog.provider(str(merged.values.get("provider") or ""))
        if provider is None:
            return  # chosen at run time: `dominds check` checks it against the provider it resolves to
        model_key = merged.values.get("model") or next(iter(provider.models), None)
        for key in ("model_params", "fbr_model_params"):
            params, line = merged.values.get(key), merged.lines.get(key)
            if not isinstance(params, Mapping) or line is None:
                continue
            refused, ignored = provider_params_mistakes(params, provider, model_key)
            owner = "member_defaults" if defaults.lines.get(key) == line else who
            for message, report in [(m, self.collector.error) for m in refused] + [
                (m, self.collector.warning) for m in ignored
            ]:
                text = f"`{key}` for provider {provider.key!r} ({provider.api_type}): {message}"
                if (line, text) not in self.reported:
                    self.reported.add((line, text))
                    report(line, f"{owner}: {text}")


def _names_protected_dir(pattern: str) -> bool:
    segments = [s for s in pattern.strip().removeprefix("./").split("/") if s]
    return bool(segments) and (segments[0] == ".minds" or any(s.endswith(".tsk") for s in segments))


def merge_specs(*specs: MemberSpec) -> MemberSpec:
    """Later specs win per setting; provider and model travel together (see docs/configuration.md)."""
    merged = MemberSpec()
    for spec in specs:
        if "provider" in spec.values and "model" not in spec.values:
            if merged.values.get("provider") not in (None, spec.values["provider"]):
                merged.values.pop("model", None)  # a model of another provider would not exist here
                merged.lines.pop("model", None)
        merged.values.update(spec.values)
        merged.lines.update(spec.lines)
    return merged
