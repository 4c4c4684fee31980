"""The students' address as a QR code: text blocks for the terminal, SVG for the teacher's page (segno).

In the terminal each character cell holds two modules, one above the other (▀ ▄ █ and space).  Light
modules are drawn and dark ones left blank, which reads correctly on the usual dark terminal; when the
output is a terminal, colours are set as well (black on white) so that a light-themed one shows it the
right way round too.
"""

from __future__ import annotations

import segno

QUIET = 4  # modules of light border the QR standard asks for
# (top module light, bottom module light) -> the character drawing them
BLOCKS = {(True, True): "█", (True, False): "▀", (False, True): "▄", (False, False): " "}
COLOURS = ("\x1b[97;40m", "\x1b[0m")  # bright white on black, reset


def make(text: str) -> segno.QRCode:
    return segno.make(text, error="m", micro=False)


def modules(text: str) -> list[list[bool]]:
    """The code's modules with the quiet zone around them, True for dark."""
    matrix = [[bool(v) for v in row] for row in make(text).matrix]
    n = len(matrix) + 2 * QUIET
    blank = [[False] * n for _ in range(QUIET)]
    return blank + [[False] * QUIET + row + [False] * QUIET for row in matrix] + [r[:] for r in blank]


def terminal_text(text: str, colour: bool = False) -> str:
    """Lines of block characters, two rows of modules per line."""
    rows = modules(text)
    if len(rows) % 2:
        rows.append([False] * len(rows[0]))
    lines = []
    for top, bottom in zip(rows[0::2], rows[1::2], strict=True):
        line = "".join(BLOCKS[(not a, not b)] for a, b in zip(top, bottom, strict=True))
        lines.append(f"{COLOURS[0]}{line}{COLOURS[1]}" if colour else line)
    return "\n".join(lines)


def read_terminal_text(block: str) -> list[list[bool]]:
    """The modules (True for dark) back from `terminal_text` (no colours): for tests."""
    chars = {v: k for k, v in BLOCKS.items()}
    rows: list[list[bool]] = []
    for line in block.splitlines():
        pairs = [chars[c] for c in line]
        rows.append([not top for top, _ in pairs])
        rows.append([not bottom for _, bottom in pairs])
    return rows


def svg(text: str, scale: int = 10) -> str:
    """An inline <svg> of the code, black on white, with its quiet zone."""
    return make(text).svg_inline(scale=scale, border=QUIET, dark="#000", light="#fff", title=text)
