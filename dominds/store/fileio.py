"""Load and save typed state files (YAML or JSON) and course JSONL files."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from dominds.rtws import STATE_FILE_MODE
from dominds.store import fastyaml
from dominds.store.atomic import SYMLINK_PROBLEM, append_line, write_atomic, write_fresh
from dominds.store.course_records import COURSE_RECORD_ADAPTER, CourseRecord
from dominds.store.errors import CorruptFileError, UnreadableFileError
from dominds.textcheck import scrub

try:  # the C implementation is several times faster
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how pyyaml was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

M = TypeVar("M", bound=BaseModel)


def yaml_dump(data: Any, header: str = "") -> str:
    return fastyaml.dump(data, header)



def yaml_load(text: str) -> Any:
    """Parse YAML: the fast reader for what the store writes, PyYAML for anything else (hand edits)."""
    try:
        return fastyaml.load(text)
    except (ValueError, IndexError):
        return yaml.load(text, Loader=_Loader)


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist. A symbolic link is not followed (it could lead out
    of the workspace): it is a corrupt file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CorruptFileError(path, SYMLINK_PROBLEM) from exc
        raise UnreadableFileError(path, exc.strerror or str(exc)) from exc
    try:
        with os.fdopen(fd, "rb") as file:
            return file.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptFileError(path, f"not valid UTF-8 ({exc.reason})") from exc
    except OSError as exc:
        raise UnreadableFileError(path, exc.strerror or str(exc)) from exc


def load_raw(path: Path) -> Any:
    """Parse a YAML or JSON file (by suffix); None when missing."""
    text = read_text(path)
    if text is None:
        return None
    try:
        if path.suffix == ".json":
            return json.loads(text)
        return yaml_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise CorruptFileError(path, f"cannot parse: {_first_line(str(exc))}") from exc


def load_model(path: Path, model: type[M]) -> M | None:
    """Load a typed record; None when the file is missing; CorruptFileError when malformed."""
    raw = load_raw(path)
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise CorruptFileError(path, f"expected a mapping, found {type(raw).__name__}")
    return validate(path, model, raw)


def validate(path: Path, model: type[M], raw: dict[str, Any]) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:3]
        )
        raise CorruptFileError(path, f"does not match {model.__name__}: {problems}") from exc


def save_model(path: Path, record: BaseModel, header: str = "", *, fresh: bool = False, spare: bool = False) -> None:
    """Persist a typed record; ``fresh``: a new file in a staging directory (``atomic.write_fresh``);
    ``spare``: the replaced version is kept to be written over next time (``atomic.write_atomic``)."""
    data = record.model_dump(mode="json", by_alias=True, exclude_none=True)
    save_raw(path, data, header, fresh=fresh, spare=spare)


def save_raw(path: Path, data: Any, header: str = "", *, fresh: bool = False, spare: bool = False) -> None:
    if path.suffix == ".json":
        # ``indent`` is layout only (any indent reads back the same): ``indent=2`` is an equivalent mutant.
        text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    else:
        text = yaml_dump(data, header)
    if fresh:
        write_fresh(path, text)
    else:
        write_atomic(path, text, spare=spare, create_mode=STATE_FILE_MODE)


# ---------------------------------------------------------------- JSONL


def record_line(record: BaseModel) -> str:
    """One course record as its JSONL line (without the newline)."""
    line = json.dumps(
        record.model_dump(mode="json", by_alias=True, exclude_none=True), ensure_ascii=False, separators=(",", ":")
    )
    return scrub(line)  # a lone surrogate can never make a line unwritable


def append_record(path: Path, record: BaseModel, *, sync: bool = True) -> None:
    append_line(path, record_line(record), sync=sync)


def write_first_record(path: Path, record: BaseModel) -> None:
    """A new course file holding one record, in a staging directory (``atomic.write_fresh``)."""
    write_fresh(path, record_line(record) + "\n")


def read_course(path: Path) -> list[CourseRecord]:
    """Every record of a course file, in order.

    Blank lines are skipped. A last line that does not parse is a torn append from a crash and is
    ignored; a bad line anywhere else raises ``CorruptFileError`` with its line number.
    """
    text = read_text(path)
    if text is None:
        return []
    lines = text.split("\n")
    # Index of the last non-blank line: only that one may be torn. The default is taken only when no line is
    # non-blank, and then no line is compared with it (``default=0`` is an equivalent mutant).
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    records: list[CourseRecord] = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            if index == last:
                break  # torn tail: the append never completed
            raise CorruptFileError(path, f"bad JSON line: {exc.msg}", line=index + 1) from exc
        try:
            records.append(COURSE_RECORD_ADAPTER.validate_python(raw))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise CorruptFileError(path, f"bad record ({where}: {err['msg']})", line=index + 1) from exc
    return records


def repair_tail(path: Path) -> bool:
    """Make the file end on a complete line so later appends start fresh.

    A last line that parses but lacks its newline gets one; one that does not parse (torn) is cut.
    True when the file was changed.
    """
    text = read_text(path)
    if not text or text.endswith("\n"):
        return False
    cut = text.rfind("\n") + 1
    try:
        json.loads(text[cut:])
    except json.JSONDecodeError:
        write_atomic(path, text[:cut])
        return True
    write_atomic(path, text + "\n")
    return True


def _first_line(message: str) -> str:
    # The cap guards the error text against a long message; the C YAML loader's and ``json``'s are fixed
    # templates with a position, well under 300 characters, so ``[:301]`` is an equivalent mutant.
    return " ".join(message.split())[:300]
