"""Ids a person can type: `run` prints the dialog's id, unique prefixes work wherever an id is taken, an
ambiguous one lists the candidates, `answer` needs no id for the only pending question, and `--taskdoc`
has a sensible default."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_cli_kit import Daemon, dominds, dominds_json, write_workspace


def _roots(ws: Path) -> list[str]:
    return sorted(p.name for p in (ws / ".dialogs" / "run").iterdir())


def test_run_prints_the_dialog_id_and_defaults_the_taskdoc_to_the_only_one(tmp_path: Path) -> None:
    """Bugs: `dominds run` never printed the new dialog's id, and `--taskdoc` was mandatory."""
    ws = write_workspace(tmp_path / "ws")
    done = dominds(ws, "run", "hello")
    assert done.returncode == 0, done.stdout + done.stderr
    [root] = _roots(ws)
    assert done.stdout.startswith("(Taskdoc tasks/t.tsk: the workspace's only Taskdoc; --taskdoc chooses another)\n")
    assert f"✓ idle: the dialog has answered (dialog {root})" in done.stdout
    assert f'go on: dominds tell {root} "…" --follow' in done.stdout
    events = [json.loads(line) for line in dominds(ws, "run", "hello", "--json").stdout.splitlines()]
    assert events[-1]["type"] == "outcome" and events[-1]["rootId"] in _roots(ws) and events[-1]["rootId"] != root
    with Daemon(ws) as daemon:
        on_daemon = dominds(ws, "run", "hello")
        assert on_daemon.returncode == 0, on_daemon.stdout + on_daemon.stderr
        [third] = sorted(set(_roots(ws)) - {root, events[-1]["rootId"]})
        assert f"(dialog {third}, @lead, on the daemon pid {daemon.pid}" in on_daemon.stdout
        assert f"(dialog {third})" in on_daemon.stdout
        daemon.stop()


def test_the_default_taskdoc_follows_the_workspace(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    shutil.rmtree(ws / "tasks")
    created = dominds_json(ws, "new", "hello")
    assert created["taskDocPath"] == "tasks/main.tsk", "no Taskdoc yet: a new one"
    (ws / "tasks" / "a.tsk").mkdir(parents=True)
    (ws / "tasks" / "b.tsk").mkdir()
    chosen = dominds(ws, "new", "hello")
    assert chosen.returncode == 1, "the newest dialog's Taskdoc is no package, and two others exist"
    assert "this workspace has 2 Taskdocs; choose one with --taskdoc (tasks/a.tsk, tasks/b.tsk)" in chosen.stderr
    (ws / "tasks" / "main.tsk").mkdir(exist_ok=True)
    newest = dominds(ws, "new", "hello")
    assert newest.returncode == 0, newest.stderr
    assert "(Taskdoc tasks/main.tsk: the Taskdoc of the newest dialog" in newest.stdout
    for root in _roots(ws):
        shutil.rmtree(ws / ".dialogs" / "run" / root)
    refused = dominds(ws, "run", "hello")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "this workspace has 3 Taskdocs; choose one with --taskdoc (tasks/a.tsk, tasks/b.tsk, tasks/main.tsk)" in refused.stderr
    assert _roots(ws) == []


def test_unique_prefixes_are_accepted_everywhere_and_ambiguous_ones_list_the_candidates(tmp_path: Path) -> None:
    """Bug: id prefixes were not accepted; every command wanted the whole id."""
    ws = write_workspace(tmp_path / "ws")
    first = dominds_json(ws, "new", "--taskdoc", "tasks/t.tsk", "hello")["rootId"]
    second = dominds_json(ws, "new", "--taskdoc", "tasks/t.tsk", "hello")["rootId"]
    common = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)
    unique = second[: common + 1]
    ambiguous = dominds(ws, "show", first[:common])
    assert ambiguous.returncode == 1 and ambiguous.stderr.count("\n") == 1
    assert f"{first[:common]!r} is ambiguous: 2 dialog ids start with it ({first}, {second}); give more characters" in (
        ambiguous.stderr
    )
    assert dominds(ws, "show", unique).stdout.startswith(second)
    assert dominds_json(ws, "tell", unique, "hello again")["selfId"] == second
    tree = dominds_json(ws, "status", "--root", unique)
    assert [r["selfId"] for r in tree["roots"]] == [second]
    assert dominds_json(ws, "done", unique) == {"rootId": second, "fromStatus": "run", "toStatus": "done"}
    unknown = dominds(ws, "show", "zzz")
    assert unknown.returncode == 1 and "no dialog id starts with 'zzz'" in unknown.stderr
    bad = dominds(ws, "show", "../etc")
    assert bad.returncode == 1 and "is not a dialog id" in bad.stderr


def test_answer_takes_no_id_for_the_only_question_and_a_prefix_otherwise(tmp_path: Path) -> None:
    """Bug: question ids are long, and there was no way to answer the only pending question without one."""
    ws = write_workspace(tmp_path / "ws")
    asked = dominds(ws, "run", "paint")
    assert asked.returncode == 3
    assert '  dominds answer "your answer"' in asked.stdout, asked.stdout
    assert dominds(ws, "q4h").stdout.rstrip().endswith('answer with: dominds answer "your answer"')
    answered = dominds(ws, "answer", "blue", "--follow")
    assert answered.returncode == 0 and "Painting it blue." in answered.stdout, answered.stdout + answered.stderr

    dominds(ws, "run", "paint")
    dominds(ws, "run", "paint")
    questions = dominds_json(ws, "q4h")["questions"]
    assert len(questions) == 2
    which = dominds(ws, "answer", "blue")
    assert which.returncode == 1 and "2 questions are pending; say which:" in which.stderr
    assert all(q["id"] in which.stderr for q in questions)
    target = questions[1]
    prefix = target["id"].removeprefix("q4h-")[: len(target["selfId"])]  # the dialog part, without `q4h-`
    queued = dominds_json(ws, "answer", prefix, "blue")
    assert queued["questionId"] == target["id"] and queued["queued"] is True
    assert [q["id"] for q in dominds_json(ws, "q4h")["questions"]] == [questions[0]["id"]]
    gone = dominds(ws, "answer", target["id"], "blue")
    assert gone.returncode == 1 and "is not pending (already answered" in gone.stderr
