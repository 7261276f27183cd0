"""A mistyped command is answered with the nearest ones.

The bug: `dominds shwo` printed argparse's "invalid choice" with all 23 commands and no "did you mean
show"."""

from __future__ import annotations

from pathlib import Path

from test_cli_kit import dominds


def test_a_mistyped_command_names_the_nearest(tmp_path: Path) -> None:
    typo = dominds(tmp_path, "shwo")
    assert typo.returncode == 2 and typo.stdout == ""
    assert "unknown command 'shwo'; did you mean `show`? (`dominds --help` lists the commands)" in typo.stderr
    assert "choose from" not in typo.stderr
    nothing_near = dominds(tmp_path, "xyzzy")
    assert nothing_near.returncode == 2 and "unknown command 'xyzzy' (`dominds --help` lists the commands)" in nothing_near.stderr
    assert dominds(tmp_path, "-C", str(tmp_path), "--debug", "show", "--help").returncode == 0, "known commands unchanged"
