"""Team, catalog and persona files, reloaded whenever they change on disk.

The driver asks for the configuration at every generation so hand edits take effect at once; a
``stat`` per file keeps that cheap when nothing changed. A file whose new content has an error is not
applied: the last version that loaded cleanly stays in use (``last_good.py``) and a problem says so.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from dominds.driver import price_sheet
from dominds.driver.extensions import Extensions, with_builtins
from dominds.driver.last_good import LastGood, has_errors
from dominds.llm.base import ChatMessage
from dominds.llm.catalog import Catalog
from dominds.llm.catalog_yaml import load_catalog
from dominds.mcp.config import McpConfig, load_mcp_config
from dominds.mcp.manager import McpManager
from dominds.problems import Problem
from dominds.rtws import Rtws
from dominds.team import Team, load_team
from dominds.tools.base import Toolsets


def _signature(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_size)


@dataclass
class Config:
    team: Team
    catalog: Catalog
    problems: list[Problem]
    generation: int
    """Increases at each reload (lets listeners announce ``team_config_updated``)."""
    mcp: McpManager | None = None
    """The MCP servers of ``.minds/mcp.yaml``, each a toolset (see docs/mcp.md)."""
    toolsets: Toolsets = field(default_factory=Toolsets)
    """The engine's own toolsets: the built-in ones and its workflows'."""
    team_unusable: bool = False
    """team.yaml has errors and no earlier good version exists: the team in use is a best-effort
    reading, so nothing may be routed to a member the user did not name."""


T = TypeVar("T")


MAX_CACHED_TASKDOCS = 128
"""Rendered Taskdocs kept per engine (LRU); each is re-rendered when its package changes on disk."""
MAX_KEPT_MESSAGES = 1024
"""Memory and Taskdoc message objects kept per engine (all dropped when full: they are made again)."""


@dataclass
class ConfigCache:
    rtws: Rtws
    extensions: Extensions = field(default_factory=with_builtins)
    """Toolsets and workflow members of this engine (see driver/extensions.py)."""
    _signature: tuple[tuple[int, int], ...] | None = None
    _config: Config | None = None
    _texts: dict[Path, tuple[tuple[int, int], str | None]] = field(default_factory=dict)
    mcp: McpManager = field(init=False)
    _mcp_signature: tuple[int, int] | None = None
    _taskdocs: OrderedDict[str, tuple[str, str]] = field(default_factory=OrderedDict)
    """Rendered Taskdocs by path (fingerprint, text); per engine and bounded, never process-wide."""
    last_good: LastGood = field(init=False)
    _mcp_problems: list[Problem] = field(default_factory=list)
    _messages: dict[tuple[str, str], ChatMessage] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.mcp = McpManager(self.rtws, self.extensions.toolsets)
        self.last_good = LastGood(self.rtws)

    def _load(self, live: Path, load: Callable[[Rtws], tuple[T, list[Problem]]]) -> tuple[T, list[Problem], bool]:
        """``load`` the live file; with errors, load its last good copy instead. Third: no copy to use."""
        value, problems = load(self.rtws)
        if not has_errors(problems):
            self.last_good.keep(live)
            return value, problems, False
        saved_at = self.last_good.saved_at(live)
        if saved_at is not None:
            value = load(self.last_good.shadow)[0]
        return value, [self.last_good.fallback_problem(live, saved_at), *problems], saved_at is None

    def _reload_mcp(self) -> None:
        """Servers whose settings changed are stopped; toolsets follow the file (or its last good copy)."""

        def read(rtws: Rtws) -> tuple[McpConfig, list[Problem]]:
            config = load_mcp_config(rtws, frozenset(self.extensions.toolsets.names()))
            return config, config.problems

        config, problems, _ = self._load(self.rtws.mcp_yaml, read)
        self.mcp.reload(config)
        self._mcp_problems = self.mcp.config_problems = problems

    def rendered_taskdoc(self, path: str, fingerprint: str) -> str | None:
        cached = self._taskdocs.get(path)
        if cached is None or cached[0] != fingerprint:
            return None
        self._taskdocs.move_to_end(path)
        return cached[1]

    def keep_rendered_taskdoc(self, path: str, fingerprint: str, text: str) -> None:
        self._taskdocs[path] = (fingerprint, text)
        self._taskdocs.move_to_end(path)
        while len(self._taskdocs) > MAX_CACHED_TASKDOCS:
            self._taskdocs.popitem(last=False)

    def message(self, role: Literal["user", "assistant"], content: str) -> ChatMessage:
        """One message object per text of a memory or Taskdoc: a dialog's requests then start with the
        same objects from one generation to the next, so the conversion of its earlier messages is reused
        (``llm/message_reuse.py``: it was converted whole at every generation)."""
        key = (role, content)
        found = self._messages.get(key)
        if found is None:
            if len(self._messages) >= MAX_KEPT_MESSAGES:
                self._messages.clear()
            found = self._messages[key] = ChatMessage(role=role, content=content)
        return found

    def get(self) -> Config:
        mcp_signature = _signature(self.rtws.mcp_yaml)
        signature = (_signature(self.rtws.team_yaml), _signature(self.rtws.llm_yaml), mcp_signature)
        if self._config is None or signature != self._signature:
            if mcp_signature != self._mcp_signature or self._config is None:
                self._reload_mcp()
                self._mcp_signature = mcp_signature
            loaded_from = price_sheet.sources(self.rtws)
            catalog, catalog_problems, _ = self._load(self.rtws.llm_yaml, load_catalog)
            price_sheet.keep(self.rtws, catalog, loaded_from)  # for the next start's first listing
            team, team_problems, team_unusable = self._load(
                self.rtws.team_yaml,
                lambda rtws: load_team(
                    rtws,
                    self.extensions.toolsets,
                    more_toolset_names=self.mcp.toolset_names(),
                    catalog=catalog,
                    workflow_members=self.extensions.members,
                ),
            )
            generation = self._config.generation + 1 if self._config else 1
            problems = [*catalog_problems, *team_problems, *self._mcp_problems]
            self._config = Config(
                team, catalog, problems, generation, self.mcp, self.extensions.toolsets, team_unusable
            )
            self._signature = signature
        return self._config

    def invalidate(self) -> None:
        """Reload on the next ``get()``."""
        self._signature = None

    def extend(self, extensions: Extensions) -> None:
        """Add a workflow's toolsets and members to this engine (idempotent); the team reloads."""
        if self.extensions.covers(extensions):
            return
        self.extensions = self.extensions.plus(extensions)
        self.mcp.builtin_toolsets = self.extensions.toolsets
        self.invalidate()

    def text(self, path: Path) -> str | None:
        """A small text file (persona, env, memory), cached by mtime; None when missing."""
        signature = _signature(path)
        cached = self._texts.get(path)
        if cached is not None and cached[0] == signature:
            return cached[1]
        try:
            text: str | None = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = None
        self._texts[path] = (signature, text)
        return text

    def persona(self, member_id: str, lang: str = "en") -> str | None:
        base = self.rtws.minds_dir / "team" / member_id
        return self.text(base / f"persona.{lang}.md") or self.text(base / "persona.md") or self.extensions.members.persona(member_id)
