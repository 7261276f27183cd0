"""The demo's prompts: the panel's suggestion chips and each workflow page's example question, read from
the scripted database the default responder answers from (``suggestions:``, ``workflow_examples:``).

Nothing is offered when the default responder answers from any other provider: a click must never send
a demo prompt to a paid model (issue 36, item 16).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from dominds.driver.engine import Engine
from dominds.server import keys


def _engine(request: web.Request) -> Engine:
    return request.app[keys.ENGINE]


async def suggestions(request: web.Request) -> web.Response:
    agent_id, found = scripted_suggestions(_engine(request))
    return web.json_response({"suggestions": found, "agentId": agent_id})


async def workflow_examples(request: web.Request) -> web.Response:
    """``{examples: {workflow: [question]}}``: the questions the offline demo's script answers on each
    workflow page (``workflow_examples:`` of the default responder's scripted database; none on a real
    provider). The pages offer them as buttons and say that the demo answers only them."""
    database = _default_scripted_database(_engine(request))
    raw = _yaml_mapping(database[1]).get("workflow_examples") if database else None
    examples = {
        str(name): [q.strip() for q in questions if isinstance(q, str) and q.strip()]
        for name, questions in (raw.items() if isinstance(raw, dict) else [])
        if isinstance(questions, list)
    }
    return web.json_response({"examples": {k: v for k, v in examples.items() if v}})


def _default_scripted_database(engine: Engine) -> tuple[str, Path] | None:
    """The default responder and the scripted database it answers from; None on any other provider."""
    import os

    from dominds.llm.catalog import LlmResolutionError, resolve_member_llm

    config = engine.config.get()
    member = config.team.members.get(config.team.default_responder)
    if member is None or member.hidden:
        return None
    try:
        resolved = resolve_member_llm(member, config.catalog, os.environ)
    except LlmResolutionError:
        return None
    if resolved.provider.api_type != "scripted":
        return None
    return member.id, engine.rtws.root / (resolved.provider.base_url or ".minds/scripted") / f"{resolved.model_key}.yaml"


def _yaml_mapping(path: Path) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}  # a broken database is reported by the scripted provider when it is used
    return raw if isinstance(raw, dict) else {}


def scripted_suggestions(engine: Engine) -> tuple[str | None, list[str]]:
    """The agent a suggestion goes to (the default responder) and the ``suggestions:`` of the scripted
    database it answers from, so the demo's prompts match its script.

    None when the default responder answers from any other provider: before, the chips of a scripted
    database in ``.minds/`` showed whatever the team used, and one click sent a demo prompt to a paid
    model. The panel shows them only on a main dialog of this agent (never in a subdialog)."""
    database = _default_scripted_database(engine)
    if database is None:
        return None, []
    found = list(dict.fromkeys(_suggestions_in(database[1])))
    return (database[0], found) if found else (None, [])


def _suggestions_in(path: Path) -> list[str]:
    items = _yaml_mapping(path).get("suggestions")
    return [item.strip() for item in items or [] if isinstance(item, str) and item.strip()]
