"""``--image FILE`` of ``dominds tell`` and ``dominds run``: pictures sent with a message.

Each file is checked first (a PNG, JPEG, GIF or WebP picture, at most 5 MiB), then stored as an artifact
of the dialog (as the panel's pasted images are) and named by a line added to the message, which sends
the image itself to a vision-capable model (``driver/images.py``).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from dominds.cli.common import CliError
from dominds.ids import short_token
from dominds.rtws import Rtws


@dataclass(frozen=True)
class Picture:
    path: Path
    raw: bytes
    mime: str


def read_pictures(paths: list[str] | None) -> list[Picture]:
    """The pictures named on the command line, refused with a clear message before anything is sent."""
    from dominds.tools.pictures import MAX_PICTURE_BYTES, picture_type

    out: list[Picture] = []
    for name in paths or []:
        path = Path(name)
        try:
            if path.stat().st_size > MAX_PICTURE_BYTES:
                raise CliError(f"--image {name}: larger than {MAX_PICTURE_BYTES // (1024 * 1024)} MiB", exit_code=2)
            raw = path.read_bytes()
        except OSError as exc:
            raise CliError(f"--image {name}: {exc.strerror or exc}", exit_code=2) from None
        mime = picture_type(raw[:16])
        if mime is None:
            raise CliError(f"--image {name}: not a PNG, JPEG, GIF or WebP picture", exit_code=2)
        out.append(Picture(path, raw, mime))
    return out


def with_pictures(rtws: Rtws, self_id: str, text: str, pictures: list[Picture]) -> str:
    """``text`` with a line for each picture, stored as an artifact of dialog ``self_id``."""
    if not pictures:
        return text
    from dominds.cli.offline import locate_dialog
    from dominds.mcp.results import save_artifact
    from dominds.store.dialog_store import DialogStore

    status, root_id = locate_dialog(rtws, self_id)
    dialog_dir = DialogStore(rtws).files(status, root_id, self_id).dir
    lines = [
        save_artifact(dialog_dir, self_id, f"upload-{_stem(p.path)}-{short_token(4)}", p.raw, p.mime, source=p.path.name)
        for p in pictures
    ]
    return "\n".join([text.rstrip("\n"), *lines])


def _stem(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", path.stem)[:40] or "image"


def add_image_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--image", metavar="FILE", action="append", help="send this picture with the message (repeatable)"
    )
