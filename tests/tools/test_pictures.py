"""``read_picture`` (issue 33): a workspace picture within the member's read access becomes an artifact of
the calling dialog, named by the placeholder line a vision-capable model gets the image with."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dominds.access import ACCESS_DENIED
from dominds.rtws import Rtws
from dominds.team import Member, Team
from dominds.tools.base import ToolCallContext, ToolError
from dominds.tools.builtin import builtin_toolsets
from dominds.tools.pictures import READ_PICTURE

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")


def _ctx(rtws: Rtws, dialog_dir: Path, member: Member) -> ToolCallContext:
    team = Team({member.id: member}, default_responder=member.id)
    engine = SimpleNamespace(config=SimpleNamespace(get=lambda: SimpleNamespace(team=team)))
    dialog = SimpleNamespace(files=SimpleNamespace(dir=dialog_dir))
    return ToolCallContext(rtws=rtws, root_id="d1", self_id="d1", agent_id=member.id, call_id="call.7",
                           services={"engine": engine, "dialog": dialog})  # fmt: skip


async def _read(ctx: ToolCallContext, path: str) -> str:
    return await READ_PICTURE.handler(ctx, {"path": path})


async def test_a_picture_becomes_an_artifact_named_by_its_line(tmp_rtws: Rtws, tmp_path: Path) -> None:
    (tmp_rtws.root / "shots").mkdir()
    (tmp_rtws.root / "shots" / "ui.png").write_bytes(PNG)
    out = await _read(_ctx(tmp_rtws, tmp_path / "dlg", Member(id="coder", name="Coder")), "shots/ui.png")
    assert out.startswith("shots/ui.png:\n[image saved as artifact picture-call_7.png (image/png, ")
    assert (tmp_path / "dlg" / "artifacts" / "picture-call_7.png").read_bytes() == PNG
    assert "read_picture" in [t.name for t in builtin_toolsets().get("ws_read") or []]


async def test_read_picture_keeps_to_the_members_read_access(tmp_rtws: Rtws, tmp_path: Path) -> None:
    (tmp_rtws.root / "private").mkdir()
    (tmp_rtws.root / "private" / "x.png").write_bytes(PNG)
    (tmp_rtws.root / ".minds" / "logo.png").write_bytes(PNG)
    member = Member(id="coder", name="Coder", no_read_dirs=("private/**",))
    ctx = _ctx(tmp_rtws, tmp_path / "dlg", member)
    for path in ("private/x.png", ".minds/logo.png", "../outside.png"):
        with pytest.raises(ToolError) as info:
            await _read(ctx, path)
        assert ACCESS_DENIED in str(info.value) or "outside" in str(info.value), path
    assert not (tmp_path / "dlg" / "artifacts").exists()


@pytest.mark.parametrize(("content", "why"), [(b"hello, not a picture", "not a PNG"), (b"", "not a PNG")])
async def test_read_picture_refuses_what_is_not_a_picture(tmp_rtws: Rtws, tmp_path: Path, content: bytes, why: Any) -> None:
    (tmp_rtws.root / "fake.png").write_bytes(content)
    with pytest.raises(ToolError, match=why):
        await _read(_ctx(tmp_rtws, tmp_path / "dlg", Member(id="coder", name="Coder")), "fake.png")
