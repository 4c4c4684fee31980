"""What the "Attention in tiles" view shows, as plain data: pure functions, no Panel or Bokeh.

`view_data(head, i, labels, size, step)` is everything the view draws for query i of the head on screen
after `step` tiles of `size` keys (core/tiles.py): the row's scores and its weights so far as cells, a
frame around every tile and one around the tile just done, the steps as a table, and a readout saying
where the online softmax stands (and, after the last tile, that its output is the head's).  The served
view writes it into its Bokeh models; static/tiles.js computes the same dict in the browser
(tests/test_tiles.py holds the two equal).
"""

from __future__ import annotations

import html
import math

import numpy as np

from core.attention import Head, exp
from core.cost import sci
from core.tiles import AGREEMENT, TileStep, attend_in_tiles, tiled_difference
from core.trace import fmt, fmt_vector
from widgets.figure_text import (
    AXIS_FONT,
    LINE,
    SLANT,
    TICK_GAP,
    cell_text,
    number_font,
    short_label,
    text_px,
    ticks,
)
from widgets.tiles_state import settle
from widgets.viewdata import MIN_SCORE_LIMIT

UNSEEN_ALPHA = 0.0  # a key no tile has reached yet: no colour, no number
FRAME_INSET = 0.08
# The strip's frame, the same on every screen (it fits a phone): two rows of cells FRAME_WIDTH px wide in
# all, ROW_HEIGHT px high; its numbers and key labels are laid out for it by widgets/figure_text.py's rules.
FRAME_WIDTH, ROW_HEIGHT = 250, 44


def strip_layout(labels: list[str]) -> dict:
    """The cells' number font (0: no numbers), a cell's width, and the key axis's ticks, labels and slant."""
    cell_w = FRAME_WIDTH / len(labels)
    cols = [(k, short_label(t)) for k, t in enumerate(labels)]
    widest = max(text_px(t, AXIS_FONT) for _, t in cols)
    flat = widest + TICK_GAP <= cell_w
    x_ticks, x_labels = ticks(cols, cell_w if flat else cell_w * math.sin(SLANT), LINE * AXIS_FONT + TICK_GAP)
    if flat:  # kept labels lie flat only while they also fit their spacing
        flat = len(x_ticks) < 2 or widest + TICK_GAP <= (x_ticks[1] - x_ticks[0]) * cell_w
    return {
        "font": number_font(cell_w, ROW_HEIGHT),
        "cell_width": cell_w,
        "x_ticks": x_ticks,
        "x_labels": x_labels,
        "x_angle": 0.0 if flat else SLANT,
    }


def weights_so_far(normaliser: str, steps: list[TileStep], T: int) -> np.ndarray:
    """Each key's weight as the running numbers give it after `steps` (NaN for keys not reached):
    exp(s_j − m) / l for the softmax, s_j for raw scores, 1 on the chosen key for top-1."""
    w = np.full(T, np.nan)
    if not steps:
        return w
    r = steps[-1].running
    for s in steps:
        keys = slice(s.start, s.stop)
        visible = np.isfinite(s.scores)
        if normaliser == "softmax":
            w[keys] = np.where(visible, exp(np.where(visible, s.scores - r.maximum, 0.0)) / r.total, 0.0)
        elif normaliser == "raw":
            w[keys] = np.where(visible, s.scores, 0.0)
        else:
            w[keys] = [1.0 if k == r.chosen else 0.0 for k in range(s.start, s.stop)]
    return w


def cells(head: Head, labels, steps_all: list[TileStep], step: int, layout: dict) -> tuple[dict, dict]:
    """The row's scores (y = 0) and weights so far (y = 1), one cell per key; keys not reached are blank.

    The scores' source also holds each key and both numbers as text, whole (for the figure's table,
    widgets/a11y.py): a cell shows its number only as it fits (`layout`, figure_text's cell_text).
    """
    T = head.T
    done = steps_all[:step]
    reached = done[-1].stop if done else 0
    scores = np.concatenate([s.scores for s in steps_all])
    weights = weights_so_far(head.options.normaliser, done, T)
    shown = [k < reached for k in range(T)]
    masked = [not np.isfinite(scores[k]) for k in range(T)]  # grey, as in the heatmaps
    font, width = layout["font"], layout["cell_width"]

    def texts(values, masked_text: str) -> list[str]:
        return ["" if not seen else masked_text if m else fmt(v) for v, seen, m in zip(values, shown, masked)]

    def column(values, masked_text: str, y: float) -> dict:
        value = [float(v) if seen and not m else math.nan for v, seen, m in zip(values, shown, masked)]
        return {
            "x": [float(k) for k in range(T)],
            "y": [y] * T,
            "value": value,
            "text": [cell_text(t, font, width) if font else "" for t in texts(values, masked_text)],
            "alpha": [1.0 if seen else UNSEEN_ALPHA for seen in shown],
        }

    score_cells = column(scores, "−∞", 0.0)
    score_cells.update(key=list(labels), score_text=texts(scores, "−∞"), weight_text=texts(weights, "0"))
    return score_cells, column(weights, "0", 1.0)


def frames(spans: list[tuple[int, int]]) -> dict:
    """A frame around each tile, over both rows of cells."""
    return {
        "x": [(a + b - 1) / 2 for a, b in spans],
        "y": [0.5] * len(spans),
        "width": [b - a - FRAME_INSET for a, b in spans],
        "height": [2 - FRAME_INSET] * len(spans),
    }


def score_limits(head: Head, i: int) -> list[float]:
    finite = np.abs(head.masked[i][np.isfinite(head.masked[i])])
    limit = float(max(MIN_SCORE_LIMIT, finite.max() if finite.size else 0.0))
    return [-limit, limit]


