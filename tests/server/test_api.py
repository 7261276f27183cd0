"""The JSON API: every endpoint, JSON in and out, ``{error}`` with a proper status on failure."""

from __future__ import annotations

import io

from server_kit import RESPONSES, ServeFactory


async def test_dialog_lifecycle_over_the_api(serve: ServeFactory) -> None:
    served = await serve()
    status, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    assert status == 201 and created["agentId"] == "lead" and created["selfId"] == created["rootId"]
    root_id = created["rootId"]
    status, accepted = await served.post(
        f"/api/dialogs/{root_id}/messages", {"content": "delegate", "msgId": "m-1"}
    )
    assert status == 202 and accepted["msgId"] == "m-1"
    await served.engine.wait_idle()

    status, listing = await served.get("/api/dialogs")
    assert status == 200
    [root] = listing["dialogs"]
    assert root["rootId"] == root_id and root["status"] == "run" and root["runState"]["kind"] == "idle"
    assert root["subdialogCount"] == 1 and root["cost"]["generations"] == 3 and root["cost"]["costUsd"] > 0
    [sub] = root["subdialogs"]
    assert (
        sub["agentId"] == "coder"
        and sub["supdialogId"] == root_id
        and sub["tellaskHead"].startswith("@coder")
    )

    status, tree = await served.get(f"/api/dialogs/{root_id}/hierarchy")
    assert status == 200 and tree["hierarchy"]["subdialogs"][0]["selfId"] == sub["selfId"]
    status, usage = await served.get(f"/api/dialogs/{root_id}/usage")
    assert status == 200 and usage["total"]["generations"] == 3 and len(usage["dialogs"]) == 2
    status, shown = await served.get(f"/api/dialogs/{sub['selfId']}")
    assert status == 200 and shown["isRoot"] is False and shown["assignmentFromSup"]["callId"]
    assert [e["content"] for e in shown["events"] if e["type"] == "saying_finish_evt"] == ["Implemented X."]

    status, moved = await served.post("/api/dialogs/move", {"rootId": root_id, "toStatus": "done"})
    assert status == 200 and moved == {"movedRootIds": [root_id], "fromStatus": "run", "toStatus": "done"}
    status, stale = await served.post(
        "/api/dialogs/move", {"rootId": root_id, "fromStatus": "run", "toStatus": "archive"}
    )
    assert status == 409 and "done/" in stale["error"]
    status, refused = await served.post(f"/api/dialogs/{root_id}/messages", {"content": "hello"})
    assert status == 409 and "revive it first" in refused["error"]
    status, listing = await served.get("/api/dialogs?status=done")
    assert [d["status"] for d in listing["dialogs"]] == ["done"]
    status, _ = await served.post("/api/dialogs/move", {"rootId": root_id, "toStatus": "archive"})
    status, listing = await served.get("/api/dialogs?status=run,done")
    assert status == 200 and listing["dialogs"] == []


async def test_dialog_tree_nests_subdialogs_by_caller(serve: ServeFactory) -> None:
    served = await serve()
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    await served.post(f"/api/dialogs/{created['rootId']}/messages", {"content": "nest"})
    await served.engine.wait_idle()
    _, tree = await served.get(f"/api/dialogs/{created['rootId']}/hierarchy")
    root = tree["hierarchy"]
    [coder] = root["subdialogs"]
    [tester] = coder["subdialogs"]
    assert (coder["agentId"], tester["agentId"]) == ("coder", "tester")
    assert tester["supdialogId"] == coder["selfId"] and tester["rootId"] == root["rootId"]
    assert root["subdialogCount"] == 2 and tester["subdialogs"] == []


