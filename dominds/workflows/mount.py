"""Put every workflow into the daemon: their role members, their toolsets and their routes.

``dominds serve`` gives its engine every workflow's extensions when it creates it (so recovery and the
first drives already know the members) and passes the route adders to the server. The workflows' CLI
commands do the same for their own engines.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from dominds.driver.extensions import Extensions
from dominds.workflows.debate.members import debate_extensions
from dominds.workflows.plan_solve.members import plan_solve_extensions
from dominds.workflows.tot.roles import tot_extensions


def workflow_extensions() -> Extensions:
    """Every workflow's members and toolsets."""
    return debate_extensions().plus(plan_solve_extensions()).plus(tot_extensions())


def route_adders() -> list[Callable[[web.Application], None]]:
    from dominds.workflows.debate.web import add_routes as debate_routes
    from dominds.workflows.plan_solve.web import add_routes as plan_solve_routes
    from dominds.workflows.tot.web import add_routes as tot_routes

    return [tot_routes, plan_solve_routes, debate_routes]
