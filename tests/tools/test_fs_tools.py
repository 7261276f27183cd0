"""ws_read / ws_mod: every path through check_access, member lists, bounded output, safe edits."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from dominds.access import ACCESS_DENIED
from dominds.rtws import Rtws
from dominds.team import Member, Team, load_team
from dominds.tools.base import FuncTool, ToolCallContext, ToolError
from dominds.tools.builtin import builtin_toolsets
from dominds.tools.fs import MAX_LINE_CHARS, parse_line_range
from dominds.tools.fs_edit import WS_MOD_TOOLS

TOOLS: dict[str, FuncTool] = {t.name: t for t in WS_MOD_TOOLS}
SECRET = "secret token\n"


def engine_with(*members: Member) -> Any:
    """The slice of the engine the file tools use: ``engine.config.get().team``."""
    team = Team({m.id: m for m in members}, default_responder=members[0].id)
    return SimpleNamespace(config=SimpleNamespace(get=lambda: SimpleNamespace(team=team)))


def make_ctx(rtws: Rtws, member: Member | None = None) -> ToolCallContext:
    services = {"engine": engine_with(member)} if member else {}
    agent = member.id if member else "coder"
    return ToolCallContext(rtws=rtws, root_id="d1", self_id="d1", agent_id=agent, services=services)


async def call(ctx: ToolCallContext, name: str, **args: Any) -> str:
    jsonschema.validate(args, TOOLS[name].parameters)  # what the driver checks before the handler runs
    return await TOOLS[name].handler(ctx, args)


async def refused(ctx: ToolCallContext, name: str, **args: Any) -> str:
    with pytest.raises(ToolError) as info:
        await call(ctx, name, **args)
    return str(info.value)


@pytest.fixture
def ws(tmp_rtws: Rtws, tmp_path: Path) -> Rtws:
    """A workspace with ordinary files and every area a file tool must stay out of, all holding SECRET."""
    root = tmp_rtws.root
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("def alpha():\n    return 1\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\nalpha beta\n")
    for rel in (
        "tasks/demo.tsk/goals.md",
        "deep/nested/x.TSK/a.md",
        ".dialogs/run/d1/latest.yaml",
        ".minds/team.yaml",
        ".dominds/last-good/.minds/team.yaml",
        ".dominds/cache/dialogs.sqlite",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(SECRET)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (root / "link-out").symlink_to(outside, target_is_directory=True)
    (root / "file-link-out").symlink_to(outside / "secret.txt")
    (root / "docs" / "fallback").symlink_to(root / ".dominds" / "last-good", target_is_directory=True)
    return tmp_rtws


def protected_snapshot(tmp_path: Path) -> dict[str, str]:
    """Content hash of every file in the protected areas (and outside), to prove nothing changed."""
    root = tmp_path / "ws"
    places = [tmp_path / "outside", root / "tasks", root / "deep", root / ".dialogs", root / ".minds", root / ".dominds"]
    snapshot: dict[str, str] = {}
    for place in places:
        for path in sorted(place.rglob("*")):
            if path.is_file():
                snapshot[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                snapshot[str(path)] = "dir"
    return snapshot


# (file path, directory path) per forbidden area; absolute ones are filled in from tmp_path.
FORBIDDEN = {
    "dotdot": ("../outside/secret.txt", "../outside"),
    "absolute_outside": ("{outside}/secret.txt", "{outside}"),
    "symlinked_dir_outside": ("link-out/secret.txt", "link-out"),
    "symlinked_file_outside": ("file-link-out", "link-out"),
    "taskdoc": ("tasks/demo.tsk/goals.md", "tasks/demo.tsk"),
    "nested_taskdoc_upper_case": ("deep/nested/x.TSK/a.md", "deep/nested/x.TSK"),
    "dialogs": (".dialogs/run/d1/latest.yaml", ".dialogs/run"),
    "minds": (".minds/team.yaml", ".minds"),
    # The copy of the team configuration the daemon falls back to: rewriting it chose the next fallback's
    # toolsets (a coder gave the lead `os`), providers (`baseUrl`) and MCP commands.
    "dominds_last_good": (".dominds/last-good/.minds/team.yaml", ".dominds/last-good/.minds"),
    "dominds_state_upper_case": (".DOMINDS/cache/dialogs.sqlite", ".Dominds/cache"),
    "symlink_into_dominds": ("docs/fallback/.minds/team.yaml", "docs/fallback/.minds"),
}

CALLS: dict[str, tuple[str, Callable[[str, str], dict[str, Any]]]] = {
    "list_dir": ("list_dir", lambda f, d: {"path": d}),
    "read_file": ("read_file", lambda f, d: {"path": f}),
    "search_files": ("search_files", lambda f, d: {"pattern": "secret", "path": d}),
    "create_new_file": ("create_new_file", lambda f, d: {"path": f"{d}/new.txt", "content": "x"}),
    "overwrite_entire_file": (
        "overwrite_entire_file",
        lambda f, d: {"path": f, "known_old_total_lines": 1, "known_old_total_bytes": 13, "content": "pwned"},
    ),
    "replace_in_file": ("replace_in_file", lambda f, d: {"path": f, "old": "secret", "new": "pwned"}),
    "append_to_file": ("append_to_file", lambda f, d: {"path": f, "content": "pwned", "create": True}),
    "mk_dir": ("mk_dir", lambda f, d: {"path": f"{d}/sub", "parents": True}),
    "move_file_from": ("move_file", lambda f, d: {"from": f, "to": "moved.txt"}),
    "move_file_to": ("move_file", lambda f, d: {"from": "src/a.py", "to": f"{d}/stolen.py"}),
    "rm_file": ("rm_file", lambda f, d: {"path": f}),
    "rm_dir": ("rm_dir", lambda f, d: {"path": d, "recursive": True}),
}


@pytest.mark.parametrize("area", sorted(FORBIDDEN))
@pytest.mark.parametrize("operation", sorted(CALLS))
async def test_every_file_tool_refuses_every_forbidden_area(
    ws: Rtws, tmp_path: Path, operation: str, area: str
) -> None:
    tool_name, make_args = CALLS[operation]
    file_path, dir_path = (p.format(outside=tmp_path / "outside") for p in FORBIDDEN[area])
    before = protected_snapshot(tmp_path)
    message = await refused(make_ctx(ws), tool_name, **make_args(file_path, dir_path))
    assert f"Code: `{ACCESS_DENIED}`" in message and "Hint:" in message
    assert protected_snapshot(tmp_path) == before
    assert (ws.root / "src" / "a.py").is_file() and not (ws.root / "moved.txt").exists()


async def test_denial_text_names_the_way_in(ws: Rtws) -> None:
    ctx = make_ctx(ws)
    assert "recall_taskdoc" in await refused(ctx, "read_file", path="tasks/demo.tsk/goals.md")
    assert "team-mgmt" in await refused(ctx, "read_file", path=".minds/team.yaml")
    assert "outside the workspace" in await refused(ctx, "read_file", path="../outside/secret.txt")


async def test_listing_and_search_leave_forbidden_areas_out(ws: Rtws) -> None:
    ctx = make_ctx(ws)
    listing = await call(ctx, "list_dir")
    assert "src/" in listing and "tasks/" in listing
    for hidden in (".dialogs", ".minds", ".dominds", "link-out", "file-link-out"):
        assert hidden not in listing
    assert "[5 entries not shown: not accessible to you]" in listing
    assert "fallback" not in await call(ctx, "list_dir", path="docs"), "a link into .dominds/ is not listed"
    assert "demo.tsk" not in await call(ctx, "list_dir", path="tasks")
    assert (await call(ctx, "search_files", pattern="secret")).startswith("No matches for 'secret'")
    (ws.root / "docs" / "notes.md").write_text("a secret here\n")
    found = await call(ctx, "search_files", pattern="secret")
    assert found.splitlines()[0] == "docs/notes.md:1: a secret here"
    assert "1 matches in 1 files" in found


async def test_recursive_rm_dir_refuses_a_tree_holding_a_taskdoc(ws: Rtws) -> None:
    message = await refused(make_ctx(ws), "rm_dir", path="tasks", recursive=True)
    assert "Taskdoc package" in message
    assert (ws.root / "tasks" / "demo.tsk" / "goals.md").read_text() == SECRET


async def test_nested_dialogs_directory_is_ordinary_data(ws: Rtws) -> None:
    ctx = make_ctx(ws)
    await call(ctx, "create_new_file", path="fixtures/.dialogs/x.txt", content="ok")
    assert "ok" in await call(ctx, "read_file", path="fixtures/.dialogs/x.txt")


# ------------------------------------------------------------------------------ member allow/deny lists

CODER = Member(
    id="coder",
    name="Coder",
    write_dirs=("src", "docs"),
    no_read_dirs=(".env",),
    no_write_dirs=(".env", "docs/locked"),
)


async def test_member_deny_lists_apply_to_reads_listings_and_searches(ws: Rtws) -> None:
    (ws.root / ".env").write_text("API_KEY=secret\n")
    ctx = make_ctx(ws, CODER)
    assert "no_read_dirs" in await refused(ctx, "read_file", path=".env")
    assert ".env" not in await call(ctx, "list_dir")
    assert (await call(ctx, "search_files", pattern="API_KEY")).startswith("No matches for 'API_KEY'")
    # without the member's lists the same file is readable: the denial came from the list
    assert "API_KEY=secret" in await call(make_ctx(ws), "read_file", path=".env")


async def test_member_write_scope_and_write_deny(ws: Rtws) -> None:
    ctx = make_ctx(ws, CODER)
    await call(ctx, "create_new_file", path="src/b.py", content="x = 2")
    assert (ws.root / "src" / "b.py").read_text() == "x = 2\n"
    assert "outside your write scope" in await refused(ctx, "create_new_file", path="README.md", content="x")
    assert "no_write_dirs" in await refused(ctx, "create_new_file", path="docs/locked/a.md", content="x")
    assert "outside your write scope" in await refused(ctx, "move_file", **{"from": "src/a.py", "to": "a.py"})
    assert not (ws.root / "README.md").exists() and (ws.root / "src" / "a.py").exists()
    # the allow list covers `src` itself, though not its parent: removing the whole scope is allowed
    await call(ctx, "rm_dir", path="src", recursive=True)
    assert not (ws.root / "src").exists()


async def test_write_only_access_does_not_leak_content_through_edits(ws: Rtws) -> None:
    member = Member(id="coder", name="Coder", no_read_dirs=("docs",))
    ctx = make_ctx(ws, member)
    for name, args in (
        ("replace_in_file", {"path": "docs/guide.md", "old": "alpha", "new": "x"}),
        (
            "overwrite_entire_file",
            {"path": "docs/guide.md", "known_old_total_lines": 0, "known_old_total_bytes": 0, "content": ""},
        ),
        ("append_to_file", {"path": "docs/guide.md", "content": "x"}),
    ):
        assert "no_read_dirs" in await refused(ctx, name, **args)
    assert (ws.root / "docs" / "guide.md").read_text() == "# Guide\nalpha beta\n"


async def test_a_symlinked_parent_cannot_carry_a_delete_around_a_deny_pattern(ws: Rtws) -> None:
    root = ws.root
    (root / "vault").mkdir()
    (root / "vault" / "link").symlink_to(root / "docs" / "guide.md")
    (root / "alias").symlink_to(root / "vault", target_is_directory=True)
    ctx = make_ctx(ws, Member(id="coder", name="Coder", no_write_dirs=("vault",)))
    # written path (alias/link) and target (docs/guide.md) are both fine; the link itself lives in vault/
    assert "no_write_dirs" in await refused(ctx, "rm_file", path="alias/link")
    assert "no_write_dirs" in await refused(ctx, "move_file", **{"from": "alias/link", "to": "x"})
    assert (root / "vault" / "link").is_symlink()


async def test_rm_file_removes_a_symlink_not_its_target(ws: Rtws) -> None:
    (ws.root / "guide-link").symlink_to(ws.root / "docs" / "guide.md")
    await call(make_ctx(ws), "rm_file", path="guide-link")
    assert not (ws.root / "guide-link").is_symlink()
    assert (ws.root / "docs" / "guide.md").is_file()


# ------------------------------------------------------------------------------------------ read_file


def test_range_syntax() -> None:
    assert parse_line_range("10~50") == (10, 50)
    assert parse_line_range("300~") == (300, None)
    assert parse_line_range("~20") == (1, 20)
    assert parse_line_range("~") == (1, None)
    assert parse_line_range(None) == (1, None)
    assert parse_line_range("7") == (7, 7)
    for bad in ("5~2", "0~3", "a~b", "1-5"):
        with pytest.raises(ToolError):
            parse_line_range(bad)


async def test_read_file_ranges_line_numbers_and_continuation(ws: Rtws) -> None:
    content = "".join(f"line {n}\n" for n in range(1, 1201))
    (ws.root / "big.txt").write_text(content)
    assert len(content) == 10893
    ctx = make_ctx(ws)
    first = await call(ctx, "read_file", path="big.txt")
    lines = first.splitlines()
    assert lines[0] == "big.txt: lines 1~500 of 1200 (1200 lines, 10893 bytes)"
    assert lines[1] == "     1 | line 1" and lines[500] == "   500 | line 500"
    assert lines[-1] == '[… stopped at max_lines; continue with range "501~"]'
    window = (await call(ctx, "read_file", path="big.txt", range="1199~", show_linenos=False)).splitlines()
    assert window == ["big.txt: lines 1199~1200 of 1200 (1200 lines, 10893 bytes)", "line 1199", "line 1200"]
    short = (await call(ctx, "read_file", path="big.txt", range="~3", max_lines=2)).splitlines()
    assert short[1:] == [
        "     1 | line 1",
        "     2 | line 2",
        '[… stopped at max_lines; continue with range "3~"]',
    ]
    assert "starts after the end" in await refused(ctx, "read_file", path="big.txt", range="5000~")


async def test_read_file_bounds_long_lines_and_refuses_binary_and_directories(ws: Rtws) -> None:
    ctx = make_ctx(ws)
    (ws.root / "min.js").write_text("x" * 50_000)
    text = await call(ctx, "read_file", path="min.js")
    assert len(text) < MAX_LINE_CHARS + 200 and "[48000 more chars]" in text
    (ws.root / "blob.bin").write_bytes(b"\x89PNG\0\0\x01")
    assert "binary file" in await refused(ctx, "read_file", path="blob.bin")
    assert "is a directory; use list_dir" in await refused(ctx, "read_file", path="src")
    (ws.root / "empty.txt").write_text("")
    assert await call(ctx, "read_file", path="empty.txt") == "empty.txt: empty file (0 lines, 0 bytes)"


async def test_a_fifo_is_neither_read_nor_searched(ws: Rtws) -> None:
    os.mkfifo(ws.root / "src" / "pipe")  # opening it for reading would block until a writer appears
    ctx = make_ctx(ws)
    assert "not a regular file" in await refused(ctx, "read_file", path="src/pipe")
    assert (await call(ctx, "search_files", pattern="alpha", path="src")).startswith("src/a.py:1:")


async def test_read_file_reports_a_missing_file(ws: Rtws) -> None:
    assert "No such file" in await refused(make_ctx(ws), "read_file", path="nope.txt")


# --------------------------------------------------------------------------------------- search_files


async def test_search_regex_literal_case_glob_and_limits(ws: Rtws) -> None:
    ctx = make_ctx(ws)
    root = ws.root
    (root / "src" / "b.ts").write_text("const Alpha = 1;\nalpha(2)\n")
    (root / "src" / "data.bin").write_bytes(b"alpha\0\0")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("alpha\n")
    regex = await call(ctx, "search_files", pattern=r"def \w+\(")
    assert regex.splitlines()[0] == "src/a.py:1: def alpha():"
    assert "alpha(" in (await call(ctx, "search_files", pattern="alpha(", fixed_strings=True))
    assert "invalid regular expression" in await refused(ctx, "search_files", pattern="alpha(")
    sensitive = await call(ctx, "search_files", pattern="Alpha")
    assert sensitive.splitlines()[:-1] == ["src/b.ts:1: const Alpha = 1;"]
    insensitive = await call(ctx, "search_files", pattern="alpha", case_sensitive=False, glob="*.ts")
    assert insensitive.splitlines()[:-1] == ["src/b.ts:1: const Alpha = 1;", "src/b.ts:2: alpha(2)"]
    everything = await call(ctx, "search_files", pattern="alpha")
    assert ".git" not in everything and "data.bin" not in everything and "1 binary skipped" in everything
    limited = await call(ctx, "search_files", pattern="alpha", max_results=2)
    assert len(limited.splitlines()) == 3 and "stopped at max_results=2" in limited
    in_dir = await call(ctx, "search_files", pattern="alpha", path="docs", glob="**/*.md")
    assert in_dir.splitlines()[:-1] == ["docs/guide.md:2: alpha beta"]


# ------------------------------------------------------------------------------------------- ws_mod


async def test_create_new_file_refuses_existing_and_adds_a_final_newline(ws: Rtws) -> None:
    ctx = make_ctx(ws)
    result = await call(ctx, "create_new_file", path="pkg/sub/mod.py", content="a = 1")
    assert result.splitlines() == ["ok: created", "path: pkg/sub/mod.py", "total_lines: 1", "total_bytes: 6"]
    assert (ws.root / "pkg" / "sub" / "mod.py").read_text() == "a = 1\n"
    assert "already exists" in await refused(ctx, "create_new_file", path="src/a.py", content="gone")
    assert (ws.root / "src" / "a.py").read_text() == "def alpha():\n    return 1\n"


async def test_overwrite_refuses_stale_stats_and_keeps_the_mode(ws: Rtws) -> None:
    ctx = make_ctx(ws)
    script = ws.root / "run.sh"
    script.write_text("#!/bin/sh\necho one\n")
    script.chmod(0o755)
    header = (await call(ctx, "read_file", path="run.sh")).splitlines()[0]
    assert header.endswith("(2 lines, 19 bytes)")
    script.write_text("#!/bin/sh\necho one\necho two\n")  # someone edits after our read
    stale = await refused(
        ctx,
        "overwrite_entire_file",
        path="run.sh",
        known_old_total_lines=2,
        known_old_total_bytes=19,
        content="x",
    )
    assert "now has 3 lines and 28 bytes" in stale
    assert script.read_text().endswith("echo two\n")
    result = await call(
        ctx,
        "overwrite_entire_file",
        path="run.sh",
        known_old_total_lines=3,
        known_old_total_bytes=28,
        content="#!/bin/sh\necho new",
    )
    assert "total_lines: 2" in result
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert script.stat().st_mode & 0o777 == 0o755
    assert not [p for p in ws.root.iterdir() if p.name.endswith(".tmp")]  # the atomic write left no temp file
    assert "use create_new_file" in await refused(
        ctx,
        "overwrite_entire_file",
        path="none.txt",
        known_old_total_lines=0,
        known_old_total_bytes=0,
        content="",
    )


async def test_replace_in_file_needs_a_unique_match_unless_count_is_given(ws: Rtws) -> None:
    ctx = make_ctx(ws)
    (ws.root / "c.txt").write_text("a = 1\nb = 1\nc = 1\n")
    assert "does not occur" in await refused(ctx, "replace_in_file", path="c.txt", old="d = 1", new="x")
    ambiguous = await refused(ctx, "replace_in_file", path="c.txt", old="= 1", new="= 2")
    assert "occurs 3 times" in ambiguous and "lines 1, 2, 3" in ambiguous
    assert "fewer than count=4" in await refused(
        ctx, "replace_in_file", path="c.txt", old="= 1", new="= 2", count=4
    )
    assert (ws.root / "c.txt").read_text() == "a = 1\nb = 1\nc = 1\n"
    (ws.root / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    assert "CRLF" in await refused(ctx, "replace_in_file", path="dos.txt", old="one\ntwo", new="x")
    result = await call(ctx, "replace_in_file", path="c.txt", old="b = 1", new="b = 20")
    assert "at_old_lines:\n- 2" in result
    await call(ctx, "replace_in_file", path="c.txt", old="= 1", new="= 3", count=2)
    assert (ws.root / "c.txt").read_text() == "a = 3\nb = 20\nc = 3\n"


async def test_append_mk_dir_move_and_remove(ws: Rtws) -> None:
    ctx = make_ctx(ws)
    root = ws.root
    (root / "log.txt").write_text("first")  # no final newline: the append must not glue onto it
    await call(ctx, "append_to_file", path="log.txt", content="second")
    assert (root / "log.txt").read_text() == "first\nsecond\n"
    assert "create=true" in await refused(ctx, "append_to_file", path="new.txt", content="x")
    await call(ctx, "append_to_file", path="new.txt", content="x", create=True)
    assert (root / "new.txt").read_text() == "x\n"

    assert "parents=true" in await refused(ctx, "mk_dir", path="a/b/c")
    await call(ctx, "mk_dir", path="a/b/c", parents=True)
    assert (root / "a" / "b" / "c").is_dir()
    assert "already exists" in await refused(ctx, "mk_dir", path="a")

    assert "already exists" in await refused(ctx, "move_file", **{"from": "new.txt", "to": "log.txt"})
    assert "is a directory" in await refused(ctx, "move_file", **{"from": "a", "to": "z"})
    await call(ctx, "move_file", **{"from": "new.txt", "to": "a/b/moved.txt"})
    assert (root / "a" / "b" / "moved.txt").read_text() == "x\n" and not (root / "new.txt").exists()

    assert "use rm_dir" in await refused(ctx, "rm_file", path="a")
    assert "not empty" in await refused(ctx, "rm_dir", path="a")
    await call(ctx, "rm_file", path="a/b/moved.txt")
    assert "entries_inside: 2" in await call(ctx, "rm_dir", path="a", recursive=True)
    assert not (root / "a").exists()
    for name, args in (("rm_dir", {"path": ".", "recursive": True}), ("rm_dir", {"path": "src/.."})):
        assert "workspace root" in await refused(ctx, name, **args)
    assert (root / "src" / "a.py").exists()


# --------------------------------------------------------------------------------------- registration


def test_builtin_toolsets_exist_and_the_template_team_loads_cleanly(tmp_path: Path) -> None:
    read_tools = builtin_toolsets().get("ws_read")
    mod_tools = builtin_toolsets().get("ws_mod")
    assert read_tools is not None and mod_tools is not None
    assert [t.name for t in read_tools] == ["list_dir", "read_file", "search_files", "read_picture"]
    assert {t.name for t in read_tools} < {t.name for t in mod_tools}
    for tool in mod_tools:
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
        assert tool.parameters["additionalProperties"] is False
    template = Path(__file__).resolve().parents[2] / "rtws-template"
    shutil.copytree(template / ".minds", tmp_path / "ws" / ".minds")
    _, problems = load_team(Rtws(tmp_path / "ws"), builtin_toolsets())
    assert not [p for p in problems if "toolset" in p.message]


def test_fixture_symlinks_really_point_outside(ws: Rtws, tmp_path: Path) -> None:
    # guards the security tests above: they are only meaningful if the links resolve outside the rtws
    assert os.path.realpath(ws.root / "link-out") == str((tmp_path / "outside").resolve())
    assert (ws.root / "file-link-out").read_text() == SECRET


async def test_hard_links_to_a_taskdoc_or_outside_are_refused(ws: Rtws, tmp_path: Path) -> None:
    """Bug: read_file and search_files read through hard links: a link in the workspace to a Taskdoc file,
    or to a file outside the workspace, exposed it. A hard-linked file is refused (reads and writes)."""
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("outside secret\n")
    os.link(ws.root / "tasks" / "demo.tsk" / "goals.md", ws.root / "docs" / "goals-link.md")
    os.link(outside, ws.root / "docs" / "outside-link.txt")
    ctx = make_ctx(ws)
    for name in ("goals-link.md", "outside-link.txt"):
        message = await refused(ctx, "read_file", path=f"docs/{name}")
        assert "hard-linked" in message
    found = await call(ctx, "search_files", pattern="secret")
    assert "outside secret" not in found and SECRET.strip() not in found
    message = await refused(ctx, "append_to_file", path="docs/outside-link.txt", content="overwrite")
    assert "hard-linked" in message and outside.read_text() == "outside secret\n"
