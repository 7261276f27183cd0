"""The workflow pages (Tree of Thoughts, Debate, Plan & Solve) at phone, tablet and desktop widths, light and dark.

The bugs: at 420 px the Plan & Solve heading broke into three lines ("Plan / & / Solve") beside its
subtitle; none of the three pages had a dark theme (the panel follows ``prefers-color-scheme``, the
pages stayed white in a dark system), and their light-only colours (error boxes, badges, ToT scores)
would have stayed light on a dark page. Now they share one palette (``/static/workflow_theme.css``,
light and dark), the headers wrap between their parts and never inside the heading, and no page
scrolls sideways. Screenshots of every case go to ``test-artifacts/workflow-<page>-<width>-<scheme>.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chromium import launched_chromium
from workspace_kit import write_workspace

from dominds.driver.engine import Engine
from dominds.server import make_app
from dominds.workflows.mount import route_adders, workflow_extensions

TOKEN = "workflow-theme-token"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
pytestmark = pytest.mark.browser

# WCAG contrast of an element's text against the first opaque background behind it.
CONTRAST = """(el) => {
  const rgb = (c) => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  let node = el, bg = null;
  while (node && !bg) {
    const c = rgb(getComputedStyle(node).backgroundColor);
    if (c.length < 4 || c[3] > 0) bg = c;
    node = node.parentElement;
  }
  const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(bg || [255, 255, 255])].sort((x, y) => y - x);
  return { ratio: (a + 0.05) / (b + 0.05), background: lum(bg || [255, 255, 255]) };
}"""

# What each page must show readably: its heading, the muted subtitle, a label, the primary button.
PAGES = {
    "tot": ("header strong", "header .muted", "label[for=problem]", "button.primary"),
    "debate": ("header h1", "header .sub", "#question", "#start"),
    "plan-solve": ("header h1", "header .sub", "#question", "#start"),
}


async def test_every_workflow_page_fits_a_phone_and_is_readable_in_light_and_dark(tmp_path: Path, aiohttp_server: Any) -> None:
    engine = Engine(write_workspace(tmp_path / "ws", []), extensions=workflow_extensions())
    await engine.start()
    server = await aiohttp_server(make_app(engine, token=TOKEN, extra_routes=route_adders()))
    errors: list[str] = []
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        async with launched_chromium() as browser:
            page = await (await browser.new_context()).new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"http://127.0.0.1:{server.port}/?auth={TOKEN}")  # the session cookie
            for name, (heading, subtitle, field, button) in PAGES.items():
                for scheme in ("light", "dark"):
                    await page.emulate_media(color_scheme=scheme)
                    for width in (420, 900, 1280):
                        case = f"{name} at {width} px, {scheme}"
                        await page.set_viewport_size({"width": width, "height": 900})
                        await page.goto(f"http://127.0.0.1:{server.port}/{name}")
                        await page.wait_for_function(f"document.querySelector({heading!r}).textContent.length > 0")
                        await page.screenshot(path=str(ARTIFACTS / f"workflow-{name}-{width}-{scheme}.png"), full_page=True)
                        assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth"), f"{case}: sideways scrolling"
                        lines = await page.locator(heading).evaluate(
                            "el => el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).fontSize)"
                        )
                        assert lines < 2, f"{case}: the heading wraps ({lines:.1f} font sizes tall)"
                        shown = await page.locator(heading).evaluate(CONTRAST)
                        assert (shown["background"] < 0.1) == (scheme == "dark"), f"{case}: the page is not {scheme}"
                        for selector in (heading, subtitle, field, button):
                            ratio = (await page.locator(selector).first.evaluate(CONTRAST))["ratio"]
                            assert ratio >= 4.5, f"{case}: {selector} has contrast {ratio:.2f}"
    finally:
        await engine.close()
    assert errors == []
