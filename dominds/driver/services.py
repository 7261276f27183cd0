"""What the driver's steps need from the engine: a small typed interface, defined below them.

The steps (generation, tellask and tool execution, supply, questions, recovery, run control, the
scheduler) take an ``EngineServices`` and never import ``driver/engine.py``; the ``Engine``, at the top
of ``driver/``, implements this protocol and composes the steps. So there is no import cycle inside
``driver/``, not even one hidden behind ``TYPE_CHECKING`` (see docs/architecture.md).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from dominds.dialog.model import Dialog, RootDialog, SubDialog
from dominds.driver.config import ConfigCache
from dominds.driver.secrets import SecretRedactor
from dominds.driver.waiters import ConductorWaiters
from dominds.llm.base import Generator
from dominds.llm.catalog import ProviderConfig
from dominds.pubchan import PubChan
from dominds.rtws import Rtws
from dominds.store.course_records import GenFinishRecord
from dominds.store.dialog_store import DialogStore
from dominds.store.index import DialogIndex
from dominds.store.records import DialogMeta, LatestState


class EngineServices(Protocol):
    """The engine as its steps see it (``driver.engine.Engine`` is the one implementation)."""

    rtws: Rtws
    store: DialogStore
    index: DialogIndex
    """What listings and the start-up scan need about every dialog (a cache of the files)."""
    config: ConfigCache
    pubchan: PubChan
    conductors: ConductorWaiters
    """Workflow code waiting for teammate answers."""
    secrets: SecretRedactor
    roots: dict[str, RootDialog]
    """rootId → loaded root of ``run/``."""
    fetched_at: dict[str, float]
    """rootId → when the loaded tree was last handed out (driver/loaded_trees.py)."""
    q4h_index: dict[str, tuple[str, str]]
    waiting_answers: dict[str, asyncio.Future[str | None]]
    """Elicitation questions → the MCP request waiting for the answer (questions.ask_and_wait)."""
    """questionId → (rootId, selfId) of every pending question in ``run/``."""
    resume_on_start: bool
    closed: bool
    max_concurrent_drives: int
    transcript_cache_size: int
    transcript_cache_chars: int
    storage_retry_interval: float

    # ---------------------------------------------------------------- dialogs

    def load_root(self, root_id: str) -> RootDialog: ...

    def try_load_sub(self, root: RootDialog, self_id: str) -> SubDialog | None: ...

    def get_dialog(self, root_id: str, self_id: str | None = None) -> Dialog: ...

    def try_get_dialog(self, root_id: str, self_id: str) -> Dialog | None: ...

    def find_loaded(self, self_id: str) -> Dialog | None: ...

    def tree_at_rest(self, root_id: str) -> bool: ...

    def unload_if_at_rest(self, root_id: str) -> bool: ...

    def create_subdialog(self, root: RootDialog, meta: DialogMeta, latest: LatestState) -> SubDialog: ...

    def add_root(self, meta: DialogMeta, latest: LatestState) -> RootDialog: ...

    def check_drivable_target(self, dialog: Dialog) -> None: ...

    # ---------------------------------------------------------------- driving

    def request_drive(self, dialog: Dialog) -> None: ...

    def want(self, dialog: Dialog) -> None: ...

    def after_unblock(self, dialog: Dialog) -> None: ...

    def request_stop(self, dialog: Dialog, reason: str) -> None: ...

    def diligence_push(self, dialog: Dialog) -> bool: ...

    async def declare_dead(self, dialog: Dialog, note: str = "") -> None: ...

    async def supersede(self, sub: Dialog, previous: Any) -> None: ...

    # ---------------------------------------------------------------- providers

    async def generator_for(self, api_type: str) -> Generator: ...

    def provider_config_dict(self, provider: ProviderConfig) -> dict[str, Any]: ...

    def report_provider_problem(self, dialog: Dialog, provider: str, model: str | None, message: str) -> None: ...

    def provider_worked(self, provider: str) -> None: ...

    def context_health(self, dialog: Dialog, finish: GenFinishRecord) -> dict[str, Any] | None: ...

    def usage_totals(self, root_id: str) -> dict[str, Any]: ...
