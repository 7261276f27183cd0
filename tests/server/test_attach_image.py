"""``POST /api/dialogs/<selfId>/artifacts`` (issue 33): an image a user attaches is stored in the dialog and
answered with the line to put in the message; what is not an image, too big, or for no dialog is refused
at the edge with a clear message."""

from __future__ import annotations

import io
from typing import Any

from server_kit import ServeFactory

from dominds.tools.pictures import MAX_PICTURE_BYTES

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")


async def _attach(served: Any, self_id: str, body: bytes, mime: str = "image/png") -> tuple[int, Any]:
    resp = await served.client.post(
        f"/api/dialogs/{self_id}/artifacts", data=io.BytesIO(body), headers={**served.auth(), "Content-Type": mime}
    )
    return resp.status, await resp.json()


async def test_an_attached_image_is_stored_and_named_by_its_line(serve: ServeFactory) -> None:
    served = await serve()
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    self_id = created["selfId"]
    status, stored = await _attach(served, self_id, PNG)
    assert status == 201 and stored["line"].startswith(f"[image saved as artifact {stored['name']} (image/png, {len(PNG)} bytes)")
    resp = await served.client.get(stored["url"], headers=served.auth())
    assert resp.status == 200 and await resp.read() == PNG


async def test_what_is_not_an_attachable_image_is_refused(serve: ServeFactory) -> None:
    served = await serve()
    _, created = await served.post("/api/dialogs", {"taskDocPath": "tasks/t.tsk"})
    self_id = created["selfId"]
    status, body = await _attach(served, self_id, b"<svg onload=alert(1)>", "image/svg+xml")
    assert status == 415 and "PNG, JPEG, GIF or WebP" in body["error"]
    status, body = await _attach(served, self_id, PNG + b"\0" * MAX_PICTURE_BYTES)
    assert status == 413 and "larger than" in body["error"]
    status, body = await _attach(served, "0nosuchdlg-abcd", PNG)
    assert status == 404
    assert not list((served.engine.rtws.root / ".dialogs").rglob("upload-*")), "nothing refused was stored"
