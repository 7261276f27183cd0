"""team.yaml loading: best-effort team plus located problems, never an exception."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.llm.catalog_yaml import builtin_catalog
from dominds.problems import TEAM_CONFIG_ERROR, Problem
from dominds.rtws import Rtws
from dominds.team import Team, expand_toolsets, load_team
from dominds.tools.builtin import builtin_toolsets

REPO_ROOT = Path(__file__).resolve().parent.parent
TOOLSETS = builtin_toolsets()
MORE_TOOLSET_NAMES = ["team-mgmt"]


def own_members(team: Team) -> list[str]:
    """Members of the team under test (no engine, so no workflow members)."""
    return list(team.members)


def write_team(rtws: Rtws, text: str) -> str:
    text = textwrap.dedent(text).lstrip("\n")
    rtws.team_yaml.write_text(text, encoding="utf-8")
    return text


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing ``needle``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def load(rtws: Rtws, text: str) -> tuple[Team, list[Problem], str]:
    written = write_team(rtws, text)
    team, problems = load_team(rtws, TOOLSETS, more_toolset_names=MORE_TOOLSET_NAMES, catalog=builtin_catalog())
    return team, problems, written


def by_line(problems: list[Problem]) -> dict[int | None, list[Problem]]:
    out: dict[int | None, list[Problem]] = {}
    for problem in problems:
        out.setdefault(problem.line, []).append(problem)
    return out


def test_template_team_loads_without_problems() -> None:
    rtws = Rtws(REPO_ROOT / "rtws-template")
    team, problems = load_team(rtws, TOOLSETS, more_toolset_names=MORE_TOOLSET_NAMES)
    assert problems == []
    assert own_members(team) == ["lead", "researcher", "coder", "fuxi", "pangu"]
    assert team.default_responder == "lead"
    assert [m.id for m in team.visible_members()] == ["lead", "researcher", "coder"]
    assert team.shell_specialists == ("coder",)
    lead = team.member("lead")
    assert lead is not None and lead.provider is None and lead.model is None  # picked at run time
    assert lead.toolsets == ("ws_read", "memory")
    assert (rtws.minds_dir / "team" / "lead" / "persona.md").is_file()


def test_missing_team_yaml_gives_bootstrap_team(tmp_rtws: Rtws) -> None:
    team, problems = load_team(tmp_rtws, TOOLSETS, more_toolset_names=MORE_TOOLSET_NAMES)
    assert problems == []
    assert own_members(team) == ["fuxi", "pangu"]
    assert team.default_responder == "fuxi"
    assert team.visible_members() == []


def test_yaml_syntax_error_is_a_located_problem(tmp_rtws: Rtws) -> None:
    team, problems, _ = load(
        tmp_rtws,
        """
        members:
          lead:
            name: Lead
            toolsets: [ws_read
        default_responder: lead
        """,
    )
    assert len(problems) == 1
    problem = problems[0]
    assert problem.kind == TEAM_CONFIG_ERROR and problem.source == ".minds/team.yaml"
    assert problem.severity == "error" and "YAML syntax error" in problem.message
    assert problem.line in (4, 5)  # the parser notices the unclosed list on the next line
    assert own_members(team) == ["fuxi", "pangu"]


def test_unknown_root_key_is_a_warning_with_a_hint(tmp_rtws: Rtws) -> None:
    team, problems, text = load(
        tmp_rtws,
        """
        members:
          lead: {name: Lead}
        default_responders: lead
        """,
    )
    [problem] = problems
    assert problem.line == line_of(text, "default_responders")
    assert problem.severity == "warning"
    assert "'default_responder'" in problem.message  # did you mean
    assert team.default_responder == "lead"  # first visible member anyway


def test_wrong_types_are_reported_on_their_lines_and_ignored(tmp_rtws: Rtws) -> None:
    team, problems, text = load(
        tmp_rtws,
        """
        member_defaults:
          streaming: "no"
        members:
          lead:
            name: Lead
            fbr_effort: lots
            toolsets: ws_read
            hidden: 1
            model_params: [1, 2]
            gofor: {plans: 3}
        """,
    )
    lines = by_line(problems)
    for needle, expected in [
        ("streaming", "true or false"),
        ("fbr_effort", "an integer from 0 to 100"),
        ("toolsets", "a list of strings"),
        ("hidden", "true or false"),
        ("model_params", "a mapping"),
        ("gofor", "a list of strings or a mapping"),
    ]:
        [problem] = lines[line_of(text, needle)]
        assert expected in problem.message and problem.severity == "error", problem
    assert len(problems) == 6
    lead = team.member("lead")
    assert lead is not None
    assert (lead.name, lead.fbr_effort, lead.toolsets, lead.hidden, lead.streaming) == (
        "Lead",
        1,
        (),
        False,
        True,
    )


def test_unknown_provider_and_model_are_reported(tmp_rtws: Rtws) -> None:
    team, problems, text = load(
        tmp_rtws,
        """
        member_defaults:
          provider: anthropic
        members:
          a: {provider: nowhere}
          b:
            model: gpt-5
          c:
            provider: openai
            model: gpt-5
        """,
    )
    lines = by_line(problems)
    assert "unknown provider 'nowhere'" in lines[line_of(text, "nowhere")][0].message
    assert "no model 'gpt-5'" in lines[line_of(text, "model: gpt-5")][0].message
    assert len(problems) == 2  # c is fine
    c = team.member("c")
    assert c is not None and (c.provider, c.model) == ("openai", "gpt-5")


def test_unknown_default_responder_falls_back_to_first_visible_member(tmp_rtws: Rtws) -> None:
    team, problems, text = load(
        tmp_rtws,
        """
        default_responder: boss
        members:
          worker: {}
          helper: {}
        """,
    )
    [problem] = problems
    assert problem.line == line_of(text, "boss") and "'boss' is not a member" in problem.message
    assert team.default_responder == "worker"


def test_member_that_is_not_a_mapping_is_left_out(tmp_rtws: Rtws) -> None:
    team, problems, text = load(
        tmp_rtws,
        """
        members:
          good:
            name: Good
          bad: [1, 2]
          human: {}
          "has space": {}
        """,
    )
    lines = by_line(problems)
    assert (
        "must be a mapping of settings, got a list whose item 1 is an integer"
        in lines[line_of(text, "bad:")][0].message
    )
    assert "reserved" in lines[line_of(text, "human")][0].message
    assert "an id may hold" in lines[line_of(text, "has space")][0].message
    assert own_members(team) == ["good", "fuxi", "pangu"]


def test_member_keys_unknown_duplicate_and_aliases(tmp_rtws: Rtws) -> None:
    team, problems, text = load(
        tmp_rtws,
        """
        members:
          lead:
            fbr-effort: 7
            diligence-push-max: 0
            toolset: [ws_read]
          lead: {name: Second}
        """,
    )
    lines = by_line(problems)
    assert "'toolsets'" in lines[line_of(text, "toolset:")][0].message  # did you mean
    assert "duplicate key 'lead'" in lines[line_of(text, "Second")][0].message
    lead = team.member("lead")
    assert lead is not None and (lead.fbr_effort, lead.diligence_push_max, lead.name) == (7, 0, "lead")


def test_toolset_names_are_validated_against_known_ones(tmp_rtws: Rtws) -> None:
    team, problems, text = load(
        tmp_rtws,
        """
        members:
          a: {toolsets: ["*", "!os", ws_read]}
          b:
            toolsets: [ws_raed, "!nope"]
        """,
    )
    assert {p.line for p in problems} == {line_of(text, "ws_raed")}
    assert sorted("'ws_raed'" in p.message or "'nope'" in p.message for p in problems) == [True, True]
    a = team.member("a")
    available = ["ws_read", "ws_mod", "os", "memory", "team-mgmt"]
    assert a is not None and expand_toolsets(a.toolsets, available) == [
        "ws_read",
        "ws_mod",
        "memory",
        "team-mgmt",
    ]


def test_empty_toolset_registry_skips_name_checks(tmp_rtws: Rtws) -> None:
    write_team(tmp_rtws, "members:\n  a: {toolsets: [anything]}\n")
    _, problems = load_team(tmp_rtws, catalog=builtin_catalog())
    assert problems == []


def test_member_defaults_apply_and_provider_model_travel_together(tmp_rtws: Rtws) -> None:
    team, problems, _ = load(
        tmp_rtws,
        """
        member_defaults:
          provider: anthropic
          model: claude-haiku-4-5
          toolsets: [ws_read]
          icon: "*"
        members:
          plain: {}
          own_provider: {provider: openai}
          own_model: {model: claude-opus-4-5}
        """,
    )
    assert problems == []
    members = team.members
    assert (members["plain"].provider, members["plain"].model) == ("anthropic", "claude-haiku-4-5")
    assert members["plain"].toolsets == ("ws_read",) and members["plain"].icon == "*"
    # a model of the defaults' provider would not exist under another provider
    assert (members["own_provider"].provider, members["own_provider"].model) == ("openai", None)
    assert (members["own_model"].provider, members["own_model"].model) == ("anthropic", "claude-opus-4-5")
    assert members["pangu"].provider == "anthropic"  # shadows inherit the defaults too


def test_shadow_members_keep_their_forced_settings(tmp_rtws: Rtws) -> None:
    team, problems, _ = load(
        tmp_rtws,
        """
        members:
          fuxi: {name: Admin, hidden: false, toolsets: [ws_read], diligence_push_max: 5}
          pangu: {toolsets: [os], no_read_dirs: [secrets]}
        """,
    )
    assert problems == []
    fuxi, pangu = team.members["fuxi"], team.members["pangu"]
    assert fuxi.name == "Admin" and fuxi.hidden and fuxi.toolsets == ("ws_read", "team-mgmt")
    assert fuxi.diligence_push_max == 0
    assert pangu.toolsets == ("*", "!team-mgmt") and pangu.hidden
    assert pangu.no_read_dirs == ("secrets", ".minds/**") and ".minds/**" in pangu.no_write_dirs
    assert own_members(team) == ["fuxi", "pangu"] and team.default_responder == "fuxi"


def test_shell_specialists_and_protected_dirs(tmp_rtws: Rtws) -> None:
    team, problems, text = load(
        tmp_rtws,
        """
        shell_specialists: [ops, ghost]
        members:
          ops: {tools: [shell_cmd]}
          dev:
            tools: [shell_cmd, read_file]
            read_dirs: [src, .minds/**, tasks/x.tsk/goals.md]
        """,
    )
    lines = by_line(problems)
    assert "'ghost' is not a member" in lines[line_of(text, "shell_specialists")][0].message
    [shell_warning] = lines[line_of(text, "tools: [shell_cmd, read_file]")]
    assert "'dev' is not in `shell_specialists`" in shell_warning.message
    dirs_warnings = lines[line_of(text, "read_dirs")]
    assert len(dirs_warnings) == 2 and all(p.severity == "warning" for p in dirs_warnings)
    assert team.members["dev"].read_dirs == ("src",)
    assert team.shell_specialists == ("ops", "ghost") and team.is_shell_specialist("ops")
    assert [team.keeps_shell_tools(m) for m in ("ops", "dev", "pangu")] == [True, False, True]


def test_model_params_misplaced_keys_get_hints(tmp_rtws: Rtws) -> None:
    _, problems, text = load(
        tmp_rtws,
        """
        members:
          a:
            model_params: {max_tokens: 100, temperature: 0.2, anthropic: {top_k: 5, foo: 1}}
        """,
    )
    messages = sorted(p.message for p in problems)
    assert all(p.line == line_of(text, "model_params") for p in problems)
    assert any(
        "'temperature' is not read here; put it under anthropic or openai or codex" in m for m in messages
    )
    assert any("`anthropic.foo` is not a known anthropic parameter" in m for m in messages)
    assert len(problems) == 2


def test_odd_documents_never_crash(tmp_rtws: Rtws) -> None:
    for text in [
        "- a\n- b\n",
        "just text\n",
        "",
        "? [a, b]\n: 1\n",
        "members: 3\n",
        "members:\n  a: !!binary xx\n",
        "members:\n  a: {toolsets: &t [[*t]]}\n",  # a recursive alias
    ]:
        team, problems, _ = load(tmp_rtws, text)
        assert "fuxi" in team.members
        assert all(p.kind == TEAM_CONFIG_ERROR for p in problems)
    _, problems, _ = load(tmp_rtws, "members: 3\n")
    assert problems[0].line == 1 and "got an integer" in problems[0].message


def test_merge_keys_are_followed_and_overridden(tmp_rtws: Rtws) -> None:
    team, problems, _ = load(
        tmp_rtws,
        """
        base: &base {toolsets: [ws_read], icon: "b"}
        members:
          a: {<<: *base, icon: "a"}
        """,
    )
    assert [p.message for p in problems] == [
        "unknown key 'base' ignored; known keys: member_defaults, default_responder, shell_specialists, members"
    ]
    assert (team.members["a"].toolsets, team.members["a"].icon) == (("ws_read",), "a")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("members:lead{}[]- \n\t\"'&*!<>?,0123#|")), max_size=80))
def test_load_team_never_raises(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        rtws = Rtws(Path(tmp))
        rtws.minds_dir.mkdir()
        rtws.team_yaml.write_text(text, encoding="utf-8")
        team, problems = load_team(rtws, TOOLSETS, more_toolset_names=MORE_TOOLSET_NAMES, catalog=builtin_catalog())
        assert team.default_responder in team.members
        assert all(p.line is None or p.line >= 1 for p in problems)
