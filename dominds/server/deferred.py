"""A router resource whose routes live in another aiohttp application, made ready later.

Two places serve routes that do not exist yet when the router is frozen:

- ``dominds serve`` answers from the first moment with a light front application (server/front.py),
  while the engine, the records and the API's modules load; every other path is resolved by the API
  application once the engine has started (prefix ``""``: every path);
- a workflow's routes are resolved by a private application its web module mounts on first use
  (workflows/mount.py: prefixes such as ``/tot``).

``DeferredResource`` is the router's entry for such paths: resolving a request awaits the application
(``load``), then resolves the request in that application's router, as aiohttp resolves a
sub-application's (the match info names that application, so its handlers see its state through
``request.app``, and the front's middlewares still wrap them). A path that application does not
route falls back to the outer router's answer (404, or 405 with the methods it allows).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.web_urldispatcher import AbstractResource, AbstractRoute, UrlMappingMatchInfo
from yarl import URL

if TYPE_CHECKING:
    from aiohttp.web_urldispatcher import _InfoDict


class DeferredResource(AbstractResource):
    """Every path at or under ``prefix`` (``""``: every path), resolved by the application ``load`` returns.

    ``loaded`` returns the application once it is there (``None`` before), for route listings."""

    def __init__(
        self,
        prefix: str,
        load: Callable[[], Awaitable[web.Application]],
        loaded: Callable[[], web.Application | None],
    ) -> None:
        super().__init__()
        self._prefix = prefix.rstrip("/")
        self._load = load
        self._loaded = loaded

    @property
    def canonical(self) -> str:
        return self._prefix or "/"

    def url_for(self, **kwargs: str) -> URL:
        raise RuntimeError(f"url_for() is not supported by the deferred routes under {self.canonical}")

    def add_prefix(self, prefix: str) -> None:
        raise RuntimeError("deferred routes are mounted on the daemon's application only")

    def get_info(self) -> _InfoDict:
        return {"prefix": self._prefix}

    def raw_match(self, path: str) -> bool:
        return False  # the router must never add another route to this resource (``add_resource`` asks)

    def covers(self, path: str) -> bool:
        """Whether ``path`` is at or under the prefix."""
        return not self._prefix or path == self._prefix or path.startswith(self._prefix + "/")

    async def resolve(self, request: web.Request) -> tuple[UrlMappingMatchInfo | None, set[str]]:
        if not self.covers(request.rel_url.path):
            return None, set()
        inner = await self._load()
        match_info = await inner.router.resolve(request)
        error = match_info.http_exception
        if isinstance(error, web.HTTPMethodNotAllowed):
            return None, set(error.allowed_methods)  # the outer router answers 405 with these
        if error is not None:
            return None, set()  # not a route of the inner application: the outer router answers
        assert isinstance(match_info, UrlMappingMatchInfo)
        match_info.add_app(inner)
        return match_info, set()

    def __len__(self) -> int:
        return len(self._routes())

    def __iter__(self) -> Iterator[AbstractRoute]:
        return iter(self._routes())

    def _routes(self) -> list[AbstractRoute]:
        inner = self._loaded()
        if inner is None:
            return []
        return [r for r in inner.router.routes() if r.resource is not None and self.covers(r.resource.canonical)]
