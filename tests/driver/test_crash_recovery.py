"""A real engine process SIGKILLed mid-generation, mid-tellask and mid-Q4H, then restarted.

Afterwards every file parses, every dialog is idle or waits on its question, nothing acknowledged is
lost or duplicated, and no TYPE B key has two subdialogs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from workspace_kit import set_responses, write_workspace

from dominds.rtws import Rtws
from dominds.store.course_records import HumanTextRecord, TeammateResponseRecord
from dominds.store.dialog_store import DialogStore
from dominds.store.errors import StoreError

DAEMON = Path(__file__).with_name("crash_daemon.py")


def _start(rtws: Rtws, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, str(DAEMON), str(rtws.root), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError(f"daemon exited before printing {prefix!r}: {proc.stderr.read() if proc.stderr else ''}")


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def _restart_until_idle(rtws: Rtws, *extra: str) -> None:
    proc = _start(rtws, "--exit-when-idle", *extra)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "idle" in out


def _audit(rtws: Rtws) -> dict[str, Any]:
    """Check the invariants over every dialog; return facts for scenario-specific checks."""
    store = DialogStore(rtws)
    facts: dict[str, Any] = {"human_msg_ids": [], "responses": [], "states": {}, "registry": {}}
    for root_id in store.root_ids("run"):
        registry = store.files("run", root_id).read_registry()
        values = [e.subdialog_id for e in registry.values()]
        assert len(values) == len(set(values)), "a subdialog is registered under two keys"
        facts["registry"].update(registry)
        for files in store.iter_tree("run", root_id):
            try:
                meta, latest = files.read_meta(), files.read_latest()
                for number in files.course_numbers():
                    course = files.read_course(number)
                    facts["human_msg_ids"] += [r.msg_id for r in course if isinstance(r, HumanTextRecord)]
                    facts["responses"] += [
                        (r.callee_dialog_id, r.call_id) for r in course if isinstance(r, TeammateResponseRecord)
                    ]
                files.read_q4h()
                files.read_subdlg()
            except StoreError as exc:  # pragma: no cover - the assertion message is the point
                raise AssertionError(f"unparseable state after crash: {exc}") from exc
            assert latest is not None and not latest.generating
            state = latest.run_state
            waits_on_question = state.kind == "blocked" and files.q4h_yaml.exists()
            assert state.kind == "idle" or waits_on_question or (state.kind == "blocked" and files.subdlg_yaml.exists()), (
                f"{meta.id} ended {state}"
            )
            facts["states"][meta.id] = state.kind
    assert len(facts["human_msg_ids"]) == len(set(facts["human_msg_ids"])), "a prompt was recorded twice"
    assert len(facts["responses"]) == len(set(facts["responses"])), "a teammate response was supplied twice"
    return facts


def test_sigkill_mid_generation(tmp_path: Path) -> None:
    rtws = write_workspace(tmp_path / "ws", [{"message": "slow", "response": "tick " * 400, "chunk_chars": 5, "delay_ms": 5}])
    proc = _start(rtws, "--submit", "slow")
    _wait_for(proc, "streaming")
    _kill(proc)
    set_responses(rtws, [{"message": "slow", "response": "finished quickly"}])
    _restart_until_idle(rtws)
    facts = _audit(rtws)
    assert facts["human_msg_ids"] == ["crash-msg-1"], "the acknowledged message survives, once"
    assert list(facts["states"].values()) == ["idle"]


def test_sigkill_mid_tellask(tmp_path: Path) -> None:
    slow_coder = {"agent": "coder", "contains": "build it", "response": "work " * 400, "chunk_chars": 5, "delay_ms": 5}
    rest = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder !tellaskSession job build it\n"},
        {"agent": "lead", "contains": "provided response", "response": "All done."},
    ]
    rtws = write_workspace(tmp_path / "ws", [slow_coder, *rest])
    proc = _start(rtws, "--submit", "delegate")
    sub_line = _wait_for(proc, "subdialog")
    _wait_for(proc, f"streaming {sub_line.split()[1]}")
    _kill(proc)
    set_responses(rtws, [{**slow_coder, "response": "Built.", "delay_ms": 0}, *rest])
    _restart_until_idle(rtws)
    facts = _audit(rtws)
    assert len(facts["responses"]) == 1, "the caller got the answer exactly once"
    assert list(facts["registry"]) == ["coder!job"]
    assert sorted(facts["states"].values()) == ["idle", "idle"]


def test_sigkill_mid_q4h(tmp_path: Path) -> None:
    rtws = write_workspace(
        tmp_path / "ws",
        [
            {"agent": "lead", "message": "delegate", "response": "!?@coder build it\n"},
            {"agent": "coder", "contains": "build it", "response": "!?@human Which DB?\n"},
            {"agent": "coder", "message": "sqlite", "response": "Built on sqlite."},
            {"agent": "lead", "contains": "provided response", "response": "Done."},
        ],
    )
    proc = _start(rtws, "--submit", "delegate")
    _wait_for(proc, "q4h")
    _kill(proc)
    _restart_until_idle(rtws)  # nothing to do: still waiting for the human
    facts = _audit(rtws)
    assert sorted(facts["states"].values()) == ["blocked", "blocked"]
    _restart_until_idle(rtws, "--answer-all", "sqlite")
    facts = _audit(rtws)
    assert sorted(facts["states"].values()) == ["idle", "idle"]
    assert len(facts["responses"]) == 1


def test_sigkill_while_the_root_answers_an_ask_back(tmp_path: Path) -> None:
    """Bug: a SIGKILL while the root generated its answer to an ask-back left the tree deadlocked for good
    after restart (the asker never got an answer and ``resume`` answered 409)."""
    slow_answer = {"agent": "lead", "contains": "Which language?", "response": "tick " * 400, "chunk_chars": 5, "delay_ms": 5}
    rest = [
        {"agent": "lead", "message": "delegate", "response": "!?@coder write the parser\n"},
        {"agent": "coder", "contains": "write the parser", "response": "!?@tellasker Which language?\n"},
        {"agent": "coder", "contains": "Use Rust.", "response": "Parser written in Rust."},
        {"agent": "lead", "contains": "Parser written", "response": "Done."},
    ]
    rtws = write_workspace(tmp_path / "ws", [slow_answer, *rest])
    proc = _start(rtws, "--submit", "delegate")
    root_id = _wait_for(proc, "root").split()[1]
    sub_id = _wait_for(proc, "subdialog").split()[1]
    _wait_for(proc, f"streaming {sub_id}")
    _wait_for(proc, f"streaming {root_id}")
    _kill(proc)
    set_responses(rtws, [{**slow_answer, "response": "Use Rust.", "delay_ms": 0}, *rest])
    _restart_until_idle(rtws)
    facts = _audit(rtws)
    assert sorted(facts["states"].values()) == ["idle", "idle"]
    store = DialogStore(rtws)
    sub_course = store.files("run", root_id, sub_id).read_course(1)
    answers = [r.response for r in sub_course if isinstance(r, TeammateResponseRecord)]
    assert answers == ["Use Rust."], "the asker got the root's answer, once"
    root_course = store.files("run", root_id).read_course(1)
    assert [r.response for r in root_course if isinstance(r, TeammateResponseRecord)] == ["Parser written in Rust."]
