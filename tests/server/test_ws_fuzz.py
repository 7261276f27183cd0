"""Wire fuzzing (issue 7): valid, mutated and garbage frames sent to a live daemon process.

Whatever arrives, the daemon answers on the same socket (a reply or an ``error``), keeps that
connection usable, and keeps serving everyone else.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from fuzzing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workspace_kit import write_workspace

TYPES = [
    "set_ui_language", "get_problems", "create_dialog", "display_dialog", "unfollow_dialog", "display_course",
    "display_reminders", "get_taskdoc", "drive_dlg_by_user_msg", "drive_dialog_by_user_answer", "interrupt_dialog",
    "emergency_stop", "resume_dialog", "resume_all", "declare_subdialog_dead", "get_q4h_state", "resume_global",
]  # fmt: skip
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
dialog_ident = st.fixed_dictionaries({"selfId": st.text(max_size=16), "rootId": st.text(max_size=16)})
valid = st.builds(
    lambda t, dialog, extra: {"type": t, "dialog": dialog, **extra},
    st.sampled_from(TYPES),
    dialog_ident,
    st.fixed_dictionaries(
        {},
        optional={
            "content": st.text(max_size=60),
            "msgId": st.text(max_size=12),
            "questionId": st.text(max_size=20),
            "taskDocPath": st.sampled_from(["tasks/t.tsk", "../x.tsk", "", "a"]),
            "agentId": st.sampled_from(["lead", "nobody", ""]),
            "course": st.integers(-2, 5),
            "follow": st.sampled_from(["add", "replace", "bogus"]),
            "requestId": st.text(max_size=8),
        },
    ),
)


def _mutate(message: dict[str, Any], key: str, value: Any, drop: bool) -> dict[str, Any]:
    out = dict(message)
    if drop:
        out.pop(key, None)
    else:
        out[key] = value
    return out


mutated = st.builds(_mutate, valid, st.sampled_from(["type", "dialog", "content", "questionId", "course"]), json_values, st.booleans())
frames = st.one_of(
    valid.map(json.dumps),
    mutated.map(json.dumps),
    json_values.map(json.dumps),
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    rtws = write_workspace(tmp_path_factory.mktemp("fuzz") / "ws", [{"response": "ok"}])
    proc = subprocess.Popen(
        [sys.executable, "-m", "dominds", "-C", str(rtws.root), "serve", "--port", "0", "--no-auth"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert proc.stdout is not None
    url = ""
    deadline = time.monotonic() + 30
    for line in proc.stdout:
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        if found:
            url = found.group(0)
            break
        assert time.monotonic() < deadline
    yield url
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert proc.returncode == 0, "the daemon shut down cleanly after the fuzzing"


async def _exchange(url: str, batch: list[str]) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"{url}/ws", protocols=("dominds",), max_msg_size=0) as ws:
            for frame in batch:
                await ws.send_str(frame)
            # a probe after the batch must still be answered on the same connection
            await ws.send_str(json.dumps({"type": "get_q4h_state", "requestId": "probe"}))
            deadline = asyncio.get_running_loop().time() + 10
            while True:
                remaining = deadline - asyncio.get_running_loop().time()
                assert remaining > 0, "the probe was not answered"
                message = await ws.receive(timeout=remaining)
                assert message.type == aiohttp.WSMsgType.TEXT, f"connection ended: {message}"
                data = json.loads(message.data)
                if data.get("type") == "q4h_state_response" and data.get("requestId") == "probe":
                    break
        async with session.get(f"{url}/api/health") as response:
            assert response.status == 200


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batch=st.lists(frames, min_size=1, max_size=8))
def test_any_frames_get_answers_and_the_daemon_keeps_serving(daemon: str, batch: list[str]) -> None:
    asyncio.run(_exchange(daemon, batch))


def test_an_oversized_frame_is_refused_and_the_connection_lives(daemon: str) -> None:
    asyncio.run(_exchange(daemon, ["x" * (2 * 1024 * 1024)]))


# Text a client may send that no file can hold as-is: lone surrogates, controls, NUL, BOM, line separators.
hostile_text = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.characters(min_codepoint=0, max_codepoint=0x1F),
        st.sampled_from(["\x7f", "\x85", "\u2028", "\u2029", "\ufeff", "\ufffe", "\U0010ffff", "é", "中", "😀"]),
        st.characters(codec="utf-8"),
    ),
    min_size=1,
    max_size=40,
)


async def _hostile_exchange(url: str, texts: list[str]) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{url}/api/dialogs", json={"taskDocPath": "tasks/t.tsk"}) as response:
            root_id = (await response.json())["rootId"]
        for text in texts:
            async with session.post(f"{url}/api/dialogs/{root_id}/messages", data=json.dumps({"content": text}),
                                    headers={"Content-Type": "application/json"}) as response:  # fmt: skip
                assert response.status in (202, 400), (text, response.status, await response.text())
        async with session.ws_connect(f"{url}/ws", protocols=("dominds",), max_msg_size=0) as ws:
            for text in texts:
                frame = {"type": "drive_dlg_by_user_msg", "dialog": {"selfId": root_id}, "content": text}
                await ws.send_str(json.dumps(frame))
        # Nothing wedged: the dialog comes to rest and a plain message still gets its answer.
        async with session.post(f"{url}/api/dialogs/{root_id}/messages", json={"content": "plain"}) as response:
            assert response.status == 202
        deadline = time.monotonic() + 30
        while True:
            async with session.get(f"{url}/api/dialogs/{root_id}") as response:
                shown = await response.json()
            if shown["runState"]["kind"] == "idle" and not shown.get("generating"):
                break
            assert time.monotonic() < deadline, f"the dialog never came to rest: {shown['runState']}"
            await asyncio.sleep(0.05)
        assert "loadError" not in shown, shown.get("loadError")
        async with session.get(f"{url}/api/health") as response:
            assert response.status == 200


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(texts=st.lists(hostile_text, min_size=1, max_size=4))
def test_hostile_text_is_refused_or_stored_and_never_wedges_a_dialog(daemon: str, texts: list[str]) -> None:
    """Issue 15: lone surrogates and control characters through the real daemon, over HTTP and the websocket."""
    asyncio.run(_hostile_exchange(daemon, texts))
