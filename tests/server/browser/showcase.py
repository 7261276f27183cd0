"""A workspace that looks like real use, for the layout tests and the README screenshots.

One dialog plans a release: a highlighted code block, a tool call with its result, a tellask to the
coder and its reply, then a question for the user. A second dialog starts a new course (clear_mind),
so course and call-site links have something to point at. Three Tree-of-Thoughts runs exist too, to
show that workflow runs are grouped instead of flooding the list.
"""

from __future__ import annotations

import asyncio
from typing import Any

from dominds.driver.engine import Engine

PLAN = (
    "Here is the plan for **1.2**:\n\n"
    "1. freeze the API\n2. write the changelog\n3. tag and ship\n\n"
    "```python\ndef release(version: str) -> None:\n    \"\"\"Tag and publish one version.\"\"\"\n"
    "    tag(version)  # e.g. 1.2.0\n    publish(version, channel=\"stable\")\n```\n"
)

SHOWCASE_RESPONSES: list[dict[str, Any]] = [
    {
        "agent": "lead",
        "message": "Plan the 1.2 release",
        "stream": [
            {"thinking": "Freeze, changelog, tag. Keep the date in a reminder."},
            {"saying": PLAN},
            {"func_call": {"name": "add_reminder", "arguments": {"content": "ship 1.2 once the changelog is done"}}},
        ],
    },
    {
        "agent": "lead",
        "role": "tool",
        "contains": "Reminder",
        "response": "Asking the coder for the changelog.\n!?@coder please write the changelog for 1.2\n!?List the API changes since 1.1.\n",
    },
    {
        "agent": "coder",
        "contains": "changelog for 1.2",
        "response": "Changelog for 1.2:\n\n- `dominds url` prints the panel URL\n- dialogs have titles, search and links\n- the panel works on phones",
    },
    {
        "agent": "lead",
        "contains": "@coder provided response",
        "response": "The changelog is ready.\n!?@human Ship on Friday or on Monday?\n!?Friday is sooner; Monday leaves a day for testing.\n",
    },
    {"agent": "lead", "message": "Friday", "response": "Shipping on **Friday**."},
    {
        "agent": "lead",
        "message": "Start over",
        "stream": [{"saying": "Clearing my mind."}, {"func_call": {"name": "clear_mind", "arguments": {}}}],
    },
    {"agent": "lead", "role": "tool", "contains": "new course", "response": "Cleared."},
    {"agent": "lead", "contains": "course", "response": "Fresh start in a new course."},
]


async def wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def populate(engine: Engine) -> dict[str, str]:
    """The dialogs of the showcase; returns their ids."""
    for question in ("Why is the sky blue?", "Is P equal to NP?", "How do bees navigate?"):
        engine.start_workflow_run("tot", "lead", "tasks/t.tsk", question)
    course = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(course, "Start over")
    await engine.wait_idle()
    plan = engine.create_dialog("lead", "tasks/t.tsk")
    engine.submit_user_message(plan, "Plan the 1.2 release")
    await wait_for(lambda: bool(plan.q4h))
    (sub,) = engine.store.subdialog_ids("run", plan.self_id)
    return {"plan": plan.self_id, "course": course.self_id, "question": plan.q4h[0].id, "sub": sub}
