"""`dominds` entry point.

Each subcommand lives in its own module ``dominds/cli/cmd_<name>.py`` exposing
``register(subparsers) -> None``; the parser discovers them, so commands stay independent.
A command handler is ``func(args) -> int`` set with ``parser.set_defaults(func=...)``.
Errors that a user can act on are raised as ``CliError`` and printed as one line.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import os
import sys
from pathlib import Path

from dominds import __version__
from dominds.cli.common import CliError, program, remember_workspace_option

FIRST_COMMANDS = ("serve", "url", "status", "run", "tell", "show", "q4h", "resume", "lifecycle", "init", "check")
"""Modules whose commands `dominds --help` lists first, in this order (what a new user reaches for);
the others (workflows, MCP, tools) follow by name."""
EPILOG = """\
start here:
  dominds serve --demo        the demo team, offline (no API key), in a workspace kept between runs
  dominds init my-ws          a workspace of your own, then `dominds -C my-ws check`
  dominds COMMAND --help      a command's options and examples (every command: `dominds docs cli`)
"""


def _listing_order(name: str) -> tuple[int, str]:
    command = name.removeprefix("cmd_")
    return (FIRST_COMMANDS.index(command) if command in FIRST_COMMANDS else len(FIRST_COMMANDS), command)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given ``argv``, only the module of the command it names is imported (start-up time
    matters for ``serve`` and ``status``), falling back to every command for help and unknown names."""
    parser = argparse.ArgumentParser(
        prog=program(),  # "usage: bin/dominds …" for whoever runs the script
        description="Dominds: a local-first dialog runtime for teams of LLM agents.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-C", dest="chdir", metavar="DIR", help="run as if started in DIR (the workspace)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument("--version", action="version", version=f"dominds {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    package_dir = Path(__file__).parent
    named = _command_named(argv)
    if named is not None and (package_dir / f"cmd_{named.replace('-', '_')}.py").is_file():
        importlib.import_module(f"dominds.cli.cmd_{named.replace('-', '_')}").register(subparsers)
        if named in subparsers.choices:
            return parser
        parser = build_parser()  # the module registers other names: the full parser answers
        return parser
    import pkgutil  # only for help and unknown names: one command imports only itself

    for info in sorted(pkgutil.iter_modules([str(package_dir)]), key=lambda m: _listing_order(m.name)):
        if info.name.startswith("cmd_"):
            module = importlib.import_module(f"dominds.cli.{info.name}")
            module.register(subparsers)
    return parser


def _command_named(argv: list[str] | None) -> str | None:
    """The command word of a command line (after ``-C DIR`` and ``--debug``), if any."""
    words = list(sys.argv[1:] if argv is None else argv)
    while words:
        word = words.pop(0)
        if word == "-C":
            if words:
                words.pop(0)
        elif word.startswith("-C") or word == "--debug":
            continue
        elif word.startswith("-"):
            return None  # --help, --version, or a mistake: the full parser answers
        else:
            return word
    return None


def _unknown_command(parser: argparse.ArgumentParser, words: list[str]) -> str | None:
    """For a command word no command has: one line naming the nearest commands (argparse listed all
    23 choices and no "did you mean"), else ``None``."""
    named = _command_named(words)
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if named is None or not actions or named in actions[0].choices:
        return None
    near = difflib.get_close_matches(named, list(actions[0].choices), n=3, cutoff=0.6)
    hint = "; did you mean " + " or ".join(f"`{n}`" for n in near) + "?" if near else ""
    return f"{program()}: unknown command {named!r}{hint} (`{program()} --help` lists the commands)"


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if "--version" in words and _command_named(words) is None:
        print(f"dominds {__version__}")  # as argparse would, without registering (importing) every command
        return 0
    parser = build_parser(words)
    unknown = _unknown_command(parser, words)
    if unknown is not None:
        print(unknown, file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    remember_workspace_option(args.chdir)
    if args.chdir:
        try:
            os.chdir(args.chdir)
        except OSError as exc:
            print(f"dominds: cannot use -C {args.chdir}: {exc.strerror}", file=sys.stderr)
            return 2
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except CliError as exc:
        if args.debug:
            raise
        print(f"dominds: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `dominds show X | head`: the reader went away; that is not an error worth a message.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # keeps the interpreter's final flush quiet
        return 0
    except Exception as exc:  # the last line of defence: one clear line, traceback with --debug
        if args.debug:
            raise
        print(f"dominds: error: {type(exc).__name__}: {exc} (rerun with --debug for details)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
