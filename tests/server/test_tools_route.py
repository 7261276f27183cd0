"""`/tools` opens the Tools view.

The bug: the Tools view lived only at `/static/tools.html`; `/tools`, the address a person types after
reading about "the Tools page", was a 404."""

from __future__ import annotations

from server_kit import ServeFactory


async def test_tools_is_the_tools_page(serve: ServeFactory) -> None:
    served = await serve()
    moved = await served.client.get("/tools?lang=zh", allow_redirects=False)
    assert moved.status == 302 and moved.headers["Location"] == "/static/tools.html?lang=zh"
    page = await served.client.get("/tools")
    assert page.status == 200 and 'id="tools-table"' in await page.text()
