"""Taskdoc packages: path rules, loading with layout notes, rendering, change_mind/recall_taskdoc, discovery."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from dominds import taskdoc as taskdoc_module
from dominds import taskdoc_discovery, taskdoc_sections
from dominds.store.errors import WriteFailedError
from dominds.taskdoc import (
    BEARINMIND_SECTIONS,
    Taskdoc,
    TaskdocError,
    TaskdocNote,
    load_taskdoc,
    normalize_taskdoc_path,
)
from dominds.taskdoc_discovery import discover_taskdocs, taskdoc_fingerprint
from dominds.taskdoc_render import describe_note, render_effective_taskdoc
from dominds.taskdoc_sections import read_section, section_file, write_section

PKG = "tasks/auth.tsk"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def put(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def note_pairs(doc: Taskdoc) -> set[tuple[str, str]]:
    return {(note.kind, note.where) for note in doc.notes}


# --- normalize_taskdoc_path ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("tasks/auth.tsk", "tasks/auth.tsk"),
        ("tasks/auth.tsk/", "tasks/auth.tsk"),
        ("./tasks//auth.tsk", "tasks/auth.tsk"),
        ("tasks\\auth.tsk", "tasks/auth.tsk"),
        ("  top.tsk  ", "top.tsk"),
    ],
)
def test_normalize_accepts_and_canonicalises(given: str, expected: str) -> None:
    assert normalize_taskdoc_path(given) == expected


@pytest.mark.parametrize(
    ("given", "complaint"),
    [
        ("", "empty"),
        ("/abs/x.tsk", "absolute"),
        ("C:/x.tsk", "absolute"),
        ("../x.tsk", "'..'"),
        ("a/../../x.tsk", "'..'"),
        ("tasks/auth", "ending in '.tsk'"),
        ("tasks/.tsk", "ending in '.tsk'"),
        ("tasks/auth.tsk.md", "ending in '.tsk'"),
        (".", "workspace root"),
        ("outer.tsk/inner.tsk", "nested"),
        (".dialogs/x.tsk", ".dialogs"),
        ("a\0b.tsk", "NUL"),
    ],
)
def test_normalize_refuses_with_reason(given: str, complaint: str) -> None:
    with pytest.raises(TaskdocError) as info:
        normalize_taskdoc_path(given)
    assert complaint in str(info.value)


# --- section rules (change_mind argument validation) ------------------------------------------------


@pytest.mark.parametrize("selector", ["goals", "constraints", "progress"])
def test_top_sections_need_no_category(selector: str) -> None:
    assert section_file(selector) == f"{selector}.md"
    assert section_file(selector, "") == f"{selector}.md"  # models often send an empty category


@pytest.mark.parametrize("selector", BEARINMIND_SECTIONS)
def test_bearinmind_whitelist(selector: str) -> None:
    assert section_file(selector, "bearinmind") == f"bearinmind/{selector}.md"


def test_extra_sections_accept_dotted_identifiers() -> None:
    assert section_file("api", "design") == "design/api.md"
    assert section_file("check_1.v2", "env.ops-notes") == "env.ops-notes/check_1.v2.md"


@pytest.mark.parametrize(
    ("selector", "category", "complaint"),
    [
        ("notes", None, "selector must be one of goals, constraints, progress"),
        ("goals.md", None, "selector must be one of"),
        ("risks", None, 'category "bearinmind"'),
        ("notes", "bearinmind", "only accepts selector contracts"),
        ("goals", "bearinmind", "only accepts selector"),
        ("goals", "design", "reserved for the top-level goals.md"),
        ("Progress", "design", "reserved for the top-level progress.md"),
        ("runbook", "design", "reserved for bearinmind/runbook.md"),
        ("api", "BearInMind", "ambiguous"),
        ("api", "1design", "category '1design' is not a valid name"),
        ("api", "de sign", "not a valid name"),
        ("api", "a/b", "not a valid name"),
        ("../x", "design", "selector '../x' is not a valid name"),
        ("x.", "design", "not a valid name"),
    ],
)
def test_section_refusals_say_what_to_do(selector: str, category: str | None, complaint: str) -> None:
    with pytest.raises(TaskdocError) as info:
        section_file(selector, category)
    assert complaint in str(info.value)


# --- load_taskdoc -----------------------------------------------------------------------------------


def test_missing_package_loads_empty(root: Path) -> None:
    doc = load_taskdoc(root, PKG)
    assert doc.exists is False
    assert (doc.goals, doc.constraints, doc.progress) == (None, None, None)
    assert doc.bearinmind == {} and doc.extra == {} and doc.notes == ()


def test_load_reads_all_section_kinds(root: Path) -> None:
    put(root, f"{PKG}/goals.md", "G\n")
    put(root, f"{PKG}/constraints.md", "C\n")
    put(root, f"{PKG}/progress.md", "P\n")
    put(root, f"{PKG}/bearinmind/risks.md", "R\n")
    put(root, f"{PKG}/bearinmind/contracts.md", "K\n")
    put(root, f"{PKG}/design/zeta.md", "Z")
    put(root, f"{PKG}/design/api.v2.md", "A")
    put(root, f"{PKG}/notes/x.md", "X")
    doc = load_taskdoc(root, PKG)
    assert doc.exists
    assert (doc.goals, doc.constraints, doc.progress) == ("G\n", "C\n", "P\n")
    assert list(doc.bearinmind) == ["contracts", "risks"]  # fixed whitelist order, not disk order
    assert doc.extra == {"design": ("api.v2", "zeta"), "notes": ("x",)}
    assert doc.notes == ()


def test_layout_violations_are_notes_not_exceptions(root: Path) -> None:
    put(root, f"{PKG}/goals.md", "G")
    put(root, f"{PKG}/design/goals.md", "misplaced top section")
    put(root, f"{PKG}/design/contracts.md", "misplaced bearinmind name")
    put(root, f"{PKG}/risks.md", "bearinmind name at top level")
    put(root, f"{PKG}/bearinmind/notes.md", "not whitelisted")
    put(root, f"{PKG}/bearinmind/sub/x.md", "no subdirs in bearinmind")
    put(root, f"{PKG}/README.md", "unknown top-level file")
    put(root, f"{PKG}/bad name/x.md", "bad category")
    put(root, f"{PKG}/design/bad sel.md", "bad selector")
    put(root, f"{PKG}/design/deep/x.md", "too deep")
    put(root, f"{PKG}/design/data.json", "not markdown")
    put(root, f"{PKG}/design/.hidden.md", "hidden entries are ignored silently")
    (root / PKG / "constraints.md").mkdir()
    doc = load_taskdoc(root, PKG)
    assert doc.goals == "G"
    assert doc.constraints is None
    assert doc.extra == {}
    assert note_pairs(doc) == {
        ("top_section_misplaced", "design/goals.md"),
        ("bearinmind_name_misplaced", "design/contracts.md"),
        ("bearinmind_name_misplaced", "risks.md"),
        ("bearinmind_unknown_entry", "bearinmind/notes.md"),
        ("bearinmind_unknown_entry", "bearinmind/sub"),
        ("unexpected_entry", "README.md"),
        ("bad_name", "bad name"),
        ("bad_name", "design/bad sel.md"),
        ("unexpected_entry", "design/deep"),
        ("unexpected_entry", "design/data.json"),
        ("not_a_file", "constraints.md"),
    }


def test_bearinmind_as_a_file_is_a_note(root: Path) -> None:
    put(root, f"{PKG}/bearinmind", "oops")
    doc = load_taskdoc(root, PKG)
    assert note_pairs(doc) == {("bearinmind_not_directory", "bearinmind")}
    assert doc.bearinmind == {}


def test_package_path_that_is_a_file_is_a_note(root: Path) -> None:
    put(root, PKG, "not a dir")
    doc = load_taskdoc(root, PKG)
    assert doc.exists is False
    assert note_pairs(doc) == {("not_a_directory", ".")}


def test_unreadable_file_is_a_note(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    put(root, f"{PKG}/goals.md", "G")
    put(root, f"{PKG}/progress.md", "P")
    real_open = Path.open

    # chmod 000 does not stop root (CI containers), so simulate the permission error directly.
    def open_(path: Path, *args: Any, **kwargs: Any) -> Any:
        if path.name == "goals.md":
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_)
    doc = load_taskdoc(root, PKG)
    assert doc.goals is None
    assert doc.progress == "P"
    assert [(n.kind, n.where, n.detail) for n in doc.notes] == [
        ("unreadable", "goals.md", "Permission denied")
    ]
    assert "cannot be read (Permission denied)" in describe_note(doc.notes[0])
    assert "`goals.md`: cannot be read" in render_effective_taskdoc(doc)


def test_non_utf8_is_decoded_with_replacement_and_noted(root: Path) -> None:
    (root / PKG).mkdir(parents=True)
    (root / PKG / "goals.md").write_bytes(b"ok \xff\xfe")
    doc = load_taskdoc(root, PKG)
    assert doc.goals is not None and doc.goals.startswith("ok ") and "\ufffd" in doc.goals
    assert note_pairs(doc) == {("not_utf8", "goals.md")}


def test_symlinks_inside_a_package_are_not_followed(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    (root / PKG / "bearinmind").mkdir(parents=True)
    (root / PKG / "goals.md").symlink_to(outside)
    (root / PKG / "bearinmind" / "risks.md").symlink_to(outside)
    doc = load_taskdoc(root, PKG)
    assert doc.goals is None and doc.bearinmind == {}
    assert note_pairs(doc) == {("symlink_ignored", "goals.md"), ("symlink_ignored", "bearinmind/risks.md")}


def test_package_behind_symlink_leaving_rtws_is_a_note(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    put(elsewhere, "auth.tsk/goals.md", "stolen")
    (root / "tasks").symlink_to(elsewhere)
    doc = load_taskdoc(root, PKG)
    assert doc.goals is None
    assert [n.kind for n in doc.notes] == ["outside_rtws"]
    with pytest.raises(TaskdocError, match="outside the workspace"):
        write_section(root, PKG, "goals", "x")


def test_scan_limit_stops_with_a_note(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(taskdoc_module, "MAX_SCAN_ENTRIES", 3)
    for index in range(6):
        put(root, f"{PKG}/cat/s{index}.md", "x")
    doc = load_taskdoc(root, PKG)
    assert ("scan_limit", ".") in note_pairs(doc)
    assert len(doc.extra["cat"]) == 2  # the package dir entry `cat` counts as one of the three


# --- render_effective_taskdoc ----------------------------------------------------------------------


def test_render_minimal_english(root: Path) -> None:
    put(root, f"{PKG}/goals.md", "Ship login.\n\n")
    put(root, f"{PKG}/constraints.md", "No new deps.")
    put(root, f"{PKG}/progress.md", "Started.")
    text = render_effective_taskdoc(load_taskdoc(root, PKG))
    assert text.startswith(
        "# Taskdoc (Dialog Tree)\n\n## Goals\nShip login.\n\n## Constraints\nNo new deps.\n"
    )
    assert "## Bear In Mind" not in text
    assert "## Progress\nStarted.\n" in text
    assert "**Status:**" not in text  # nothing missing
    assert "Layout violations" not in text
    assert "**Extra sections (index only; bodies not injected):**\n- none" in text
    assert "`recall_taskdoc(" in text and "`change_mind(" in text


def test_render_with_bearinmind_and_extras_keeps_order_and_hides_extra_bodies(root: Path) -> None:
    put(root, f"{PKG}/goals.md", "G")
    put(root, f"{PKG}/constraints.md", "C")
    put(root, f"{PKG}/progress.md", "P")
    put(root, f"{PKG}/bearinmind/risks.md", "RISK BODY")
    put(root, f"{PKG}/bearinmind/runbook.md", "RUNBOOK BODY")
    put(root, f"{PKG}/bearinmind/grants.md", "   \n")  # blank: not rendered
    put(root, f"{PKG}/design/api.md", "EXTRA BODY MUST NOT APPEAR")
    put(root, f"{PKG}/README.md", "stray")
    text = render_effective_taskdoc(load_taskdoc(root, PKG))
    order = [text.index(h) for h in ("## Goals", "## Constraints", "## Bear In Mind", "## Progress")]
    assert order == sorted(order)
    assert text.index("### runbook.md\nRUNBOOK BODY") < text.index("### risks.md\nRISK BODY")
    assert "grants.md" not in text
    assert "EXTRA BODY" not in text
    assert '- `design/api.md` — `recall_taskdoc({"category": "design", "selector": "api"})`' in text
    violations = text.index("**Layout violations (fix manually):**")
    assert text.index("## Progress") < violations < text.index("**Extra sections")
    assert "- `README.md`: not part of the Taskdoc layout" in text


def test_render_chinese(root: Path) -> None:
    put(root, f"{PKG}/goals.md", "目标")
    put(root, f"{PKG}/bearinmind/contracts.md", "契约")
    put(root, f"{PKG}/design/goals.md", "x")
    put(root, f"{PKG}/design/api.md", "x")
    text = render_effective_taskdoc(load_taskdoc(root, PKG), "zh")
    assert text.startswith("# 差遣牒（对话树）\n\n## Goals\n目标\n")
    assert "## Constraints\n（空）" in text
    assert "## Bear In Mind\n### contracts.md\n契约" in text
    assert "**状态：**" in text and "`constraints.md` 缺失或为空" in text
    assert (
        "**结构违规（需要人工修复）：**\n- `design/goals.md`：goals.md / constraints.md / progress.md 只能位于顶层"
        in text
    )
    assert "**额外章节索引（不会自动注入）：**\n- `design/api.md`" in text
    assert "用 `recall_taskdoc(" in text


def test_render_missing_package_says_change_mind_creates_it(root: Path) -> None:
    text = render_effective_taskdoc(load_taskdoc(root, PKG))
    assert "## Goals\n(empty)" in text
    assert f"- `{PKG}` does not exist yet; `change_mind` creates it." in text


def test_describe_note_has_a_fallback_for_unknown_kinds() -> None:
    assert describe_note(TaskdocNote("future_kind", "x.md", "details")) == "`x.md`: details"


# --- write_section (change_mind) -------------------------------------------------------------------


def test_write_creates_package_and_replaces_whole_file(root: Path) -> None:
    path = write_section(root, PKG, "goals", "first version, long text")
    assert path == root / PKG / "goals.md"
    assert path.read_text() == "first version, long text\n"
    inode = path.stat().st_ino
    write_section(root, PKG, "goals", "v2\n")
    assert path.read_text() == "v2\n"  # shorter content: nothing of v1 survives
    assert path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert [p.name for p in (root / PKG).iterdir()] == ["goals.md"]  # no temp files left behind
    assert load_taskdoc(root, PKG).goals == "v2\n"


def test_write_bearinmind_and_extra_sections(root: Path) -> None:
    write_section(root, PKG, "risks", "R", category="bearinmind")
    write_section(root, PKG, "api", "A", category="design")
    doc = load_taskdoc(root, PKG)
    assert doc.bearinmind == {"risks": "R\n"}
    assert doc.extra == {"design": ("api",)}


def test_write_empty_content_makes_an_empty_file(root: Path) -> None:
    write_section(root, PKG, "progress", "")
    assert (root / PKG / "progress.md").read_text() == ""


@pytest.mark.parametrize(
    ("selector", "category"),
    [("notes", None), ("notes", "bearinmind"), ("goals", "design"), ("x y", "design"), ("a", "../up")],
)
def test_write_refusals_touch_nothing(root: Path, selector: str, category: str | None) -> None:
    with pytest.raises(TaskdocError):
        write_section(root, PKG, selector, "x", category=category)
    assert not (root / "tasks").exists()


def test_write_refuses_bad_package_path(root: Path) -> None:
    with pytest.raises(TaskdocError, match="ending in '.tsk'"):
        write_section(root, "tasks/auth", "goals", "x")


def test_write_refuses_non_directory_obstacles(root: Path, tmp_path: Path) -> None:
    put(root, "file.tsk", "I am a file")
    with pytest.raises(TaskdocError, match="not a directory"):
        write_section(root, "file.tsk", "goals", "x")
    put(root, f"{PKG}/bearinmind", "file, not dir")
    with pytest.raises(TaskdocError, match="not a plain directory"):
        write_section(root, PKG, "risks", "x", category="bearinmind")
    (root / PKG / "design").symlink_to(tmp_path)
    with pytest.raises(TaskdocError, match="not a plain directory"):
        write_section(root, PKG, "api", "x", category="design")
    assert not (tmp_path / "api.md").exists()
    (root / PKG / "goals.md").mkdir()
    with pytest.raises(TaskdocError, match="is a directory"):
        write_section(root, PKG, "goals", "x")


def test_write_disk_failure_becomes_taskdoc_error(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_section(root, PKG, "goals", "kept")

    def refuse(path: Path, data: bytes | str, *, mode: int | None = None) -> None:
        raise WriteFailedError(path, "no space left on device")

    monkeypatch.setattr(taskdoc_sections, "write_atomic", refuse)
    with pytest.raises(TaskdocError, match="no space left on device"):
        write_section(root, PKG, "goals", "lost")
    assert (root / PKG / "goals.md").read_text() == "kept\n"


# --- read_section (recall_taskdoc) -----------------------------------------------------------------


def test_read_bearinmind_and_extra(root: Path) -> None:
    write_section(root, PKG, "runbook", "steps", category="bearinmind")
    write_section(root, PKG, "api.v2", "endpoints", category="design")
    assert read_section(root, PKG, "bearinmind", "runbook") == "steps\n"
    assert read_section(root, PKG, "design", "api.v2") == "endpoints\n"


@pytest.mark.parametrize(
    ("category", "selector", "complaint"),
    [
        ("", "goals", "already in your context"),
        ("design", "progress", "already in your context"),
        ("", "api", "needs a category"),
        ("bearinmind", "notes", "only accepts selector"),
        ("design", "risks", "reserved for bearinmind/risks.md"),
        ("de sign", "api", "not a valid name"),
    ],
)
def test_read_refusals(root: Path, category: str, selector: str, complaint: str) -> None:
    with pytest.raises(TaskdocError) as info:
        read_section(root, PKG, category, selector)
    assert complaint in str(info.value)


def test_read_missing_section_lists_what_exists(root: Path) -> None:
    write_section(root, PKG, "risks", "R", category="bearinmind")
    write_section(root, PKG, "api", "A", category="design")
    with pytest.raises(TaskdocError) as info:
        read_section(root, PKG, "design", "nope")
    assert "has no section design/nope.md" in str(info.value)
    assert "bearinmind/risks, design/api" in str(info.value)
    with pytest.raises(TaskdocError, match="readable sections: none"):
        read_section(root, "other.tsk", "design", "api")


def test_read_refuses_symlinked_section(root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("secret")
    (root / PKG / "design").mkdir(parents=True)
    (root / PKG / "design" / "api.md").symlink_to(tmp_path / "secret.md")
    with pytest.raises(TaskdocError, match="symlink"):
        read_section(root, PKG, "design", "api")


# --- discovery and fingerprint ---------------------------------------------------------------------


def test_discover_finds_packages_and_skips_runtime_dirs(root: Path) -> None:
    for rel in (
        "top.tsk",
        "tasks/auth.tsk",
        "tasks/deep/more/x.tsk",
        ".dialogs/run/hidden.tsk",
        ".minds/m.tsk",
        ".git/g.tsk",
        ".venv/v.tsk",
        "web/node_modules/pkg/n.tsk",
        "top.tsk/inner.tsk",  # inside a package: not a separate package
    ):
        (root / rel).mkdir(parents=True, exist_ok=True)
    put(root, "file.tsk", "a file, not a package")
    assert discover_taskdocs(root) == ["tasks/auth.tsk", "tasks/deep/more/x.tsk", "top.tsk"]


def test_discover_honours_taskdoc_ignore(root: Path) -> None:
    for rel in (
        "keep.tsk",
        "archive/old.tsk",
        "tasks/tmp-1.tsk",
        "tasks/real.tsk",
        "tasks/build/gen.tsk",
        "build/top-level-build.tsk",
        "sub/scratch/s.tsk",
        "sub/other/scratch/kept.tsk",
    ):
        (root / rel).mkdir(parents=True)
    put(root, ".taskdoc-ignore", "# comment\n\narchive/\n/build\n!negation-is-ignored\n")
    put(root, "tasks/.taskdoc-ignore", "tmp-*.tsk\nbuild\n")
    put(root, "sub/.taskdoc-ignore", "/scratch\n")
    assert discover_taskdocs(root) == ["keep.tsk", "sub/other/scratch/kept.tsk", "tasks/real.tsk"]


def test_discover_does_not_follow_symlinked_dirs(root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside" / "o.tsk").mkdir(parents=True)
    (root / "link").symlink_to(tmp_path / "outside")
    (root / "alias.tsk").symlink_to(tmp_path / "outside" / "o.tsk")
    assert discover_taskdocs(root) == []


def test_fingerprint_changes_on_every_kind_of_edit(root: Path) -> None:
    assert taskdoc_fingerprint(root, PKG) == "missing"
    write_section(root, PKG, "goals", "a")
    seen = {taskdoc_fingerprint(root, PKG)}
    assert taskdoc_fingerprint(root, PKG) in seen  # stable while nothing changes

    def changed() -> bool:
        current = taskdoc_fingerprint(root, PKG)
        fresh = current not in seen
        seen.add(current)
        return fresh

    goals, package = root / PKG / "goals.md", root / PKG
    before = {path: path.stat().st_mtime_ns for path in (goals, package)}
    write_section(root, PKG, "goals", "b")  # same size, atomic replace
    for path, mtime_ns in before.items():  # a coarse-mtime filesystem would not see the edit
        os.utime(path, ns=(mtime_ns, mtime_ns))
    assert changed()  # the rename gave goals.md a new inode
    write_section(root, PKG, "api", "x", category="design")  # new file in a new subdir
    assert changed()
    write_section(root, PKG, "api", "yy", category="design")  # edit below the top level
    assert changed()
    (root / PKG / "design" / "api.md").unlink()
    assert changed()
    put(root, "file.tsk", "x")
    assert taskdoc_fingerprint(root, "file.tsk") == "not-a-directory"


def _age(*directories: Path, seconds: int = 60) -> None:
    for directory in directories:
        past = directory.stat().st_mtime_ns - seconds * 1_000_000_000
        os.utime(directory, ns=(past, past))


def _fresh_fingerprint(root: Path) -> str:
    """The fingerprint with every directory read again (no kept names)."""
    kept = dict(taskdoc_discovery._listings)
    taskdoc_discovery._listings.clear()
    try:
        return taskdoc_fingerprint(root, PKG)
    finally:
        taskdoc_discovery._listings.update(kept)


def test_fingerprint_with_kept_directory_names_sees_every_edit(root: Path) -> None:
    """Bug this guards (issue 21): every generation read the Taskdoc's directories again (``scandir``,
    ~5 % of the event loop's time in a 100-way fan-out); names are now kept per directory while its inode
    and mtime hold, so an added, removed or renamed entry must still change the fingerprint, and an edit
    in place (no directory change) must too."""
    write_section(root, PKG, "goals", "a")
    write_section(root, PKG, "api", "x", category="design")
    package, design = root / PKG, root / PKG / "design"
    _age(package, design)
    first = taskdoc_fingerprint(root, PKG)
    assert str(package) in taskdoc_discovery._listings, "an old directory's names are kept"
    assert taskdoc_fingerprint(root, PKG) == first == _fresh_fingerprint(root)
    edits = [
        lambda: (design / "extra.md").write_text("new file below the top level"),
        lambda: (package / "goals.md").write_text("edited in place, no directory change"),
        lambda: (design / "extra.md").rename(design / "renamed.md"),
        lambda: (design / "renamed.md").unlink(),
        lambda: (package / "constraints.md").write_text("new at the top"),
    ]
    seen = {first}
    for edit in edits:
        _age(package, design)
        taskdoc_fingerprint(root, PKG)  # names kept at the aged mtimes
        before = taskdoc_fingerprint(root, PKG)
        edit()
        after = taskdoc_fingerprint(root, PKG)
        assert after != before and after == _fresh_fingerprint(root)
        assert after not in seen
        seen.add(after)


def test_a_young_directory_is_read_every_time(root: Path) -> None:
    """A directory changed within the last two seconds may change again within the same mtime tick: its
    names are never kept, so an entry added in that tick (simulated: the mtime put back) is seen."""
    write_section(root, PKG, "goals", "a")
    package = root / PKG
    before = taskdoc_fingerprint(root, PKG)
    assert str(package) not in taskdoc_discovery._listings
    mtime_ns = package.stat().st_mtime_ns
    (package / "constraints.md").write_text("same tick")
    os.utime(package, ns=(mtime_ns, mtime_ns))
    assert taskdoc_fingerprint(root, PKG) != before
