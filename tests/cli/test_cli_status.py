"""`dominds status` with and without a daemon (text and --json), its cache, and its YAML fast path."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli_kit import Daemon, cli_env, dominds, dominds_json, write_workspace
from workspace_kit import write_idle_root

from dominds.cli.cmd_status import DEFAULT_LIMIT
from dominds.cli.offline import load_state_yaml
from dominds.rtws import Rtws
from dominds.store import fastyaml
from dominds.store.dialog_store import DialogStore
from dominds.store.fastyaml import load as parse_fastyaml


def _tree_workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Three trees made with the CLI: a delegation, a session, and a question for the human."""
    ws = write_workspace(tmp_path / "ws")
    ids = {}
    for message in ("delegate", "session", "paint"):
        run = dominds(ws, "run", "--taskdoc", "tasks/t.tsk", message, "--json")
        assert run.returncode == (3 if message == "paint" else 0), run.stdout + run.stderr
        events = [json.loads(line) for line in run.stdout.splitlines()]
        ids[message] = next(e["dialog"]["rootId"] for e in events if e.get("dialog"))
    return ws, ids


def _by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {root["selfId"]: root for root in report["roots"]}


def _picture(report: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on the route (recovery at daemon start rewrites latest.yaml timestamps)."""
    return {
        root["selfId"]: (root["runState"], root["usage"], root.get("q4h"), [s["selfId"] for s in root["subdialogs"]])
        for root in report["roots"]
    }


def test_status_without_and_with_a_daemon(tmp_path: Path) -> None:
    ws, ids = _tree_workspace(tmp_path)

    offline = dominds_json(ws, "status")
    assert offline["daemon"] is None
    roots = _by_id(offline)
    assert set(roots) == set(ids.values())
    delegate = roots[ids["delegate"]]
    assert delegate["agentId"] == "lead" and delegate["runState"] == {"kind": "idle"}
    assert [(s["agentId"], s["callType"], s["runState"]["kind"]) for s in delegate["subdialogs"]] == [("coder", "C", "idle")]
    assert delegate["usage"]["generations"] == 3 and delegate["usage"]["inputTokens"] > 0
    assert delegate["usage"]["costUsd"] > 0, "priced from llm.yaml"
    session = roots[ids["session"]]
    sub_id = session["subdialogs"][0]["selfId"]
    assert session["registry"] == [{"key": "coder!s1", "subdialogId": sub_id}]
    assert session["subdialogs"][0]["tellaskSession"] == "s1"
    paint = roots[ids["paint"]]
    assert paint["runState"] == {"kind": "blocked", "reason": "needs_human_input"}
    assert [q["tellaskHead"].strip() for q in paint["q4h"]] == ["@human Which colour?"]
    assert offline["totals"] == {**offline["totals"], "roots": 3, "dialogs": 5, "q4h": 1}

    text = dominds(ws, "status")
    assert text.returncode == 0, text.stderr
    assert "no daemon running" in text.stdout and "\x1b[" not in text.stdout, "no colour when not a TTY"
    assert f"└─ {delegate['subdialogs'][0]['selfId']}  @coder  idle" in text.stdout
    assert "blocked: waiting for your answer  1 question" in text.stdout and paint["q4h"][0]["id"] in text.stdout
    assert f"session coder!s1 → {sub_id}" in text.stdout
    assert "3 trees, 5 dialogs, 1 pending question —" in text.stdout

    with Daemon(ws) as daemon:
        online = dominds_json(ws, "status")
        assert online["daemon"]["pid"] == daemon.pid and online["daemon"]["port"] == daemon.port
        assert _picture(online) == _picture(offline), "the same picture through a running daemon"
        text = dominds(ws, "status")
        assert f"daemon pid {daemon.pid} on port {daemon.port}" in text.stdout

        only = dominds_json(ws, "status", "--root", sub_id)
        assert [r["selfId"] for r in only["roots"]] == [ids["session"]], "a subdialog id selects its tree"
        moved = dominds(ws, "done", ids["delegate"])
        assert moved.returncode == 0 and "run/ → done/" in moved.stdout
        assert ids["delegate"] not in _by_id(dominds_json(ws, "status"))
        assert _by_id(dominds_json(ws, "status", "--all"))[ids["delegate"]]["status"] == "done"


def test_the_cache_follows_changes_and_no_cache_leaves_none(tmp_path: Path) -> None:
    ws, ids = _tree_workspace(tmp_path)
    cache = ws / ".dominds" / "cache" / "dialogs.sqlite"  # the dialog index (store/index.py), the daemon's too
    shutil.rmtree(cache.parent, ignore_errors=True)
    assert dominds(ws, "status", "--no-cache").returncode == 0 and not cache.exists()
    before = _by_id(dominds_json(ws, "status"))
    with contextlib.closing(sqlite3.connect(cache)) as db:
        assert cache.exists() and db.execute("SELECT count(*) FROM dialogs").fetchone()[0] == 5

    [question] = dominds_json(ws, "q4h")["questions"]
    answered = dominds(ws, "answer", question["id"], "blue", "--follow")
    assert answered.returncode == 0, answered.stdout + answered.stderr
    after = _by_id(dominds_json(ws, "status"))
    paint = after[ids["paint"]]
    assert paint["runState"] == {"kind": "idle"} and "q4h" not in paint
    assert paint["usage"]["generations"] == before[ids["paint"]]["usage"]["generations"] + 1
    assert after[ids["delegate"]] == before[ids["delegate"]], "unchanged trees come from the cache"
    assert after == _by_id(dominds_json(ws, "status", "--no-cache")), "cache and files agree"


def test_limit_shows_the_most_recent_trees_and_counts_the_others(tmp_path: Path) -> None:
    """``--limit N``: the first N trees of the whole listing, the rest counted (``more``), in JSON and text;
    a tree made active again comes first (store/index_recent.py chooses without reading every dialog)."""
    ws, ids = _tree_workspace(tmp_path)
    whole = [root["selfId"] for root in dominds_json(ws, "status")["roots"]]
    limited = dominds_json(ws, "status", "--limit", "2")
    assert [root["selfId"] for root in limited["roots"]] == whole[:2] and limited["more"] == 1
    assert limited["totals"]["roots"] == 2, "the totals are those of the trees shown"
    assert dominds_json(ws, "status")["more"] == 0, "a page of DEFAULT_LIMIT trees holds all three"
    assert "more" not in dominds_json(ws, "status", "--all"), "--all: every tree, nothing left out"

    oldest = whole[-1]
    files = DialogStore(Rtws(ws)).files("run", oldest, oldest)
    files.write_latest(files.read_latest())  # its state rewritten now, as a daemon does when it wakes it
    assert [root["selfId"] for root in dominds_json(ws, "status", "--limit", "1")["roots"]] == [oldest]
    text = dominds(ws, "status", "--limit", "1")
    assert text.returncode == 0 and oldest in text.stdout and "… and 2 more trees" in text.stdout, text.stdout
    refused = dominds(ws, "status", "--limit", "0")
    assert refused.returncode == 2 and "1 or more" in refused.stderr


def test_status_shows_a_page_of_trees_by_default_and_all_shows_every_tree(tmp_path: Path) -> None:
    """Without ``--limit``, ``status`` printed every tree: at 100,000 dialogs a ``stat`` of every file of
    every dialog and 47 MB of JSON (9–10 s). It now shows the ``DEFAULT_LIMIT`` most recently active trees
    of run/ and counts the others; ``--all`` shows every tree of every status."""
    ws = write_workspace(tmp_path / "ws")
    store = DialogStore(Rtws(ws))
    made = [write_idle_root(store) for _ in range(DEFAULT_LIMIT + 2)]
    page = dominds_json(ws, "status")
    every = dominds_json(ws, "status", "--all")
    assert len(page["roots"]) == DEFAULT_LIMIT and page["more"] == 2 and page["totals"]["roots"] == DEFAULT_LIMIT
    assert "more" not in every and sorted(root["selfId"] for root in every["roots"]) == sorted(made)
    assert [root["selfId"] for root in page["roots"]] == [root["selfId"] for root in every["roots"]][:DEFAULT_LIMIT]
    text = dominds(ws, "status")
    assert text.returncode == 0 and "… and 2 more trees" in text.stdout and "--all every tree" in text.stdout, text.stdout
    assert "more tree" not in dominds(ws, "status", "--all").stdout


def _age_dialog_files(ws: Path, seconds: float) -> None:
    """Date every dialog file and directory ``seconds`` back: older than the index's racy window, so
    what ``status`` derives per tree is kept and reused."""
    when = time.time() - seconds
    for path in (ws / ".dialogs").rglob("*"):
        os.utime(path, (when, when))


def test_what_status_keeps_per_tree_follows_files_and_prices(tmp_path: Path) -> None:
    """``status`` keeps each unchanged tree's cost and JSON in the index (``derived``) so it neither prices
    nor renders it again. The risk: a stale copy. It must follow a price change in ``llm.yaml``, an
    in-place edit of a dialog's file, and agree with a run that reads every file."""
    ws, ids = _tree_workspace(tmp_path)
    _age_dialog_files(ws, 60)
    first = dominds_json(ws, "status")
    with contextlib.closing(sqlite3.connect(ws / ".dominds" / "cache" / "dialogs.sqlite")) as db:
        kept = db.execute("SELECT count(*) FROM derived WHERE purpose LIKE 'status-json%'").fetchone()[0]
    assert kept == 3, "each settled tree was kept"
    assert dominds_json(ws, "status") == first, "a kept tree reads the same as a computed one"
    cost = _by_id(first)[ids["delegate"]]["usage"]["costUsd"]
    assert cost > 0

    llm = ws / ".minds" / "llm.yaml"
    llm.write_text(llm.read_text().replace("input: 1.0, output: 2.0", "input: 3.0, output: 6.0"))
    repriced = _by_id(dominds_json(ws, "status"))[ids["delegate"]]["usage"]["costUsd"]
    assert repriced == round(cost * 3, 6), "new prices reach kept trees"

    latest = next((ws / ".dialogs" / "run" / ids["delegate"]).glob("latest.yaml"))
    latest.write_text(latest.read_text().replace('title: "delegate"', 'title: "Renamed by hand"', 1))
    _age_dialog_files(ws, 30)
    edited = dominds_json(ws, "status")
    assert _by_id(edited)[ids["delegate"]]["title"] == "Renamed by hand", "an in-place edit reaches a kept tree"
    assert edited["roots"] == dominds_json(ws, "status", "--no-cache")["roots"], "kept and read from the files agree"
    text = dominds(ws, "status")
    assert "Renamed by hand" in text.stdout and "3 trees, 5 dialogs" in text.stdout


def test_a_corrupt_dialog_is_shown_with_its_error(tmp_path: Path) -> None:
    ws, ids = _tree_workspace(tmp_path)
    (ws / ".dialogs" / "run" / ids["delegate"] / "latest.yaml").write_text("currentCourse: [unclosed\n")
    report = _by_id(dominds_json(ws, "status"))
    assert "not valid YAML" in report[ids["delegate"]]["error"]
    assert report[ids["paint"]]["runState"]["kind"] == "blocked", "the others are unaffected"


def test_a_bad_line_in_the_middle_of_a_course_flags_the_dialog_in_status(tmp_path: Path) -> None:
    """Bug: a corrupt course line made the dialog refuse messages, but `dominds status` listed it as fine.
    A torn last line (what a crash leaves) is not an error."""
    ws, ids = _tree_workspace(tmp_path)
    course = ws / ".dialogs" / "run" / ids["delegate"] / "course-001.jsonl"
    lines = course.read_text().splitlines()
    course.write_text("\n".join([lines[0], "garbage in the middle", *lines[1:]]) + "\n")
    paint = ws / ".dialogs" / "run" / ids["paint"] / "course-001.jsonl"
    paint.write_text(paint.read_text() + '{"type": "gen_st')
    report = _by_id(dominds_json(ws, "status"))
    assert "course-001.jsonl:2" in report[ids["delegate"]]["error"]
    assert report[ids["delegate"]]["runState"]["kind"] == "error"
    assert "error" not in report[ids["paint"]], "a torn last line is what a crash leaves, not corruption"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(min_size=1), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1), json_values, max_size=6))
