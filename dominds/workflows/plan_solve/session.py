"""The service, its websocket connections and their sessions.

A connection owns an outbox drained by one writer task, so events from the pipeline, the solvers and the
protocol handlers keep the order in which they were produced. A session belongs to the connection that
created it (another connection cannot steer it) and runs at most one pipeline at a time, in the
background, so the socket keeps reading control events while it runs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from aiohttp import web

from dominds.background import BackgroundTasks
from dominds.driver.engine import Engine
from dominds.workflows.plan_solve.aggregation import Aggregator
from dominds.workflows.plan_solve.events import make_event
from dominds.workflows.plan_solve.pipeline import PlanSolveRun, StepTimeout
from dominds.workflows.plan_solve.presentation import slides_aggregator
from dominds.workflows.plan_solve.settings import BUILTIN_TEMPLATES, DEFAULT_CSV, PlanSolveSettings

log = logging.getLogger("dominds.plan_solve")


class PlanSolveService:
    """Shared by every connection of one mount: the engine, the settings and the live sessions."""

    def __init__(self, engine: Engine, settings: PlanSolveSettings) -> None:
        self.engine = engine
        self.settings = settings
        self.sessions: dict[str, Session] = {}
        self.connections: set[Connection] = set()
        self.cleanups = BackgroundTasks("plan-solve")
        """Connection cleanups in flight: awaited when the server shuts down, a failure logged."""
        self.started_at = time.monotonic()
        self.stopping = False
        """The server is shutting down: the runs it stops end ``interrupted``, not ``cancelled``."""

    def live_run_ids(self) -> set[str]:
        """Root dialog ids of the runs this service is driving now, until their end record is written (a
        session stays ``running`` until its pipeline returned); a record of any other run that says
        ``running`` was left so by a process that stopped: it reads ``interrupted``."""
        return {
            session.pipeline.conductor.root_id
            for session in self.sessions.values()
            if session.state == "running" and session.pipeline is not None and session.pipeline.conductor is not None
        }

    @property
    def workspace_root(self) -> Path:
        return self.engine.rtws.root

    def active_sessions(self) -> int:
        return sum(1 for session in self.sessions.values() if session.state != "closed")

    def default_csv(self) -> Path | None:
        """The configured data file; without one, the workspace's sample data when it exists."""
        if self.settings.csv_path is not None:
            return self.settings.resolve(self.workspace_root, self.settings.csv_path)
        sample = self.workspace_root / DEFAULT_CSV
        return sample if sample.is_file() else None

    def ppt_root(self) -> Path:
        """Where the runs' output folders go: ``<workdir>/ppt``."""
        return self.settings.resolve(self.workspace_root, self.settings.workdir) / "ppt"

    def template(self) -> str:
        """The deck template: a built-in name, or the template file resolved against the workspace."""
        chosen = self.settings.template
        return chosen if chosen in BUILTIN_TEMPLATES else str(self.settings.resolve(self.workspace_root, Path(chosen)))

    def aggregator(self) -> Aggregator:
        return slides_aggregator(self.workspace_root, self.template())


class Connection:
    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.id = uuid.uuid4().hex
        self.ws = ws
        self.sessions: dict[str, Session] = {}
        self._outbox: asyncio.Queue[str | None] = asyncio.Queue()
        self.closed = False

    def send(self, envelope: dict[str, Any]) -> None:
        if not self.closed:
            self._outbox.put_nowait(json.dumps(envelope, ensure_ascii=False))

    async def write_forever(self) -> None:
        while (text := await self._outbox.get()) is not None:
            if self.ws.closed:
                continue  # keep draining so that close() is seen
            try:
                await self.ws.send_str(text)
            except (ConnectionError, RuntimeError):  # the peer went away mid-send
                continue

    def close_outbox(self) -> None:
        self.closed = True
        self._outbox.put_nowait(None)


class Session:
    def __init__(self, service: PlanSolveService, connection: Connection) -> None:
        self.id = str(uuid.uuid4())
        self.service = service
        self.connection = connection
        self.state: Literal["idle", "running", "closed"] = "idle"
        self.pipeline: PlanSolveRun | None = None
        self._run_task: asyncio.Task[None] | None = None

    def emit(
        self,
        event: str,
        content: Any = None,
        metadata: dict[str, Any] | None = None,
        step_id: str | None = None,
    ) -> None:
        self.connection.send(
            make_event(event, session_id=self.id, content=content, metadata=metadata, step_id=step_id)
        )

    def start(self, question: str, csv_path: Path | None, confirm_plan: bool | None = None) -> None:
        service = self.service
        self.pipeline = PlanSolveRun(
            service.engine,
            service.settings,
            self.emit,
            service.aggregator(),
            csv_path=csv_path,
            ppt_root=service.ppt_root(),
            confirm_plan=confirm_plan,
            stopping=lambda: service.stopping,
        )
        self.state = "running"
        self._run_task = asyncio.create_task(self._run(self.pipeline, question), name=f"plan-solve-{self.id}")

    async def _run(self, pipeline: PlanSolveRun, question: str) -> None:
        try:
            final_text = await pipeline.run(question)
            root_id = pipeline.conductor.root_id if pipeline.conductor else None
            self.emit("agent.final_answer", final_text, {"dialog_id": root_id} if root_id else None)
        except StepTimeout as exc:
            self.emit("agent.timeout", str(exc))
        except asyncio.CancelledError:
            raise  # user.cancel or close: the canceller reports it
        except Exception as exc:
            log.info("plan & solve run of session %s failed", self.id, exc_info=True)
            self.emit("agent.error", f"Execution error: {exc}")
        finally:
            if self.state == "running":
                self.state = "idle"

    async def cancel(self) -> bool:
        """Stop the running pipeline (its subdialogs are declared dead); False when nothing ran."""
        task = self._run_task
        if task is None or task.done():
            return False
        task.cancel()
        await asyncio.wait({task})
        if self.state == "running":
            self.state = "idle"
        return True

    async def close(self) -> None:
        if self.state == "closed":
            return
        await self.cancel()
        self.state = "closed"
        self.emit("agent.session_end", "Session closed")


async def close_connection(service: PlanSolveService, connection: Connection) -> None:
    """The socket is gone (or the server stops): close its sessions, then stop its writer."""
    for session in list(connection.sessions.values()):
        try:
            await session.close()
        except Exception:  # one broken session must not keep the others running
            log.exception("closing plan & solve session %s failed", session.id)
        service.sessions.pop(session.id, None)
    connection.close_outbox()
