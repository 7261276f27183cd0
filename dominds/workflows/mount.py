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
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.web_urldispatcher import AbstractResource, AbstractRoute, UrlMappingMatchInfo
from yarl import URL

from dominds.driver.extensions import Extensions
from dominds.server import keys
from dominds.workflows.debate.members import debate_extensions
from dominds.workflows.plan_solve.members import plan_solve_extensions
from dominds.workflows.tot.roles import tot_extensions

if TYPE_CHECKING:
    from aiohttp.web_urldispatcher import _InfoDict

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
            app.router.register_resource(_LazyPrefix(prefix, self, app))

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


class _LazyPrefix(AbstractResource):
    """Every path at or under ``prefix``: resolved by the workflow's application, loaded on first use."""

    def __init__(self, prefix: str, workflow: LazyWorkflow, outer: web.Application) -> None:
        super().__init__()
        self._prefix = prefix.rstrip("/")
        self._workflow = workflow
        self._outer = outer

    @property
    def canonical(self) -> str:
        return self._prefix

    def url_for(self, **kwargs: str) -> URL:
        raise RuntimeError(f"url_for() is not supported by the lazy routes under {self._prefix}")

    def add_prefix(self, prefix: str) -> None:
        raise RuntimeError("the workflows' routes are mounted on the daemon's application only")

    def get_info(self) -> _InfoDict:
        return {"prefix": self._prefix}

    def raw_match(self, path: str) -> bool:
        return path == self._prefix or path.startswith(self._prefix + "/")

    async def resolve(self, request: web.Request) -> tuple[UrlMappingMatchInfo | None, set[str]]:
        if not self.raw_match(request.rel_url.path):
            return None, set()
        inner = await self._workflow.load(self._outer)
        match_info = await inner.router.resolve(request)
        error = match_info.http_exception
        if isinstance(error, web.HTTPMethodNotAllowed):
            return None, set(error.allowed_methods)  # the daemon's router answers 405 with these
        if error is not None:
            return None, set()  # not a route of this workflow: the daemon's router answers
        assert isinstance(match_info, UrlMappingMatchInfo)
        match_info.add_app(inner)
        return match_info, set()

    def __len__(self) -> int:
        return len(self._routes())

    def __iter__(self) -> Iterator[AbstractRoute]:
        return iter(self._routes())

    def _routes(self) -> list[AbstractRoute]:
        inner = self._workflow.inner
        if inner is None:
            return []
        return [r for r in inner.router.routes() if r.resource is not None and self.raw_match(r.resource.canonical)]
