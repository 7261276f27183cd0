"""Who may ask what, and how a failure is answered: the middleware every request of the daemon passes.

- Without a token the daemon answers only loopback host names (DNS-rebinding guard).
- A page opened with ``?auth=<token>`` is redirected to the same address without it, with the session
  cookie when the token is right (``_enter_with_link``).
- ``/api/*``: a foreign Origin is refused (403), a missing or wrong token too (401, except
  ``PUBLIC_API_PATHS``); a handler's failure becomes ``{"error": "<one sentence>"}`` with its status
  (``_answer``), and nothing is acknowledged before the writes it reports are durable.

Light on purpose (no engine, no records): the front application (server/front.py) uses it from the
first moment; the errors it maps live in light modules of their own.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from dominds.driver.errors import EngineBadRequest, EngineError, QueueFull
from dominds.server import keys
from dominds.server.auth import (
    host_header_is_loopback,
    origin_allowed,
    request_authorized,
    session_cookie_name,
    set_session_cookie,
    tokens_match,
)
from dominds.store.commit import durable
from dominds.store.errors import DialogNotFoundError, StoreError
from dominds.taskdoc import TaskdocError

log = logging.getLogger("dominds.server")

MAX_BODY_BYTES = 1024 * 1024
PUBLIC_API_PATHS = frozenset({"/api/health"})
"""Answered without a token: lets the CLI and scripts see whether a daemon is listening."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    """A request the API refuses, with the status to answer and one sentence saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def json_error(status: int, message: str, **headers: str) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers or None)


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    settings = request.app[keys.SETTINGS]
    if settings.token is None and not host_header_is_loopback(request):
        return json_error(403, "without a token the daemon only answers loopback host names (DNS-rebinding guard)")
    token = settings.token
    if not request.path.startswith("/api/"):
        if token is not None and request.method == "GET" and "auth" in request.query:
            return _enter_with_link(request, token)
        return await handler(request)
    if not origin_allowed(request, settings.allowed_origins):
        return json_error(403, "forbidden origin")
    if token is not None and request.path not in PUBLIC_API_PATHS and not request_authorized(request, token):
        return json_error(401, "unauthorized", **{"WWW-Authenticate": "Bearer"})
    response = await _answer(request, handler)
    await durable()  # nothing is acknowledged before the writes it reports are durable (store/commit.py)
    return response


async def _answer(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as exc:
        return json_error(exc.status, str(exc))
    except DialogNotFoundError as exc:
        return json_error(404, str(exc))
    except (EngineBadRequest, TaskdocError) as exc:
        return json_error(400, str(exc))
    except QueueFull as exc:
        return json_error(429, str(exc), **{"Retry-After": "1"})
    except EngineError as exc:
        return json_error(409, str(exc))
    except StoreError as exc:
        return json_error(500, f"storage error: {exc}")
    except web.HTTPException as exc:  # aiohttp's own (404 route, 405 method, 413 body) as JSON too
        if exc.status < 400:
            raise
        return json_error(exc.status, exc.reason)
    except Exception as exc:  # a bug: answer it like any other failure, keep the daemon serving
        log.exception("API %s %s failed", request.method, request.path)
        return json_error(500, f"internal error: {type(exc).__name__}: {exc}")


def _enter_with_link(request: web.Request, token: str) -> web.StreamResponse:
    """A page opened with ``?auth=``: the same address without it, plus the session cookie if it is right.

    The token leaves the address bar (and the history entry) at once; a wrong one is simply dropped and
    the page asks for the token in place (``?auth=`` stays in the redirect as ``authFailed=1``).
    """
    query = request.rel_url.query.copy()
    given = query.popall("auth", [])
    accepted = any([tokens_match(value, token) for value in given])
    if not accepted:
        query["authFailed"] = "1"
    response = web.Response(
        status=303, headers={"Location": str(request.rel_url.with_query(query)), "Cache-Control": "no-store"}
    )
    if accepted:
        set_session_cookie(response, request, token)
    return response


async def session(request: web.Request) -> web.Response:
    """``POST /api/session`` (bearer token) sets the panel's session cookie; ``DELETE`` clears it."""
    response = web.json_response({"ok": True})
    token = request.app[keys.SETTINGS].token
    if request.method == "DELETE":
        response.del_cookie(session_cookie_name(request), path="/")
    elif token is not None:
        set_session_cookie(response, request, token)
    return response
