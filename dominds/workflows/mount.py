"""Put every workflow into the daemon: their role members and their routes.

``dominds serve`` registers the members before the engine starts (so recovery and the first drives
already know them) and passes the route adders to the server. The workflows' CLI commands register
their own members when they run.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from dominds.workflows.debate.members import register_debate_members
from dominds.workflows.plan_solve.members import register_members as register_plan_solve_members
from dominds.workflows.tot.roles import register_role_members as register_tot_members


def register_all_members() -> None:
    register_debate_members()
    register_plan_solve_members()
    register_tot_members()


def route_adders() -> list[Callable[[web.Application], None]]:
    from dominds.workflows.debate.web import add_routes as debate_routes
    from dominds.workflows.plan_solve.web import add_routes as plan_solve_routes
    from dominds.workflows.tot.web import add_routes as tot_routes

    return [tot_routes, plan_solve_routes, debate_routes]
