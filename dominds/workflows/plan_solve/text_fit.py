"""Choosing font sizes and cutting labels so that text fits its box on a slide, without measuring fonts.

python-pptx cannot measure text without the font files, and the font a viewer uses is not known when the
file is written (PowerPoint has Calibri, LibreOffice may substitute Carlito or DejaVu Sans). So widths are
estimated per character, on the wide side: East Asian wide and full-width characters count one em, other
characters ``LATIN_EM`` em (DejaVu Sans, the widest common substitute, averages about 0.55 em). A size is
chosen when the wrapped lines fit the box's height; labels longer than their room are cut with "…".
"""

from __future__ import annotations

import math
import unicodedata

LATIN_EM = 0.58
LINE_SPACING = 1.2
POINTS_PER_INCH = 72.0


def char_em(char: str) -> float:
    return 1.0 if unicodedata.east_asian_width(char) in ("W", "F") else LATIN_EM


def text_em(text: str) -> float:
    return sum(char_em(c) for c in text)


def wrapped_lines(text: str, font_pt: float, width_in: float) -> int:
    """Lines ``text`` takes at ``font_pt`` in a box ``width_in`` wide (greedy word wrap; CJK wraps anywhere)."""
    room_em = width_in * POINTS_PER_INCH / font_pt
    total = 0
    for paragraph in text.split("\n") or [""]:
        lines, used = 1, 0.0
        for word in _words(paragraph):
            width = text_em(word)
            if used and used + width > room_em:
                lines, used = lines + 1, 0.0
                word = word.lstrip()
                width = text_em(word)
            if width > room_em:  # a word longer than the line breaks inside
                extra = math.ceil(width / room_em) - 1
                lines, used = lines + extra, width - extra * room_em
            else:
                used += width
        total += lines
    return total


def fit_font(text: str, sizes: tuple[float, ...], width_in: float, height_in: float) -> float:
    """The largest of ``sizes`` (largest first) at which ``text`` fits; the smallest when none does."""
    for size in sizes:
        if wrapped_lines(text, size, width_in) * size * LINE_SPACING <= height_in * POINTS_PER_INCH:
            return size
    return sizes[-1]


def cut_to_fit(text: str, sizes: tuple[float, ...], width_in: float, height_in: float) -> tuple[str, float]:
    """``fit_font``, and when even the smallest size overflows, the text cut (at a word) with "…"."""
    size = fit_font(text, sizes, width_in, height_in)
    if wrapped_lines(text, size, width_in) * size * LINE_SPACING <= height_in * POINTS_PER_INCH:
        return text, size
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits with the ellipsis
        middle = (low + high + 1) // 2
        candidate = text[:middle].rstrip() + "…"
        if wrapped_lines(candidate, size, width_in) * size * LINE_SPACING <= height_in * POINTS_PER_INCH:
            low = middle
        else:
            high = middle - 1
    cut = text[:low]
    if " " in cut[-20:]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip() + "…", size


def short_label(text: str, max_em: float) -> str:
    """A chart label cut to ``max_em`` em with "…" (category axes do not wrap well)."""
    if text_em(text) <= max_em:
        return text
    out, used = "", 0.0
    for char in text:
        used += char_em(char)
        if used > max_em - LATIN_EM:
            break
        out += char
    return out.rstrip() + "…"


def _words(paragraph: str) -> list[str]:
    """Words with their leading space; every East Asian wide character is a word of its own."""
    words: list[str] = []
    current = ""
    for char in paragraph:
        if char_em(char) == 1.0:
            if current:
                words.append(current)
            words.append(char)
            current = ""
        elif char == " " and current.strip():
            words.append(current)
            current = " "
        else:
            current += char
    if current:
        words.append(current)
    return words
