"""MCP sampling: a server's request for a completion during a tool call (real FastMCP servers over
stdio, the scripted provider answering as the calling member's model).

Before, Dominds offered no sampling: a server that asked got "Sampling not supported". Now a server
opted in with ``sampling: true`` is answered by the calling member's model, on the handshake-era
protocol (``create_message``) and on the newest one (``Resolve(Sample)``), and the course records it;
a server not opted in is refused with an error that says how to opt in. Its tokens count in the
dialog's usage like a generation's.
"""

from __future__ import annotations

from pathlib import Path

from mcp_kit import FAKE_SERVER, PYTHON, after_tool, call, mcp_workspace, stdio_server_yaml
from test_mcp_toolsets import _engine, _results

from dominds.store.course_records import GenFinishRecord, McpSamplingRecord

POEM = "Leaves drift on the pond"


async def test_a_server_opted_in_samples_the_members_model_and_one_not_opted_in_is_refused(tmp_path: Path) -> None:
    responses = [
        call("a haiku", "p_haiku", {"topic": "autumn"}),
        call("a haiku anywhere", "m_haiku_anywhere", {"topic": "rain"}),
        call("a haiku unasked", "q_haiku", {"topic": "snow"}),
        {"agent": "lead", "message": "Write a haiku about autumn.", "response": POEM},
        {"agent": "lead", "message": "Write a haiku about rain.", "response": POEM + " in the rain"},
        after_tool("wrote:", "Nice poem."),
        after_tool("sampling refused", "Refused."),
    ]
    servers = (
        stdio_server_yaml("poet", prefix="p_", sampling="true", timeout_s=60)
        + f"  modern:\n    transport: stdio\n    command: {PYTHON}\n    args: [{FAKE_SERVER}, stdio, --modern-only]\n"
        + "    prefix: m_\n    sampling: true\n    timeout_s: 60\n"
        + stdio_server_yaml("plain", prefix="q_", timeout_s=60)
    )
    rtws = mcp_workspace(tmp_path / "ws", responses, servers, "poet, modern, plain")
    engine = await _engine(rtws)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        for message in ("a haiku", "a haiku anywhere", "a haiku unasked"):
            engine.submit_user_message(root, message)
            await engine.wait_idle(timeout=120)
        poem, poem_anywhere, refused = _results(root)
        assert not poem.is_error and poem.content.endswith(f"wrote: {POEM}"), poem.content
        assert not poem_anywhere.is_error and poem_anywhere.content.endswith(f"wrote: {POEM} in the rain")
        assert refused.is_error
        assert "sampling refused: MCP server 'plain'" in refused.content and "`sampling: true`" in refused.content
        records = [r for r in root.files.read_course(root.latest.current_course) if isinstance(r, McpSamplingRecord)]
        assert [(r.server, r.call_id, r.reply, r.error) for r in records] == [
            ("poet", poem.id, POEM, None),
            ("modern", poem_anywhere.id, POEM + " in the rain", None),
        ]
        assert records[0].system_prompt == "You are a poet."
        assert records[0].messages == [{"role": "user", "text": "Write a haiku about autumn."}]
        assert records[0].provider and records[0].model and records[0].usage is not None
        # what the model did for the servers is paid for like a generation: the dialog's figures count it
        finishes = [r for r in root.files.read_course(root.latest.current_course) if isinstance(r, GenFinishRecord)]
        total = engine.usage_totals(root.root_id)["total"]
        assert total["generations"] == len(finishes) + len(records)
        assert total["outputTokens"] == sum(r.usage.output_tokens for r in [*finishes, *records] if r.usage)
    finally:
        await engine.close()