async def test_q4h_and_run_control_endpoints(serve: ServeFactory) -> None:
    served = await serve()
    _, created = await served.post("/api/dialogs", {"agentId": "lead", "taskDocPath": "tasks/t.tsk"})
    root_id = created["rootId"]
    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "paint"})
    await served.engine.wait_idle()
    status, questions = await served.get("/api/q4h")
    [question] = questions["questions"]
    assert status == 200 and question["selfId"] == root_id
    _, listing = await served.get("/api/dialogs")
    assert listing["dialogs"][0]["q4hCount"] == 1 and listing["dialogs"][0]["runState"]["kind"] == "blocked"
    status, answered = await served.post(f"/api/q4h/{question['id']}/answer", {"content": "blue"})
    assert status == 202 and answered["selfId"] == root_id
    status, again = await served.post(f"/api/q4h/{question['id']}/answer", {"content": "red"})
    assert status == 409 and "not pending" in again["error"]
    await served.engine.wait_idle()

    await served.post(f"/api/dialogs/{root_id}/messages", {"content": "slow"})
    status, stopped = await served.post(f"/api/dialogs/{root_id}/stop")
    assert status == 200 and stopped["stopped"] is True
    await served.engine.wait_idle()
    status, resumed = await served.post(f"/api/dialogs/{root_id}/resume")
    assert status == 200
    status, emergency = await served.post("/api/emergency-stop")
    assert status == 200 and emergency["stopped"] == 1
    await served.engine.wait_idle()
    status, all_resumed = await served.post("/api/resume-all")
    assert status == 200 and all_resumed["resumed"] == 1
    await served.post(f"/api/dialogs/{root_id}/stop")
    status, dead = await served.post(f"/api/dialogs/{root_id}/dead", {"note": "x"})
    assert status == 409 and "only subdialogs" in dead["error"]


async def test_reference_endpoints(serve: ServeFactory) -> None:
    served = await serve(suggestions=["hello", "delegate", "  ", 3, "hello"])  # type: ignore[list-item]
    status, team = await served.get("/api/team")
    assert (
        status == 200
        and team["defaultResponder"] == "lead"
        and [m["id"] for m in team["members"]] == ["lead", "coder", "tester"]
    )
    status, taskdocs = await served.get("/api/taskdocs")
    assert status == 200 and taskdocs["taskdocs"] == ["tasks/t.tsk"]
    status, problems = await served.get("/api/problems")
    assert status == 200 and problems["problems"] == []
    status, suggestions = await served.get("/api/suggestions")
    assert status == 200 and suggestions["suggestions"] == ["hello", "delegate"]
    assert RESPONSES  # the suggestions name entries of the scripted database


async def test_api_errors_are_json_with_status(serve: ServeFactory) -> None:
    served = await serve()
    headers = served.auth()
    bad_json = await served.client.post(
        "/api/dialogs", data="{nope", headers={**headers, "Content-Type": "application/json"}
    )
    assert bad_json.status == 400 and "not valid JSON" in (await bad_json.json())["error"]
    status, body = await served.post("/api/dialogs", [1])
    assert status == 400 and "JSON object" in body["error"]
    status, body = await served.post("/api/dialogs", {"taskDocPath": 5})
    assert status == 400 and "taskDocPath" in body["error"]
    status, body = await served.post("/api/dialogs", {"taskDocPath": "x/../../y.tsk"})
    assert status == 400 and ".." in body["error"], "a bad path is a bad request, not a state conflict"
    status, body = await served.get("/api/dialogs/0000aaaaa-zzzz")
    assert status == 404 and "no dialog" in body["error"]
    status, body = await served.get("/api/dialogs/0000aaaaa-zzzz/usage")
    assert status == 404
    status, body = await served.get("/api/dialogs?status=bogus")
    assert status == 400 and "bogus" in body["error"]
    status, body = await served.get("/api/nowhere")
    assert status == 404 and body == {"error": "Not Found"}
    big = await served.client.post("/api/dialogs", data=io.BytesIO(b"x" * (1024 * 1024 + 1)), headers=headers)
    assert big.status == 413 and "error" in await big.json()
