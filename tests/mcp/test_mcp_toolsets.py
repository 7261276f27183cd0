"""MCP servers as toolsets of an in-process engine, driven by a scripted agent (real servers, real SDK)."""

from __future__ import annotations

from pathlib import Path

from mcp_kit import after_tool, call, fake_http_server, http_server_yaml, mcp_workspace, stdio_server_yaml

from dominds.driver.engine import Engine
from dominds.store.course_records import FuncResultRecord


def sayings_count(dialog) -> int:  # type: ignore[no-untyped-def]
    from dominds.store.course_records import AgentWordsRecord

    return sum(isinstance(r, AgentWordsRecord) for r in dialog.files.read_course(dialog.latest.current_course))


def _results(dialog) -> list[FuncResultRecord]:  # type: ignore[no-untyped-def]
    return [r for r in dialog.files.read_course(dialog.latest.current_course) if isinstance(r, FuncResultRecord)]


async def _run(engine: Engine, dialog, message: str) -> None:  # type: ignore[no-untyped-def]
    engine.submit_user_message(dialog, message)
    # a deadline, not a figure: on the shared 2-core machine the fake server alone takes ~14 s to start
    await engine.wait_idle(timeout=90)


async def test_stdio_server_tool_result_reaches_the_model(tmp_path: Path) -> None:
    rtws = mcp_workspace(
        tmp_path / "ws",
        [call("say", "fake_echo", {"text": "hi"}), after_tool("echo: hi", "Got it.")],
        stdio_server_yaml(prefix="fake_"),
        "fake",
    )
    engine = Engine(rtws)
    await engine.start()
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        await _run(engine, root, "say")
        results = _results(root)
        assert [(r.name, r.content, r.is_error) for r in results] == [("fake_echo", "echo: hi", False)]
    finally:
        await engine.close()


async def _engine(rtws) -> Engine:  # type: ignore[no-untyped-def]
    engine = Engine(rtws)
    await engine.start()
    return engine


async def test_stateful_http_server_gives_each_dialog_its_own_session(tmp_path: Path) -> None:
    responses = [
        call("keep", "remember", {"value": "apple"}),
        after_tool("remembered", "Kept."),
        call("what", "recall"),
        after_tool("apple", "It is apple."),
        after_tool("(nothing)", "Nothing here."),
        call("drop", "release_st_session"),
        after_tool("released", "Released."),
    ]
    with fake_http_server(stateless=False) as url:
        rtws = mcp_workspace(tmp_path / "ws", responses, http_server_yaml("st", url, stateful="true"), "st")
        engine = await _engine(rtws)
        try:
            a = engine.create_dialog("lead", "tasks/t.tsk")
            b = engine.create_dialog("lead", "tasks/t.tsk")
            await _run(engine, a, "keep")
            await _run(engine, b, "what")
            await _run(engine, a, "what")
            assert [r.content for r in _results(b)] == ["(nothing)"]
            assert [r.content for r in _results(a)] == ["remembered", "apple"]
            assert len(engine.config.mcp.servers["st"].leases) == 2
            await _run(engine, a, "drop")
            assert "released" in _results(a)[-1].content
            assert set(engine.config.mcp.servers["st"].leases) == {b.self_id}
            # a dialog that ends (moved to done/) gives its session back
            engine.move_root(b.root_id, "done")
            await engine.config.mcp.sweep()
            assert engine.config.mcp.servers["st"].leases == {}
        finally:
            await engine.close()


async def test_stateless_http_server_is_shared_by_all_dialogs(tmp_path: Path) -> None:
    responses = [
        call("keep", "sl_remember", {"value": "pear"}),
        after_tool("remembered", "Kept."),
        call("what", "sl_recall"),
        after_tool("pear", "It is pear."),
    ]
    with fake_http_server(stateless=True) as url:
        rtws = mcp_workspace(tmp_path / "ws", responses, http_server_yaml("sl", url, prefix="sl_"), "sl")
        engine = await _engine(rtws)
        try:
            a = engine.create_dialog("lead", "tasks/t.tsk")
            b = engine.create_dialog("lead", "tasks/t.tsk")
            await _run(engine, a, "keep")
            await _run(engine, b, "what")
            assert [r.content for r in _results(b)] == ["pear"]
            assert engine.config.mcp.servers["sl"].leases == {}
        finally:
            await engine.close()