def test_fast_parse_matches_pyyaml_on_everything_fastyaml_writes(data: dict[str, Any]) -> None:
    text = fastyaml.dump(data)
    try:
        fast = parse_fastyaml(text)
    except ValueError:
        fast = "fallback"  # allowed: load_state_yaml then uses PyYAML
    if fast != "fallback":
        assert fast == yaml.safe_load(text)


def test_hand_written_yaml_falls_back_to_pyyaml(tmp_path: Path) -> None:
    path = tmp_path / "latest.yaml"
    path.write_text("# edited by hand\ncurrentCourse: 2\nrunState: {kind: idle}\nnote: plain words here\n")
    assert load_state_yaml(path) == {"currentCourse": 2, "runState": {"kind": "idle"}, "note": "plain words here"}
    assert load_state_yaml(tmp_path / "missing.yaml") is None


def test_status_prices_a_changed_tree_with_the_kept_prices_without_loading_the_configuration(tmp_path: Path) -> None:
    """Bug: a tree changed since the last ``status`` was priced with the catalog, whose loading (YAML and
    the LLM layer's models) cost 0.1-0.4 s, more than all the rest of a run. The prices the last daemon
    or command kept (``driver/price_sheet.py``) are used while they are in force."""
    ws, ids = _tree_workspace(tmp_path)
    assert (ws / ".dominds" / "cache" / "prices.json").is_file(), "`dominds run` kept the prices it used"
    latest = ws / ".dialogs" / "run" / ids["delegate"] / "latest.yaml"
    latest.write_text(latest.read_text().replace('title: "delegate"', 'title: "Renamed"', 1))
    code = (
        "import contextlib, io, json, sys\n"
        "from dominds.cli.main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    main(['status', '--json', '--no-cache'])\n"
        "print(json.dumps({'loaded': 'dominds.llm.catalog_yaml' in sys.modules, 'report': json.loads(out.getvalue())}))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ws, capture_output=True, text=True, timeout=60, env=cli_env())
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert result["loaded"] is False, "priced without the configuration's modules"
    roots = _by_id(result["report"])
    assert roots[ids["delegate"]]["title"] == "Renamed" and roots[ids["delegate"]]["usage"]["costUsd"] > 0

    (ws / ".dominds" / "cache" / "prices.json").unlink()
    assert _by_id(dominds_json(ws, "status", "--no-cache"))[ids["delegate"]]["usage"] == roots[ids["delegate"]]["usage"], (
        "priced as the catalog prices it"
    )
