"""``read_picture`` (in ``ws_read``): show the model a workspace image within the member's read access.

The picture is copied into the calling dialog's artifacts (as an MCP tool's image is), and the result is
the artifact's placeholder line: a vision-capable model gets the image itself with it
(``driver/images.py``), a text-only model the line; the panel shows the image.
"""

from __future__ import annotations

import re
from typing import Any

from dominds.mcp.results import save_artifact
from dominds.tools.base import FuncTool, ToolCallContext, ToolError, object_schema
from dominds.tools.fs_common import PathPolicy, human_size, os_error

MAX_PICTURE_BYTES = 5 * 1024 * 1024
"""Larger pictures are refused (the providers' per-image limit)."""
PICTURE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def picture_type(head: bytes) -> str | None:
    """The image type of bytes starting with ``head`` (PNG, JPEG, GIF, WebP), from the bytes, not the name."""
    for magic, mime in PICTURE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


async def read_picture(ctx: ToolCallContext, args: dict[str, Any]) -> str:
    policy = PathPolicy.for_call(ctx)
    path = str(args["path"])
    target = policy.check(path, write=False)
    if not target.is_file():
        raise ToolError(f"`{path}` is not a file")
    try:
        size = target.stat().st_size
        if size > MAX_PICTURE_BYTES:
            raise ToolError(f"`{path}` is {human_size(size)}; read_picture takes pictures up to {human_size(MAX_PICTURE_BYTES)}")
        raw = target.read_bytes()
    except OSError as exc:
        raise os_error(exc, path) from exc
    mime = picture_type(raw[:16])
    if mime is None:
        raise ToolError(f"`{path}` is not a PNG, JPEG, GIF or WebP picture")
    dialog = ctx.services.get("dialog")
    dialog_dir = getattr(getattr(dialog, "files", None), "dir", None)
    if dialog_dir is None:
        raise ToolError("read_picture needs a dialog to keep the picture in")
    stem = "picture-" + re.sub(r"[^A-Za-z0-9_-]", "_", ctx.call_id)[:48]
    return f"{policy.rel(target)}:\n" + save_artifact(dialog_dir, ctx.self_id, stem, raw, mime, source=policy.rel(target))


READ_PICTURE = FuncTool(
    "read_picture",
    "Look at a workspace picture (PNG, JPEG, GIF, WebP; up to 5 MiB): you see the image itself when your model "
    "takes images, otherwise a line naming it.",
    object_schema({"path": {"type": "string", "description": "relative to the workspace root"}}, ["path"]),
    read_picture,
)
