"""Put every workflow into the daemon: their role members, their toolsets and their routes.

``dominds serve`` gives its engine every workflow's extensions when it creates it (so recovery and the
first drives already know the members) and passes the route adders to the server. The workflows' CLI
commands do the same for their own engines.

The routes are mounted lazily: a workflow's web module (and the orchestrators, prompts and models it
imports, a fifth of the daemon's start-up) is imported on the first request under one of its path
prefixes, not before the port opens. ``LazyWorkflow`` registers one router resource per prefix; the
first request under any of them imports the module in a worker thread and builds a private
application holding the daemon's engine, settings and hub, on which the module's own ``add_routes``
mounts exactly what it always did (its state, its shutdown hooks); requests under the prefixes are
then resolved by that application's router, as aiohttp resolves a sub-application's. The daemon's
shutdown and cleanup reach it too.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Sequence

from aiohttp import web

from dominds.driver.extensions import Extensions
from dominds.server import keys
from dominds.server.deferred import DeferredResource
from dominds.workflows.debate.members import debate_extensions
from dominds.workflows.plan_solve.members import plan_solve_extensions
from dominds.workflows.tot.roles import tot_extensions

WORKFLOW_ROUTES: Sequence[tuple[str, Sequence[str]]] = (
    ("dominds.workflows.tot.web", ("/api/tot", "/tot")),
    ("dominds.workflows.plan_solve.web", ("/api/plan-solve", "/plan-solve")),
    ("dominds.workflows.debate.web", ("/api/multi-agent", "/debate")),
)
"""Each workflow's web module (it has ``add_routes(app)``) and the path prefixes all its routes live under."""


def workflow_extensions() -> Extensions:
    """Every workflow's members and toolsets."""
    return debate_extensions().plus(plan_solve_extensions()).plus(tot_extensions())


def route_adders() -> list[Callable[[web.Application], None]]:
    """One adder per workflow; each mounts its workflow lazily (see the module docstring)."""
    return [LazyWorkflow(module, prefixes).add_to for module, prefixes in WORKFLOW_ROUTES]


class LazyWorkflow:
    """A workflow's routes, mounted on first use: ``add_to(app)`` registers the prefixes."""

    def __init__(self, module: str, prefixes: Sequence[str]) -> None:
        self.module = module
        self.prefixes = tuple(prefixes)
        self.inner: web.Application | None = None
        """The private application the web module's ``add_routes`` mounted on, once loaded."""
        self._loading: asyncio.Lock | None = None

    def add_to(self, app: web.Application) -> None:
        for prefix in self.prefixes:
            app.router.register_resource(DeferredResource(prefix, lambda: self.load(app), lambda: self.inner))

        async def shutdown(app: web.Application) -> None:
            if self.inner is not None:
                await self.inner.shutdown()

        async def cleanup(app: web.Application) -> None:
            if self.inner is not None:
                await self.inner.cleanup()

        app.on_shutdown.append(shutdown)
        app.on_cleanup.append(cleanup)

    async def load(self, outer: web.Application) -> web.Application:
        if self.inner is not None:
            return self.inner
        self._loading = self._loading or asyncio.Lock()
        async with self._loading:
            if self.inner is None:
                module = await asyncio.to_thread(importlib.import_module, self.module)
                inner = web.Application()
                inner[keys.ENGINE] = outer[keys.ENGINE]
                inner[keys.SETTINGS] = outer[keys.SETTINGS]
                inner[keys.HUB] = outer[keys.HUB]
                module.add_routes(inner)
                inner.freeze()  # as aiohttp's runner does: signals frozen before startup
                await inner.startup()
                self.inner = inner
        assert self.inner is not None
        return self.inner
