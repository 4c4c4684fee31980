"""Where the figures put their text, decided so that no two texts overlap: part of the view data.

A [T, T] heatmap is one size for every head (Q, K and V's as wide as d asks). It may narrow on a small
screen, never below `min_frame_width`, and every decision about its text is made for that narrowest frame,
so it holds at every width: which font its numbers get and which cells show one (a number that does not
fit loses its leading zero, then is left out), which tick labels are kept (every k-th) and whether the
column labels slant. The blend plot's frame is fixed; each named value gets the first place beside its
point that covers no other name, point or the output (farther off with a leader line, or no name at all,
said under the figure).

Text is measured with the wider of DejaVu Sans and DejaVu Serif at each character, the fonts Chromium and
Firefox on Debian draw Bokeh's "helvetica" with (Helvetica and Arial are narrower), so a text is never wider
on screen than measured here. static/attention.js holds the same rules (tests/test_parity.py and
tests/test_actions.py hold the two equal; tests/test_figure_text.py checks the boxes do not meet).
Pure: numbers and strings, no Bokeh.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

# Advance widths of the printable ASCII characters (32 to 126), in thousandths of an em: the wider of DejaVu
# Sans and DejaVu Serif, which Chromium and Firefox on Debian draw Bokeh's "helvetica" with.
CHAR_WIDTHS = (
    318, 402, 460, 838, 636, 950, 890, 275, 390, 390, 500, 838, 318, 361, 318, 337,
    636, 636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 536,
    1000, 722, 735, 765, 802, 730, 694, 799, 872, 395, 401, 747, 664, 1024, 875, 820,
    673, 820, 753, 685, 667, 843, 722, 1028, 712, 660, 695, 390, 337, 390, 838, 500,
    500, 613, 640, 560, 640, 615, 370, 640, 644, 320, 310, 606, 320, 974, 644, 612,
    640, 640, 478, 521, 402, 644, 592, 856, 592, 592, 527, 636, 337, 636, 838,
)  # fmt: skip
OTHER_CHAR = 1000  # any other character of the first plane (−, …, ∞ and letters with accents are narrower)
ASTRAL_CHAR = 1100  # beyond it (an emoji is 1042)
LINE = 1.2  # a line of text, in ems

AXIS_FONT = 11.0  # Bokeh's tick labels
NUMBER_FONTS = (11.0, 10.0, 9.0)  # a heatmap's numbers: the largest that fits its cells
NUMBER_GAP = 3.0  # px left between a cell's number and its neighbour's
WIDE_NUMBER, SHORT_NUMBER = "0.00", ".00"  # what a figure's cells must hold for it to show numbers at all
TICK_GAP = 3.0  # px between two tick labels
SLANT = 0.9  # radians: column labels too wide to lie flat over their cells
BLEND_FONT = 12.0

# A cell's size on screen where there is room (px); a figure's frame never wider or taller than its kind's.
CELL_W, CELL_H = 54, 44
# The narrowest a heatmap that need not fit a phone narrows its cells to; below that its area scrolls.
MIN_CELL_W = 30
# The [T, T] heatmaps, one size for every head (BokehJS lays a whole row of the page out again, there and
# then, for a figure's new size), narrow to a phone's column (390 px less the page's margins) with
# everything around their frame: the row labels' widest plus the rest (axis names, colour bar, toolbar),
# generously. Their height leaves room on a phone's screen for the blend below the weights. Q, K and V's
# figure is as wide as d asks.
PHONE_COLUMN, BORDERS_BESIDE_LABELS = 374, 112
WIDEST_LABEL_PX = 120  # the widest a cut label can be at 11 px: 9 characters beyond the first plane and "…"


class Heatmap(NamedTuple):
    blocks: tuple[str, ...]  # the matrices drawn side by side in the figure
    max_width: int  # px: its frame at most (one that fits a phone: always)
    max_height: int  # px: its frame's height, always
    least_width: int  # px: its frame at least, for its titles (tests/test_book_column.py measures them)
    fits_phone: bool  # narrows as far as a phone's column needs (else to MIN_CELL_W, then scrolls)


GAP = 1  # empty columns between two matrices in one figure
HEATMAPS = {
    "weights": Heatmap(("weights",), 260, 176, 190, True),
    "scores": Heatmap(("scores",), 260, 176, 150, True),
    "scaled": Heatmap(("scaled",), 260, 176, 130, True),
    "qkv": Heatmap(("Q", "K", "V"), 770, 220, 240, False),
}
NO_NUMBERS = "Colours only: the numbers are in “… as a table”."  # under a heatmap too small for them
SOME_NUMBERS = "Numbers too wide for a cell are left out: see “… as a table”."  # some cells left blank
AXIS_LABEL_CHARS = 10  # a token label on an axis is cut to this many characters (the hover has it whole)

# The blend plot: its frame (px, square), its value points' and output's marks, how far from its point a
# name may go (a leader line joins the farther places), and how many names past NUMBERS_UP_TO tokens.
BLEND_FRAME = 230
POINT_PX, STAR_PX = 12.0, 18.0
LABEL_RINGS = (6.0, 20.0, 36.0, 56.0)
DIAGONAL = 0.7  # a diagonal place's share of the ring on each axis
LABEL_MARGIN = 2.0  # px kept between a name and anything else
# Past NUMBERS_UP_TO tokens the blend plot names only the query's value and the BLEND_NAMED_TOP values the
# query weighs most (widgets/viewdata.py named_values): 64 names could not all find room.
NUMBERS_UP_TO, BLEND_NAMED_TOP = 12, 3


def text_px(text: str, size: float) -> float:
    """How wide `text` is at `size` px, by CHAR_WIDTHS."""
    total = 0
    for ch in text:
        k = ord(ch)
        total += CHAR_WIDTHS[k - 32] if 32 <= k < 127 else ASTRAL_CHAR if k > 0xFFFF else OTHER_CHAR
    return total * size / 1000


def short_label(label: str, width: int = AXIS_LABEL_CHARS) -> str:
    """A token label cut to fit an axis or a slider title; the full label stays in hovers and the steps."""
    chars = list(str(label))  # (by code point, as JavaScript's Array.from)
    return "".join(chars) if len(chars) <= width else "".join(chars[: width - 1]) + "…"


def cell_text(text: str, font: float, width: float) -> str:
    """A cell's number as it fits a cell `width` px wide at `font` px: whole, or without its leading zero
    (.85, -.52), or without its trailing zeros too (1, .5), or '' (the figure's table has it)."""
    room = width - NUMBER_GAP
    if text_px(text, font) <= room:
        return text
    short = text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text
    if "." in short and "e" not in short:
        shorter = short.rstrip("0").rstrip(".")
        shorter = shorter if shorter not in ("", "-") else "0"
    else:
        shorter = short
    for candidate in (short, shorter):
        if candidate != text and text_px(candidate, font) <= room:
            return candidate
    return ""


def number_font(cell_w: float, cell_h: float) -> float:
    """The largest of NUMBER_FONTS at which a cell holds a number like 0.00, or failing that .00; 0: none."""
    for sample in (WIDE_NUMBER, SHORT_NUMBER):
        for f in NUMBER_FONTS:
            if text_px(sample, f) + NUMBER_GAP <= cell_w and LINE * f <= cell_h:
                return f
    return 0.0


def number_fit(layout: dict) -> tuple[float, float] | None:
    """(font px, cell width px) for a figure's numbers, or None when it shows none."""
    return (layout["font"], layout["cell_width"]) if layout["font"] else None


def ticks(labels: list[tuple[int, str]], spacing: float, along: float) -> tuple[list[int], list[str]]:
    """Every k-th of (position, label), from the first, k the least that leaves kept labels at least
    `along` px apart when neighbours are `spacing` px apart."""
    k = max(1, math.ceil(along / spacing)) if spacing > 0 else len(labels)
    kept = labels[::k]
    return [p for p, _ in kept], [t for _, t in kept]


def heatmap_layouts(labels, d: int) -> dict:
    """Each heatmap figure's frame and text: widgets/matrix_plot.py and static/explorer_page.js draw them.
    (A move keeps the labels and d: made once for them; read it only.)"""
    return _heatmap_layouts(tuple(str(t) for t in labels), d)


@functools.lru_cache(maxsize=32)
def _heatmap_layouts(labels: tuple, d: int) -> dict:
    rows = [(k, short_label(t)) for k, t in enumerate(labels)]
    label_px = max(text_px(t, AXIS_FONT) for _, t in rows)
    out = {}
    for name, spec in HEATMAPS.items():
        if len(spec.blocks) == 1:
            cols = rows
        else:  # Q[0], Q[1], K[0], …: each column says which matrix it belongs to
            cols = [(k * (d + GAP) + j, f"{n}[{j}]") for k, n in enumerate(spec.blocks) for j in range(d)]
        n_cols = len(labels) if len(spec.blocks) == 1 else d
        span = len(spec.blocks) * (n_cols + GAP) - GAP
        if spec.fits_phone:  # one size for every head: BokehJS lays its row out anew for a new size
            frame_w, frame_h = spec.max_width, spec.max_height
            room = math.floor(PHONE_COLUMN - BORDERS_BESIDE_LABELS - label_px)
            min_width = PHONE_COLUMN
        else:
            frame_w = max(spec.least_width, min(spec.max_width, CELL_W * max(span, 2)))  # (by d alone)
            frame_h = spec.max_height
            room = MIN_CELL_W * max(span, 2)
            min_width = None
        narrow = min(frame_w, max(spec.least_width, room))
        if min_width is None:  # room for any label, so that new labels do not make BokehJS lay its row out
            min_width = math.ceil(narrow + BORDERS_BESIDE_LABELS + WIDEST_LABEL_PX)
        cell_w, cell_h = narrow / span, frame_h / len(rows)
        font = number_font(cell_w, cell_h)
        widest = max(text_px(t, AXIS_FONT) for _, t in cols)
        flat = widest + TICK_GAP <= cell_w
        along = LINE * AXIS_FONT + TICK_GAP
        x_ticks, x_labels = ticks(cols, cell_w if flat else cell_w * math.sin(SLANT), along)
        if flat:  # kept labels lie flat only while they also fit their spacing
            flat = len(x_ticks) < 2 or widest + TICK_GAP <= (x_ticks[1] - x_ticks[0]) * cell_w
        y_ticks, y_labels = ticks(rows, cell_h, along)
        out[name] = {
            "frame_width": frame_w,
            "frame_height": frame_h,
            "min_frame_width": narrow,
            "cell_width": cell_w,
            "font": font,
            "x_ticks": x_ticks,
            "x_labels": x_labels,
            "x_angle": 0.0 if flat else SLANT,
            "y_ticks": y_ticks,
            "y_labels": y_labels,
            "min_width": min_width,
            "note": "" if font else NO_NUMBERS,
        }
    return out


def _box(cx: float, cy: float, w: float, h: float) -> tuple[float, float, float, float]:
    return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2


def _meet(a, b, margin: float = 0.0) -> bool:
    return a[0] < b[2] + margin and b[0] < a[2] + margin and a[1] < b[3] + margin and b[1] < a[3] + margin


def place_blend_labels(data: dict, bounds, query: int) -> dict:
    """Where each named value's name goes, as px offsets from its point (`dx`, `dy`: the box's centre;
    screen y grows downward), leader lines to the names set apart, and what is said under the plot.
    Names are placed the query's first, then by weight, each at the first place that meets nothing placed
    before it, no point and not the output; a name with no such place is left to the hover."""
    values = data["values"]
    xs, ys, named, weights = values["x"], values["y"], values["named"], values["weight"]
    x0, x1, y0, y1 = bounds
    sx, sy = BLEND_FRAME / (x1 - x0), BLEND_FRAME / (y1 - y0)
    px = [(x - x0) * sx for x in xs]
    py = [(y1 - y) * sy for y in ys]
    ox, oy = (data["output"]["x"][0] - x0) * sx, (y1 - data["output"]["y"][0]) * sy
    marks = [_box(a, b, POINT_PX, POINT_PX) for a, b in zip(px, py)]
    star = _box(ox, oy, STAR_PX, STAR_PX)
    n = len(xs)
    dx, dy, shown = [0.0] * n, [0.0] * n, [""] * n
    leaders = {"x0": [], "y0": [], "x1": [], "y1": []}
    placed: list = []
    order = sorted((k for k in range(n) if named[k]), key=lambda k: (k != query, -abs(weights[k]), k))
    left_off = 0
    h = LINE * BLEND_FONT
    for k in order:
        w = text_px(named[k], BLEND_FONT)
        spot = None
        for ring in LABEL_RINGS:
            a, b = ring * DIAGONAL + w / 2, ring * DIAGONAL + h / 2
            for cx, cy in (
                (ring + w / 2, 0.0), (-ring - w / 2, 0.0), (0.0, -ring - h / 2), (0.0, ring + h / 2),
                (a, -b), (-a, -b), (a, b), (-a, b),
            ):  # fmt: skip
                box = _box(px[k] + cx, py[k] + cy, w, h)
                if not (0 <= box[0] and box[2] <= BLEND_FRAME and 0 <= box[1] and box[3] <= BLEND_FRAME):
                    continue
                if _meet(box, star, LABEL_MARGIN) or any(
                    _meet(box, m, LABEL_MARGIN) for j, m in enumerate(marks) if j != k
                ):
                    continue
                if any(_meet(box, p, LABEL_MARGIN) for p in placed):
                    continue
                spot = (cx, cy, box, ring)
                break
            if spot is not None:
                break
        if spot is None:
            left_off += 1
            continue
        cx, cy, box, ring = spot
        placed.append(box)
        dx[k], dy[k], shown[k] = cx, cy, named[k]
        if ring != LABEL_RINGS[0]:  # from the point to the nearest edge of its name
            ex = min(max(px[k], box[0]), box[2])
            ey = min(max(py[k], box[1]), box[3])
            leaders["x0"].append(xs[k])
            leaders["y0"].append(ys[k])
            leaders["x1"].append(x0 + ex / sx)
            leaders["y1"].append(y1 - ey / sy)
    if left_off:
        note = f"{left_off} name{'s' if left_off != 1 else ''} left off (no room): hover the points."
    elif sum(1 for t in named if t) < n:
        note = f"Named: the query and the {BLEND_NAMED_TOP} it weighs most."
    else:
        note = ""
    return {"text": shown, "dx": dx, "dy": dy, "leaders": leaders, "note": note}

