"""The one path check used by every general file tool: rtws containment, encapsulated areas, globs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from dominds.access import ACCESS_DENIED, AccessDenied, check_access, is_taskdoc_path, matches_pattern


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (workspace / "docs").mkdir()
    return workspace


def denial(
    root: Path,
    path: str,
    *,
    write: bool = False,
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    minds_bypass: bool = False,
) -> AccessDenied:
    with pytest.raises(AccessDenied) as info:
        check_access(root, path, write=write, allow=allow, deny=deny, minds_bypass=minds_bypass)
    assert info.value.code == ACCESS_DENIED
    return info.value


# --- resolution -------------------------------------------------------------------------------------


def test_relative_path_resolves_inside(root: Path) -> None:
    assert check_access(root, "src/pkg/mod.py", write=False) == (root / "src/pkg/mod.py").resolve()
    assert (
        check_access(root, "new/file.txt", write=True) == (root / "new/file.txt").resolve()
    )  # need not exist
    assert check_access(root, "", write=False) == root.resolve()
    assert check_access(root, ".", write=False) == root.resolve()


def test_dotdot_inside_is_fine_but_escaping_is_refused(root: Path) -> None:
    assert check_access(root, "src/../docs/a.md", write=False) == (root / "docs/a.md").resolve()
    for path in ("..", "../ws-other/x", "src/../../x", "src/pkg/../../../etc/passwd"):
        error = denial(root, path)
        assert error.reason == "outside_rtws"
        assert "outside the workspace" in error.message and "`..`" in error.hint


def test_absolute_paths(root: Path) -> None:
    inside = str(root / "src" / "pkg" / "mod.py")
    assert check_access(root, inside, write=True) == Path(inside).resolve()
    assert denial(root, "/etc/passwd").reason == "outside_rtws"
    assert denial(root, str(root.parent / "ws2" / "x")).reason == "outside_rtws"  # prefix, not a parent


def test_root_given_through_a_symlink(root: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    assert check_access(alias, "src/pkg/mod.py", write=False) == (root / "src/pkg/mod.py").resolve()
    assert check_access(alias, str(alias / "docs"), write=False) == (root / "docs").resolve()
    assert check_access(alias, str(root / "docs"), write=False) == (root / "docs").resolve()


def test_symlink_pointing_outside_is_refused(root: Path, tmp_path: Path) -> None:
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    (secret_dir / "key.txt").write_text("k")
    (root / "escape").symlink_to(secret_dir)
    (root / "docs" / "key-link.txt").symlink_to(secret_dir / "key.txt")
    for path in ("escape", "escape/key.txt", "docs/key-link.txt", str(root / "escape" / "new.txt")):
        error = denial(root, path, write=True)
        assert error.reason == "symlink_outside"
        assert "through a symlink" in error.message


def test_symlink_inside_rtws_resolves_to_its_target(root: Path) -> None:
    (root / "docs" / "mod-link.py").symlink_to(root / "src" / "pkg" / "mod.py")
    assert check_access(root, "docs/mod-link.py", write=False) == (root / "src/pkg/mod.py").resolve()


def test_symlink_loop_is_a_denial_not_a_crash(root: Path) -> None:
    """A loop made `Path.resolve()` raise up to Python 3.12; on 3.13 it returns the path with the loop
    in it, which passed the access check (the bug: a loop was allowed on 3.13)."""
    (root / "loop-a").symlink_to(root / "loop-b")
    (root / "loop-b").symlink_to(root / "loop-a")
    assert denial(root, "loop-a/x").reason == "unresolvable"


def test_nul_byte_is_refused(root: Path) -> None:
    assert denial(root, "src/a\0b").reason == "invalid_path"


# --- encapsulated areas -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "auth.tsk",
        "auth.tsk/",
        "auth.tsk/goals.md",
        "tasks/auth.tsk/bearinmind/risks.md",
        "a/b/X.TSK/c",
        ".tsk",
    ],
)
def test_taskdoc_segment_anywhere_is_denied(root: Path, path: str) -> None:
    for write in (False, True):
        error = denial(root, path, write=write)
        assert error.reason == "taskdoc"
        assert "change_mind" in error.hint and "recall_taskdoc" in error.hint


def test_taskdoc_denial_beats_allow_list(root: Path) -> None:
    error = denial(root, "tasks/auth.tsk/goals.md", allow=["**/*.tsk/**", "tasks"])
    assert error.reason == "taskdoc"


def test_names_merely_containing_tsk_are_fine(root: Path) -> None:
    for path in ("tsk/notes.md", "my.tsk.bak/x", "a.tskx", "docs/auth.tsk.md"):
        check_access(root, path, write=True)


def test_symlink_into_a_taskdoc_is_denied(root: Path) -> None:
    package = root / "tasks" / "auth.tsk"
    package.mkdir(parents=True)
    (package / "goals.md").write_text("g")
    (root / "docs" / "goals-link.md").symlink_to(package / "goals.md")
    (root / "pkg-link").symlink_to(package)
    assert denial(root, "docs/goals-link.md").reason == "taskdoc"
    assert denial(root, "pkg-link/goals.md", write=True).reason == "taskdoc"


def test_dialogs_denied_only_at_rtws_root(root: Path) -> None:
    for path in (".dialogs", ".dialogs/run/aa/bb/cccc/latest.yaml", "./.dialogs/x", "src/../.dialogs"):
        error = denial(root, path)
        assert error.reason == "dialogs"
    assert check_access(root, "sub/.dialogs/run/x", write=True) == (root / "sub/.dialogs/run/x").resolve()
    (root / "innocent").symlink_to(root / ".dialogs", target_is_directory=True)
    assert denial(root, "innocent/run").reason == "dialogs"


def test_the_daemon_token_file_is_denied_to_every_file_tool(root: Path) -> None:
    """Issue 18: the token now lives in the workspace across restarts; no agent may read it."""
    (root / ".dominds").mkdir(exist_ok=True)
    for path in (".dominds/auth-token", "./.dominds/AUTH-TOKEN", "src/../.dominds/auth-token"):
        assert denial(root, path).reason == "secret"
    (root / "alias").symlink_to(root / ".dominds", target_is_directory=True)
    assert denial(root, "alias/auth-token").reason == "secret"
    # Issue 34: the rest of `.dominds/` is the daemon's state too (it held the last good team configuration
    # the daemon falls back to, readable and writable by agents): denied, also to the `.minds` bypass.
    for path in (".dominds/cache", ".dominds/last-good/.minds/team.yaml", "alias/last-good/.minds/llm.yaml"):
        assert denial(root, path).reason == "daemon_state"
        assert denial(root, path, write=True, minds_bypass=True).reason == "daemon_state"


def test_minds_needs_the_bypass(root: Path) -> None:
    error = denial(root, ".minds/team.yaml", write=True)
    assert error.reason == "minds" and "team_mgmt" in error.hint
    assert denial(root, ".MINDS/team.yaml").reason == "minds"
    path = check_access(root, ".minds/team.yaml", write=True, minds_bypass=True)
    assert path == (root / ".minds/team.yaml").resolve()
    assert check_access(root, "sub/.minds/x", write=False) == (root / "sub/.minds/x").resolve()


def test_bypass_does_not_open_taskdocs_or_dialogs(root: Path) -> None:
    assert denial(root, ".minds/x.tsk/goals.md", minds_bypass=True).reason == "taskdoc"
    assert denial(root, ".dialogs/run", minds_bypass=True).reason == "dialogs"


# --- allow / deny lists -----------------------------------------------------------------------------


def test_empty_allow_list_allows_everything(root: Path) -> None:
    assert check_access(root, "anything/at/all", write=True, allow=[]) == (root / "anything/at/all").resolve()


def test_allow_list_limits_scope(root: Path) -> None:
    assert (
        check_access(root, "src/pkg/mod.py", write=True, allow=["src"]) == (root / "src/pkg/mod.py").resolve()
    )
    error = denial(root, "docs/a.md", write=True, allow=["src", "tests/**"])
    assert error.reason == "not_allowed"
    assert "write scope" in error.message
    assert error.hint == "Your write scope is: `src`, `tests/**`."


def test_deny_is_checked_before_allow(root: Path) -> None:
    error = denial(root, "src/pkg/mod.py", allow=["src"], deny=["src/pkg"])
    assert error.reason == "denied_by_pattern"
    assert "`src/pkg`" in error.message and "no_read_dirs" in error.message
    assert check_access(root, "src/other.py", write=False, allow=["src"], deny=["src/pkg"])


def test_deny_pattern_applies_to_symlink_target_and_to_the_link(root: Path) -> None:
    (root / "docs" / "mod-link.py").symlink_to(root / "src" / "pkg" / "mod.py")
    assert denial(root, "docs/mod-link.py", deny=["src/pkg"]).reason == "denied_by_pattern"
    assert denial(root, "docs/mod-link.py", deny=["docs"]).reason == "denied_by_pattern"


def test_allow_list_is_judged_on_the_real_target(root: Path) -> None:
    (root / "src" / "docs-link").symlink_to(root / "docs", target_is_directory=True)
    assert denial(root, "src/docs-link/a.md", write=True, allow=["src"]).reason == "not_allowed"


# --- glob semantics ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("src", "src", True),
        ("src", "src/a/b.py", True),  # plain dir pattern covers everything below
        ("src", "src-old/x", False),  # ...but not a sibling sharing the prefix
        ("src", "lib/src", False),
        ("src/", "src/a", True),
        ("src/**", "src", True),  # trailing /** adds nothing
        ("src/**", "src/a/b", True),
        ("src/**/**", "src/a", True),
        ("src/tools", "src/tools/fs.py", True),
        ("src/tools", "src/other/fs.py", False),
        ("*", "anything/deep", True),
        ("src/*", "src", False),  # `*` needs one segment
        ("src/*", "src/a", True),
        ("src/*/x", "src/a/x", True),
        ("src/*/x", "src/a/b/x", False),  # `*` never spans two segments
        ("src/**/x", "src/x", True),  # `**` may be zero segments
        ("src/**/x", "src/a/b/x/y", True),
        ("**/*secret*", "a/my-secret-dir/file", True),  # any single segment, at any depth
        ("**/*secret*", "secret.txt", True),
        ("**/*secret*", "a/b/c", False),
        ("*.md", "README.md", True),
        ("*.md", "docs/README.md", False),
        ("**/*.md", "docs/README.md", True),
        ("**", "x", True),
        (".", "x", True),
        ("", "x", True),
        ("docs", ".", False),
        ("./docs", "docs/a", True),
        ("/docs/", "docs/a", True),
        ("Docs", "docs/a", False),  # case-sensitive, like the filesystem
    ],
)
def test_matches_pattern(pattern: str, path: str, expected: bool) -> None:
    assert matches_pattern(path, pattern) is expected


def test_is_taskdoc_path() -> None:
    assert is_taskdoc_path("a/b.tsk/c.md")
    assert is_taskdoc_path("b.tsk")
    assert is_taskdoc_path("a\\B.TSK\\c")
    assert is_taskdoc_path("**/*.tsk/**")  # team config can flag allow patterns aimed at packages
    assert not is_taskdoc_path("a/b.tsk.md")
    assert not is_taskdoc_path("tsk/x")


# --- how a denial reads ----------------------------------------------------------------------------


def test_render_english_and_chinese(root: Path) -> None:
    error = denial(root, "tasks/a.tsk/goals.md", write=True)
    english = error.render()
    assert english.startswith("❌ **Access Denied**\n")
    assert "- Operation: `write`" in english and "- Path: `tasks/a.tsk/goals.md`" in english
    assert "- Code: `ACCESS_DENIED`" in english and "change_mind" in english
    chinese = error.render("zh")
    assert chinese.startswith("❌ **访问被拒绝**\n")
    assert "差遣牒包" in chinese and "- 代码: `ACCESS_DENIED`" in chinese and "recall_taskdoc" in chinese
    assert str(error) == f"{error.message}. {error.hint}"