async def test_server_crash_mid_call_is_an_error_and_the_server_restarts(tmp_path: Path) -> None:
    responses = [
        call("boom", "crash"),
        after_tool("may or may not have run", "It crashed."),
        call("who", "pid"),
        after_tool("", "Alive again."),
    ]
    rtws = mcp_workspace(tmp_path / "ws", responses, stdio_server_yaml(), "fake")
    engine = await _engine(rtws)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        await _run(engine, root, "who")
        first_pid = _results(root)[-1].content
        await _run(engine, root, "boom")
        crashed = _results(root)[-1]
        assert crashed.is_error and "went away" in crashed.content and "not retried" in crashed.content
        await _run(engine, root, "who")
        again = _results(root)[-1]
        assert not again.is_error and again.content.isdigit() and again.content != first_pid
        assert engine.config.mcp.servers["fake"].restarts == 1
        # the crashing call was recorded once and never re-run
        assert [r.name for r in _results(root)].count("crash") == 1
    finally:
        await engine.close()


async def test_a_hanging_call_times_out_as_an_error_the_model_reads(tmp_path: Path) -> None:
    responses = [call("wait", "hang"), after_tool("gave no answer within 1s", "Too slow.")]
    rtws = mcp_workspace(tmp_path / "ws", responses, stdio_server_yaml(timeout_s=1), "fake")
    engine = await _engine(rtws)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        await _run(engine, root, "wait")
        result = _results(root)[-1]
        assert result.is_error and "may or may not have run" in result.content
    finally:
        await engine.close()


async def test_an_image_result_is_saved_as_an_artifact_of_the_dialog(tmp_path: Path) -> None:
    responses = [call("draw", "picture"), after_tool("a red dot", "Drawn.")]
    rtws = mcp_workspace(tmp_path / "ws", responses, stdio_server_yaml(), "fake")
    engine = await _engine(rtws)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        await _run(engine, root, "draw")
        content = _results(root)[-1].content
        assert content.startswith("a red dot\n[image saved as artifact ")
        assert f"/api/dialogs/{root.self_id}/artifacts/" in content
        saved = list((root.files.dir / "artifacts").iterdir())
        assert len(saved) == 1 and saved[0].suffix == ".png" and saved[0].read_bytes().startswith(b"\x89PNG")
    finally:
        await engine.close()


async def test_editing_mcp_yaml_reloads_servers_and_tools(tmp_path: Path) -> None:
    import os

    responses = [
        call("old pid", "a_pid"),
        after_tool("", "Noted."),
        call("new pid", "b_pid"),
        call("old again", "a_pid"),
        after_tool("not found", "That tool is gone."),
    ]
    rtws = mcp_workspace(tmp_path / "ws", responses, stdio_server_yaml(prefix="a_"), "fake")
    engine = await _engine(rtws)
    mcp_yaml = rtws.minds_dir / "mcp.yaml"
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        await _run(engine, root, "old pid")
        first_pid = int(_results(root)[-1].content)
        # a new prefix only renames the tools: the same server process answers
        mcp_yaml.write_text("servers:\n" + stdio_server_yaml(prefix="b_"))
        os.utime(mcp_yaml, ns=(1, 1))  # a different mtime even within the same clock tick
        await _run(engine, root, "new pid")
        assert int(_results(root)[-1].content) == first_pid
        await _run(engine, root, "old again")
        assert _results(root)[-1].is_error and "a_pid" in _results(root)[-1].content
        # a changed command restarts the server; a removed server leaves the toolsets and becomes a team problem
        mcp_yaml.write_text("servers:\n" + stdio_server_yaml(prefix="b_", env="{X: '1'}"))
        os.utime(mcp_yaml, ns=(2, 2))
        await _run(engine, root, "new pid")
        assert int(_results(root)[-1].content) != first_pid
        mcp_yaml.write_text("servers: {}\n")
        os.utime(mcp_yaml, ns=(3, 3))
        config = engine.config.get()
        assert config.mcp is not None and config.mcp.toolset_names() == []
        assert any("unknown toolset 'fake'" in p.message for p in config.problems)
    finally:
        await engine.close()


async def test_an_unreachable_server_in_back_off_does_not_hold_up_generations(tmp_path: Path) -> None:
    import time

    responses = [{"agent": "lead", "message": "hello", "response": "Hi."}]
    rtws = mcp_workspace(tmp_path / "ws", responses, "  gone:\n    command: /nonexistent/mcp-server\n", "gone, ws_read")
    engine = await _engine(rtws)
    try:
        root = engine.create_dialog("lead", "tasks/t.tsk")
        await _run(engine, root, "hello")
        state = engine.config.mcp.servers["gone"]
        assert state.state == "unreachable" and state.failures == 1
        state.retry_at = time.monotonic() + 3600  # as after many failures: waiting would take an hour
        await _run(engine, root, "hello")
        assert state.failures == 1 and sayings_count(root) == 2  # not tried again, and the dialog answered
    finally:
        await engine.close()
