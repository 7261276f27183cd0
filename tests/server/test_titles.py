"""Dialog titles and how lists tell dialogs apart (issue 18, item 2).

The bug: every root row read "@lead tasks/demo.tsk $0 · N tok": no title, nothing to tell dialogs apart.
Now a root takes the first line of its first message as its title (in the same write that queues the
message), a user can rename it, the rename is announced to every panel and survives a restart, and a
workflow run is listed with its workflow and question.
"""

from __future__ import annotations

from typing import Any

from server_kit import ServeFactory

from dominds.driver.engine import Engine
from dominds.driver.titles import MAX_TITLE, title_from_message


def test_a_title_is_the_first_line_of_the_first_message() -> None:
    assert title_from_message("\n\n  Plan the 1.2 release  \nmore detail") == "Plan the 1.2 release"
    assert title_from_message("!?@coder please write the changelog\n!?body") == "@coder please write the changelog"
    assert title_from_message("# Heading\n") == "Heading"
    long = title_from_message("word " * 100)
    assert long is not None and len(long) == MAX_TITLE and long.endswith("…")
    assert title_from_message(" \n\t\n") is None


async def _root(served: Any, listing: dict[str, Any], root_id: str) -> dict[str, Any]:
    return next(d for d in listing["dialogs"] if d["rootId"] == root_id)


async def test_titles_come_from_the_first_message_can_be_renamed_and_survive_a_restart(serve: ServeFactory) -> None:
    served = await serve()
    sock = await served.ws()
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    root = created["rootId"]
    _, listing = await served.get("/api/dialogs")
    assert (await _root(served, listing, root))["title"] is None
    await served.post(f"/api/dialogs/{root}/messages", {"content": "hello\nand more"})
    retitled = await sock.wait_type("dialog_retitled", selfId=root)
    assert retitled["title"] == "hello" and "dialog" not in retitled, "a global event: every panel hears it"
    await served.post(f"/api/dialogs/{root}/messages", {"content": "slow"})
    _, listing = await served.get("/api/dialogs")
    assert (await _root(served, listing, root))["title"] == "hello", "only the first message names the dialog"

    status, renamed = await served.post(f"/api/dialogs/{root}/title", {"title": "  Greeting   test "})
    assert status == 200 and renamed["title"] == "Greeting test"
    assert (await sock.wait_type("dialog_retitled", selfId=root, title="Greeting test"))
    ack = await sock.request({"type": "set_dialog_title", "dialog": {"selfId": root}, "title": "Via the socket"}, "ack")
    assert ack["title"] == "Via the socket"
    status, error = await served.post(f"/api/dialogs/{root}/title", {"title": "x" * 201})
    assert status == 400 and "200 characters" in error["error"]
    status, _ = await served.post(f"/api/dialogs/{root}/title", {"title": "\ud800"})
    assert status == 400

    await served.engine.wait_idle()
    await served.engine.close()
    engine = Engine(served.engine.rtws)
    await engine.start()
    try:
        assert engine.find_dialog(root).latest.title == "Via the socket", "persisted in latest.yaml"
    finally:
        await engine.close()


async def test_workflow_runs_are_listed_with_their_workflow_and_question(serve: ServeFactory) -> None:
    served = await serve()
    served.engine.start_workflow_run("tot", "lead", "tasks/t.tsk", "Why is the sky blue?")
    _, listing = await served.get("/api/dialogs")
    (run,) = listing["dialogs"]
    assert run["conductor"] == "tot" and run["title"] == "Why is the sky blue?"
