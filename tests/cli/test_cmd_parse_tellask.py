"""`dominds parse-tellask`: the real command, run as a subprocess on stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dominds.tellask_events import tellask_call_id

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_parse_tellask(stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "dominds", "parse-tellask"],
        input=stdin,
        capture_output=True,
        cwd=REPO_ROOT,
        timeout=30,
        check=False,
    )


def test_prints_one_json_array_of_segments() -> None:
    done = run_parse_tellask(b"!?@pangu do it\n!?now\n")
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    call_id = tellask_call_id("pangu", "@pangu do it\n", "now\n", 0)
    expected = (
        '[{"kind":"tellask","headline":"@pangu do it\\n","body":"now\\n","firstMention":"pangu",'
        f'"mentions":["pangu"],"tellaskSession":null,"error":null,"callId":"{call_id}"}}]\n'
    )
    assert done.stdout.decode("utf-8") == expected


def test_markdown_unicode_sessions_and_errors() -> None:
    text = "计划如下：\r\n!?@盘古 @pangu !tellaskSession env.check_1\n!?细节\n\n!?oops\n"
    done = run_parse_tellask(text.encode("utf-8"))
    assert done.returncode == 0, done.stderr
    assert "盘古".encode() in done.stdout  # ensure_ascii=False: no \\u escapes
    segments = json.loads(done.stdout)
    assert [s["kind"] for s in segments] == ["markdown", "tellask", "markdown", "tellask"]
    assert segments[0]["text"] == "计划如下：\r\n"
    assert segments[1]["firstMention"] == "盘古"
    assert segments[1]["mentions"] == ["盘古", "pangu"]
    assert segments[1]["tellaskSession"] == "env.check_1"
    assert segments[1]["body"] == "细节\n"
    assert segments[2]["text"] == "\n"
    assert segments[3]["error"] == "missing_mention_prefix"
    assert segments[3]["firstMention"] is None
    assert segments[3]["callId"] == tellask_call_id(None, "oops\n", "", 1)


def test_empty_and_undecodable_input_do_not_fail() -> None:
    empty = run_parse_tellask(b"")
    assert (empty.returncode, json.loads(empty.stdout)) == (0, [])
    broken = run_parse_tellask(b"!?@a \xff\xfe\x00\n")
    assert broken.returncode == 0, broken.stderr
    [call] = json.loads(broken.stdout)
    assert call["headline"] == "@a \ufffd\ufffd\x00\n"
    assert call["firstMention"] == "a"
