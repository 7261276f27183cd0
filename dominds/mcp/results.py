"""An MCP tool result as the text the model reads; images and other binary content become artifacts.

Text blocks are kept as text. Image, audio and binary resource blocks are decoded and written under
the calling dialog's directory (``<dialog dir>/artifacts/<name>``); the text gets a line naming the
artifact and the URL the daemon serves it at (``/api/dialogs/<selfId>/artifacts/<name>``, behind the
same auth as the rest of the API), which the panel shows as an image or a link.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import re
from pathlib import Path
from typing import Any

from dominds.rtws import STATE_DIR_MODE, STATE_FILE_MODE
from dominds.store.atomic import write_atomic

ARTIFACTS_DIR = "artifacts"
ARTIFACT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MAX_TEXT = 200_000


def artifact_url(self_id: str, name: str) -> str:
    return f"/api/dialogs/{self_id}/artifacts/{name}"


def _extension(mime: str) -> str:
    ext = mimetypes.guess_extension(mime.split(";")[0].strip()) or ".bin"
    return ".jpg" if ext == ".jpe" else ext


def render_result(result: Any, dialog_dir: Path | None, self_id: str, call_id: str) -> tuple[str, bool]:
    """``(text, is_error)`` for a ``CallToolResult``; binary blocks are saved under ``dialog_dir``."""
    parts: list[str] = []
    safe_call = re.sub(r"[^A-Za-z0-9_-]", "_", call_id)[:48] or "call"
    for index, block in enumerate(result.content or [], 1):
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(_save(block.data, block.mime_type, kind, dialog_dir, self_id, f"{safe_call}-{index}"))
        elif kind == "resource":
            resource = block.resource
            if hasattr(resource, "text"):
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
            else:
                mime = resource.mime_type or "application/octet-stream"
                parts.append(_save(resource.blob, mime, "resource", dialog_dir, self_id, f"{safe_call}-{index}", str(resource.uri)))
        elif kind == "resource_link":
            parts.append(f"[resource link] {block.uri}" + (f" ({block.name})" if getattr(block, "name", None) else ""))
        else:
            parts.append(f"[{kind or 'unknown'} content left out]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    text = "\n".join(parts) if parts else "(no content)"
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"\n[… {len(text) - MAX_TEXT} characters of the result omitted …]"
    return text, bool(result.is_error)


def _save(data: str, mime: str, kind: str, dialog_dir: Path | None, self_id: str, stem: str, uri: str = "") -> str:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind} ({mime}) left out: its data is not valid base64]"
    if dialog_dir is None:
        return f"[{kind} ({mime}, {len(raw)} bytes) not saved: no dialog directory]"
    return save_artifact(dialog_dir, self_id, stem, raw, mime, kind, uri)


def save_artifact(dialog_dir: Path, self_id: str, stem: str, raw: bytes, mime: str, kind: str = "image", source: str = "") -> str:
    """Write ``raw`` as a dialog artifact; returns the placeholder line the model and the panel read
    (``driver/images.py`` finds image lines again to send the image itself to a vision-capable model)."""
    name = f"{stem}{_extension(mime)}"
    # As private as the dialog's other files (a screenshot is part of the transcript): issue 34, item 10.
    (dialog_dir / ARTIFACTS_DIR).mkdir(mode=STATE_DIR_MODE, parents=True, exist_ok=True)
    write_atomic(dialog_dir / ARTIFACTS_DIR / name, raw, create_mode=STATE_FILE_MODE)
    where = f" from {source}" if source else ""
    return f"[{kind} saved as artifact {name} ({mime}, {len(raw)} bytes){where}: {artifact_url(self_id, name)}]"


IMAGE_ARTIFACT_LINE = re.compile(
    r"\[image saved as artifact (?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,127}) \((?P<mime>image/[A-Za-z0-9.+-]+), \d+ bytes\)"
)
"""An image placeholder line written by ``save_artifact``."""
