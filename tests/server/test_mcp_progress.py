"""An MCP server during a tool call, seen through the daemon's app (a real FastMCP server over stdio; a
websocket client; the HTTP API).

Its progress reaches the panel's websocket as ``func_progress_evt`` on that call (the bug: progress
notifications were dropped; the panel showed nothing but "…" until the result came), and its question
answered `decline` through the answer API goes back to it as a decline.
"""

from __future__ import annotations

import sys
from pathlib import Path

from server_kit import ServeFactory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))  # tests/mcp is not a package
from mcp_kit import after_tool, call, give_the_lead_the_fake_server


async def test_a_servers_progress_is_shown_on_its_tool_call(serve: ServeFactory) -> None:
    served = await serve([call("sand it", "sand"), after_tool("sanded", "Sanded.")])
    give_the_lead_the_fake_server(served.engine.rtws)
    sock = await served.ws()
    ready = await sock.request({"type": "create_dialog", "agentId": "lead", "taskDocPath": "tasks/t.tsk"}, "dialog_ready", timeout=60)
    dialog = ready["dialog"]
    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "sand it"}, "ack", timeout=60)
    requested = await sock.wait_type("func_call_requested_evt", timeout=120)
    result = await sock.wait_type("func_result_evt", timeout=60)
    assert result["content"] == "sanded" and not result["isError"]
    progress = [e for e in sock.events_of(dialog["selfId"]) if e["type"] == "func_progress_evt"]
    assert progress, "the server reported progress three times"
    assert all(e["funcId"] == requested["funcId"] and e["genseq"] == requested["genseq"] for e in progress)
    assert (progress[-1]["progress"], progress[-1]["total"], progress[-1]["message"]) == (3, 3, "coat 3 of 3")
    order = [e["type"] for e in sock.events_of(dialog["selfId"])]
    assert order.index("func_call_requested_evt") < order.index("func_progress_evt") < order.index("func_result_evt")


async def test_decline_through_the_answer_api_goes_back_to_the_server_as_a_decline(serve: ServeFactory) -> None:
    """The route `dominds answer` and `dominds mcp`'s `answer_question` use: an MCP server's question
    answered `decline` is declined (the server says so), and nothing is queued into the dialog."""
    served = await serve([call("paint it", "paint"), after_tool("not painted (decline)", "Not painted.")])
    give_the_lead_the_fake_server(served.engine.rtws)
    sock = await served.ws()
    ready = await sock.request({"type": "create_dialog", "agentId": "lead", "taskDocPath": "tasks/t.tsk"}, "dialog_ready", timeout=60)
    dialog = ready["dialog"]
    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "paint it"}, "ack", timeout=60)
    asked = await sock.wait_type("new_q4h_asked", timeout=120)
    question = asked["question"]
    assert question["kind"] == "elicitation"
    status, body = await served.post(f"/api/q4h/{question['id']}/answer", {"content": "decline"})
    assert (status, body["queued"]) == (202, False)
    result = await sock.wait_type("func_result_evt", timeout=60)
    assert (result["content"], result["isError"]) == ("not painted (decline)", False)


async def test_what_the_model_answered_a_server_is_shown_on_the_call_live_and_in_a_replay(serve: ServeFactory) -> None:
    """MCP sampling: the member's model's answer to the server is an ``mcp_sampling_evt`` on the call, and a
    replay of the course rebuilds it from the ``mcp_sampling_record``."""
    served = await serve(
        [
            call("a haiku", "haiku", {"topic": "autumn"}),
            {"agent": "lead", "message": "Write a haiku about autumn.", "response": "Leaves drift on the pond"},
            after_tool("wrote:", "Nice poem."),
        ]
    )
    give_the_lead_the_fake_server(served.engine.rtws, sampling="true")
    sock = await served.ws()
    ready = await sock.request({"type": "create_dialog", "agentId": "lead", "taskDocPath": "tasks/t.tsk"}, "dialog_ready", timeout=60)
    dialog = ready["dialog"]
    await sock.request({"type": "drive_dlg_by_user_msg", "dialog": dialog, "content": "a haiku"}, "ack", timeout=60)
    requested = await sock.wait_type("func_call_requested_evt", timeout=120)
    sampled = await sock.wait_type("mcp_sampling_evt", timeout=60)
    assert (sampled["funcId"], sampled["server"], sampled["reply"]) == (requested["funcId"], "fake", "Leaves drift on the pond")
    result = await sock.wait_type("func_result_evt", timeout=60)
    assert result["content"].endswith("wrote: Leaves drift on the pond")
    await sock.wait_for(lambda m: m["type"] == "dlg_run_state_evt" and m["runState"]["kind"] == "idle", timeout=60)
    viewer = await served.ws()
    await viewer.request({"type": "display_dialog", "dialog": dialog}, "dialog_ready", timeout=60)
    replayed = await viewer.wait_type("mcp_sampling_evt", timeout=30)
    assert replayed["replay"] and (replayed["funcId"], replayed["reply"]) == (requested["funcId"], "Leaves drift on the pond")