def weight_limits(head: Head, i: int) -> list[float]:
    w = head.weights[i]
    return [float(min(0.0, w.min())), float(max(1.0, w.max()))]


def keys_text(labels, start: int, stop: int) -> str:
    names = [f"'{labels[k]}'" for k in range(start, stop)]
    return names[0] if len(names) == 1 else f"{names[0]} to {names[-1]}"


def running_text(normaliser: str, s: TileStep, V: np.ndarray, first: bool) -> tuple[str, str, str, str]:
    """(m, rescale, l, output so far) for a row of the table; '—' where the normaliser keeps none, and
    for the rescale of the first tile (nothing was summed before it)."""
    r = s.running
    out = fmt_vector(r.output(normaliser, V))
    if normaliser == "softmax":
        return fmt(r.maximum), "—" if first else fmt(s.rescale, 3), fmt(r.total, 3), out
    if normaliser == "top1":
        return fmt(r.maximum), "—", "—", out
    return "—", "—", "—", out


def table_html(head: Head, labels, steps_all: list[TileStep], step: int) -> str:
    """One row per tile done: its keys, its largest score, then m, exp(m − m'), l and the output so far."""
    e = html.escape
    normaliser = head.options.normaliser
    head_row = (
        "<tr><th>tile</th><th>keys</th><th>its largest score</th><th>running max m</th>"
        "<th>earlier sums × exp(m − m′)</th><th>running sum l</th><th>output so far</th></tr>"
    )
    rows = []
    for k, s in enumerate(steps_all[:step]):
        where = e(keys_text(labels, s.start, s.stop))
        if s.skipped:
            cells_ = [f"{k + 1}", where, "all masked: skipped", "", "", "", ""]
        else:
            running = running_text(normaliser, s, head.V, first=k == 0)
            cells_ = [f"{k + 1}", where, e(fmt(s.tile_max)), *map(e, running)]
        mark = " class='now'" if k == step - 1 else ""
        rows.append(f"<tr{mark}>" + "".join(f"<td>{c}</td>" for c in cells_) + "</tr>")
    if step < len(steps_all):
        nxt = steps_all[step]
        where = e(keys_text(labels, nxt.start, nxt.stop))
        nxt = f"<td>{step + 1}</td><td>{where}</td><td colspan='5'>Next tile</td>"
        rows.append(f"<tr class='next'>{nxt}</tr>")
    # (in a box that scrolls sideways on a phone: seven columns need more than 390 px)
    return f"<div class='tiles-scroll'><table class='tiles-table'>{head_row}{''.join(rows)}</table></div>"


def readout_html(head: Head, i: int, labels, size: int, steps_all: list[TileStep], step: int) -> str:
    """Where the computation stands, in a few sentences (all values escaped)."""
    e = html.escape
    n = len(steps_all)
    me = labels[i]
    normaliser = head.options.normaliser
    kept = {
        "softmax": "the running max m, the running sum l of exp(s − m) and acc, the sum of exp(s − m) times "
        "each value",
        "raw": "acc, the sum of each raw score times its value (raw scores as weights need no max or sum)",
        "top1": "the largest score so far and its key (top-1 needs no sum)",
    }[normaliser]
    lines = [
        f"The row of '{me}': {head.T} keys in {n} tile{'s' if n != 1 else ''} of {size}. After each tile "
        "only "
        f"{kept} are kept; the tile's scores are dropped."
    ]
    if step == 0:
        lines.append("No tile yet: m = −∞, l = 0, acc = 0. Press Next tile.")
    else:
        s = steps_all[step - 1]
        out = fmt_vector(s.running.output(normaliser, head.V))
        lines.append(
            f"After tile {step} of {n} ({keys_text(labels, s.start, s.stop)}"
            + (", all after the query: skipped" if s.skipped else "")
            + f"): output so far {out}."
        )
    if step == n:
        difference = tiled_difference(head, i, steps_all)
        ok = "✓" if difference <= AGREEMENT else "✗"
        lines.append(
            f"The last tile gives the head's own output, {fmt_vector(head.output[i])}: the two differ by "
            f"{sci(difference) if difference else '0'} (as a share of the blend's size), within "
            f"{AGREEMENT:g} {ok}."
        )
    d = head.d
    count, what = {
        "softmax": (d + 2, f"m, l and a {d}-wide acc"),
        "raw": (d, f"a {d}-wide acc"),
        "top1": (2, "the largest score and its key"),
    }[normaliser]
    lines.append(
        f"Held at once: one tile of {size} score{'s' if size != 1 else ''} and {count} running numbers "
        f"({what}), never the row's {head.T} scores; a real model tiles the queries too, and never holds "
        "the T × T matrix."
    )
    return "<div class='tiles-readout'>" + "".join(f"<p>{e(line)}</p>" for line in lines) + "</div>"


def view_data(head: Head, i: int, labels, size: int, step: int) -> dict:
    """Everything the view shows for query i after `step` tiles of `size` keys (both within the head)."""
    labels = [str(x) for x in labels]
    size, step, count = settle(size, step, head.T)
    steps_all = attend_in_tiles(head, i, size)
    layout = strip_layout(labels)
    scores, weights = cells(head, labels, steps_all, step, layout)
    spans = [(s.start, s.stop) for s in steps_all]
    return {
        "layout": layout,
        "scores": scores,
        "weights": weights,
        "tiles": frames(spans),
        "current": frames(spans[step - 1 : step] if step else []),
        "score_limits": score_limits(head, i),
        "weight_limits": weight_limits(head, i),
        "size": size,
        "step": step,
        "count": count,
        "T": head.T,
        "table": table_html(head, labels, steps_all, step),
        "readout": readout_html(head, i, labels, size, steps_all, step),
    }
