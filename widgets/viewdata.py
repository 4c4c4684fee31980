"""What each figure shows, as plain column dicts, computed from a Head.

The served widget assigns these to its ColumnDataSources; the static
export's JavaScript port (static/attention.js) builds the same dicts in the
browser, and tests/test_parity.py holds the two to 1e-9.  So everything here
is plain numbers and strings: no Bokeh, no Panel.
"""

from __future__ import annotations

import functools
import html
import math
import re

import numpy as np

from core.attention import Head
from core.lessons import convex_hull
from core.notes import note
from core.presets import PRESETS
from core.trace import Trace, fmt, fmt_vector, trace
from widgets.figure_text import (
    BLEND_NAMED_TOP,
    HEATMAPS,
    NUMBERS_UP_TO,
    SOME_NUMBERS,
    cell_text,
    heatmap_layouts,
    number_fit,
    place_blend_labels,
)
from widgets.lesson_data import Lesson, lesson_view

# Colour limits never shrink below this, so a row of near-zero scores is not
# painted at full saturation.
MIN_SCORE_LIMIT = 1.0
# A printed vector, kept on one line in the steps table.
VECTOR = re.compile(r"\[[^\[\]]*\]")


def step_line_html(line: str) -> str:
    """One line of a step as the steps panel holds it: escaped, each printed vector kept on one line."""
    return VECTOR.sub(r'<span class="vec">\g<0></span>', html.escape(line))


def matrix_cells(
    M: np.ndarray,
    row_labels,
    col_labels,
    hidden: np.ndarray | None = None,
    hidden_text: str = "−∞",
    fit: tuple[float, float] | None = (11.0, math.inf),
) -> dict:
    """One rectangle per entry: x is the column, y the row; hidden cells get NaN (grey) and `hidden_text`.
    Each cell's text is its number as it fits `fit` = (font px, cell width px), or '' (see cell_text);
    `fit` None: no numbers at all (the figure's cells are too small for any)."""
    rows, cols = M.shape
    x, y, row, col = _grid(tuple(map(str, row_labels[:rows])), tuple(map(str, col_labels[:cols])))
    value = np.array(M, dtype=float).ravel()
    if hidden is not None:
        value = np.where(hidden.ravel(), np.nan, value)
    values = value.tolist()  # once: Python floats format faster than numpy's scalars
    return {
        "x": x,
        "y": y,
        "value": values,
        "text": (
            [cell_text(hidden_text if math.isnan(v) else fmt(v), *fit) for v in values]
            if fit is not None
            else [""] * len(values)
        ),
        "row": row,
        "col": col,
    }


@functools.lru_cache(maxsize=32)
def _grid(row_labels: tuple, col_labels: tuple) -> tuple[list, list, list, list]:
    """The columns of a matrix's cells that depend only on its labels (a move keeps them: made once;
    read them only)."""
    rows, cols = len(row_labels), len(col_labels)
    y, x = np.divmod(np.arange(rows * cols), cols)
    return (
        x.astype(float).tolist(),
        y.astype(float).tolist(),
        [row_labels[i] for i in y],
        [col_labels[j] for j in x],
    )


def score_limit(M: np.ndarray) -> float:
    """Half-width of the diverging colour range: the largest finite |score|, at least 1."""
    finite = np.abs(M[np.isfinite(M)])
    return float(max(MIN_SCORE_LIMIT, finite.max() if finite.size else 0.0))


def weight_limits(W: np.ndarray) -> tuple[float, float]:
    """Colour range for weights: 0..1, widened when raw scores are used as weights."""
    return float(min(0.0, W.min())), float(max(1.0, W.max()))


def row_outline(i: int, columns: int) -> dict:
    """The frame around the chosen query's row."""
    return {"x": [(columns - 1) / 2], "y": [float(i)], "width": [float(columns)], "height": [1.0]}


MATRICES = ("scores", "scaled", "weights", "Q", "K", "V")


def heatmaps(head: Head, labels) -> dict:
    """Cells, colour limits and text layout (widgets/figure_text.py) for the three [T, T] heatmaps and the
    three [T, d] matrices."""
    dims = [str(k) for k in range(head.d)]
    layout = heatmap_layouts(labels, head.d)
    fit = {block: number_fit(layout[figure]) for figure, spec in HEATMAPS.items() for block in spec.blocks}
    cells, limits = {}, {}
    # Raw scores are shown whole, as Q·Kᵀ computes them; the mask greys out
    # the later keys from the scaled scores on, where the chapter applies it.
    cells["scores"] = matrix_cells(head.scores, labels, labels, fit=fit["scores"])
    limits["scores"] = _symmetric(score_limit(head.scores))
    cells["scaled"] = matrix_cells(head.masked, labels, labels, head.future, fit=fit["scaled"])
    limits["scaled"] = _symmetric(score_limit(head.masked))
    cells["weights"] = matrix_cells(head.weights, labels, labels, head.future, "0", fit["weights"])
    limits["weights"] = weight_limits(head.weights)
    qkv_limit = _symmetric(score_limit(np.concatenate([head.Q, head.K, head.V])))
    for name, M in (("Q", head.Q), ("K", head.K), ("V", head.V)):
        cells[name] = matrix_cells(M, labels, dims, fit=fit[name])
        limits[name] = qkv_limit
    # a figure with numbers says so when some are left out (the layouts are shared: a copy that says it)
    layout = {
        figure: {**layout[figure], "note": SOME_NUMBERS}
        if layout[figure]["font"] and any(not t for block in spec.blocks for t in cells[block]["text"])
        else layout[figure]
        for figure, spec in HEATMAPS.items()
    }
    return {"cells": cells, "limits": limits, "layout": layout}


def _symmetric(limit: float) -> tuple[float, float]:
    return -limit, limit


# The last few view data made in this process. Sessions on the same head (a classroom send gives every
# student of the process the same Head object, widgets/state.py) share one; its users only read it.
_RECENT_VIEWS: dict[tuple, tuple[Head, dict]] = {}
RECENT_VIEWS = 8


def view_data(
    head: Head,
    i: int,
    labels,
    dims=(0, 1),
    moved=None,
    before: Head | None = None,
    lesson: Lesson | None = None,
) -> dict:
    """Everything the figures and text panels show for query i: one dict, one update (read it only).

    After a token slider's move, `moved` (token, component, value before) and `before` (the head before
    the move) add the rows it left alone and those it changed (`row_marks`), said below the checks. Given
    `lesson`, the lesson's part is under "lesson": the walk, the question (widgets/lesson_data.py).
    """
    key = (id(head), i, tuple(labels), tuple(dims), lesson)
    kept = _RECENT_VIEWS.get(key)
    if kept is not None and kept[0] is head:
        data = kept[1]
    else:
        data = _view_data(head, i, labels, dims)
        if lesson is not None:
            data["lesson"] = lesson_view(head, i, labels, lesson, data["blend"], preset_note)
        _RECENT_VIEWS[key] = (head, data)
        while len(_RECENT_VIEWS) > RECENT_VIEWS:
            del _RECENT_VIEWS[next(iter(_RECENT_VIEWS))]
    if moved is None or before is None:
        return data
    changed = changed_rows(head, before)
    said = moved_html(head, labels, moved, changed)  # under the checks: every page that shows them shows it
    return {**data, "moved": row_marks(changed), "checks": data["checks"].removesuffix(MOVE_HINT) + said}


def _view_data(head: Head, i: int, labels, dims) -> dict:
    t = trace(head, i, labels)
    data = heatmaps(head, labels)
    data["outline"] = row_outline(i, head.T)
    data["blend"] = blend(head, i, labels, dims)
    data["bounds"] = blend_bounds(data["blend"])
    placed = place_blend_labels(data["blend"], data["bounds"], i)
    data["blend"]["values"].update(named=placed["text"], dx=placed["dx"], dy=placed["dy"])
    data["blend"]["leaders"] = placed["leaders"]
    data["layout"]["blend"] = {"note": placed["note"]}
    data["steps"] = steps_html(t)
    data["checks"] = checks_html(t, labels) + MOVE_HINT  # (a move says what it did in its place)
    data["moved"] = row_marks(None)
    return data


# --- rows that cannot see the future: what a token slider's move changed, row by row --------------------

MARK_INSET = 0.16  # a mark's frame sits this far inside its rows, clear of the query's outline
# Under the checks until a slider moves, so the panel keeps one shape whether or not one has (a page that
# draws a move writes only the texts that changed: static/explorer_page.js writeMarkup).
MOVE_HINT = '<p class="moved">' + html.escape(
    "Move a token's slider: the rows of the weights it leaves unchanged get a dashed frame, those it changes "
    "a purple one."
) + "</p>"


def changed_rows(head: Head, before: Head) -> list[bool]:
    """For each query, whether its weights or its output differ from `before`'s in any bit."""
    same = [np.array_equal(a, b) for a, b in zip(head.weights, before.weights)]
    return [not (s and np.array_equal(a, b)) for s, a, b in zip(same, head.output, before.output)]


def row_runs(rows: list[int]) -> list[tuple[int, int]]:
    """Consecutive rows as (first, last) runs: [0, 1, 2, 5] → [(0, 2), (5, 5)]."""
    out: list[tuple[int, int]] = []
    for r in rows:
        if out and out[-1][1] == r - 1:
            out[-1] = (out[-1][0], r)
        else:
            out.append((r, r))
    return out


def row_marks(changed: list[bool] | None) -> dict:
    """The weights heatmap's frames: one around each run of rows left unchanged, one around each run that
    changed (none when nothing moved)."""

    def frames(rows: list[int]) -> dict:
        blocks = row_runs(rows)
        T = len(changed or ())
        return {
            "x": [(T - 1) / 2] * len(blocks),
            "y": [(a + b) / 2 for a, b in blocks],
            "width": [T - MARK_INSET] * len(blocks),
            "height": [b - a + 1 - MARK_INSET for a, b in blocks],
        }

    if changed is None:
        return {"unchanged": frames([]), "changed": frames([])}
    return {
        "unchanged": frames([i for i, c in enumerate(changed) if not c]),
        "changed": frames([i for i, c in enumerate(changed) if c]),
    }


def row_names(labels, rows: list[int]) -> str:
    """Rows by their tokens, a run as its first and last: "'The' to 'sat', 'it'"."""
    return ", ".join(
        f"'{labels[a]}'" if a == b else f"'{labels[a]}' to '{labels[b]}'" for a, b in row_runs(rows)
    )


def moved_html(head: Head, labels, moved, changed: list[bool]) -> str:
    """What the move changed, in words: the rows left alone, the rows changed, and why."""
    token, component = moved[0], moved[1]
    me = str(labels[token])
    same = [i for i, c in enumerate(changed) if not c]
    diff = [i for i, c in enumerate(changed) if c]
    parts = []
    if same:
        parts.append(f"the rows of {row_names(labels, same)} did not change, to the last bit (dashed)")
    if diff:
        parts.append(f"{row_names(labels, diff)} changed (purple)")
    text = f"Moving {me}[{component}]: " + "; ".join(parts) + "."
    if head.causal and token > 0 and all(not changed[i] for i in range(token)):
        text += f" With the mask on, no token before '{me}' can see it."
    elif not head.causal and any(changed[i] for i in range(token)):
        text += f" With the mask off, tokens before '{me}' read it too."
    return f'<p class="moved">{html.escape(text)}</p>'


def blend_dims(d: int, dims=(0, 1)) -> tuple[int, int | None]:
    """The two value coordinates to plot; with d = 1 there is only one (y is 0)."""
    a = min(max(int(dims[0]), 0), d - 1)
    if d == 1:
        return a, None
    b = min(max(int(dims[1]), 0), d - 1)
    return a, (b if b != a else (a + 1) % d)


def blend(head: Head, i: int, labels, dims=(0, 1)) -> dict:
    """The value points, their hull, query i's output and a link to each value, weighted."""
    a, b = blend_dims(head.d, dims)
    vx = head.V[:, a]
    vy = head.V[:, b] if b is not None else np.zeros(head.T)
    out = head.output[i]
    ox, oy = float(out[a]), float(out[b]) if b is not None else 0.0
    w = head.weights[i]
    strength = np.clip(np.abs(w), 0.0, 1.0)
    hx, hy = convex_hull(vx, vy)
    texts = [fmt(v) for v in w]
    return {
        "values": {
            "x": vx.tolist(),
            "y": vy.tolist(),
            "label": [str(k) for k in labels],
            "named": named_values(labels, texts, i),
            "weight": w.tolist(),
            "text": texts,
        },
        "hull": {"x": hx, "y": hy},
        "output": {"x": [ox], "y": [oy], "label": [f"output of {labels[i]}"], "text": [fmt_vector(out)]},
        "links": {
            "x0": [ox] * head.T,
            "y0": [oy] * head.T,
            "x1": vx.tolist(),
            "y1": vy.tolist(),
            "alpha": (0.08 + 0.92 * strength).tolist(),
            "width": (1.0 + 7.0 * strength).tolist(),
        },
        "axes": {"x": f"value[{a}]", "y": f"value[{b}]" if b is not None else "(d = 1)"},
    }


def blend_bounds(data: dict, margin: float = 0.15) -> tuple[float, float, float, float]:
    """A box around everything the blend plot draws, with a margin, never degenerate; its edges on a grid
    of a round step (an eighth of the larger side or more), so that a small move leaves the frame (and so
    where each label fits) as it was."""
    xs = data["values"]["x"] + data["output"]["x"]
    ys = data["values"]["y"] + data["output"]["y"]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    # at least a millionth of the farthest coordinate: a lone value at -1e100 would otherwise get a box whose
    # edges round to the same float
    span = max(x1 - x0, y1 - y0, 1.0, 1e-6 * max(abs(x0), abs(x1), abs(y0), abs(y1)))
    pad = margin * span
    unit = round_step(span / 8)
    return (
        math.floor((x0 - pad) / unit) * unit,
        math.ceil((x1 + pad) / unit) * unit,
        math.floor((y0 - pad) / unit) * unit,
        math.ceil((y1 + pad) / unit) * unit,
    )


def round_step(v: float) -> float:
    """The smallest of 1, 2, 5 × a power of ten that is at least v (> 0), by exact steps of ten."""
    p = 1.0
    while p * 10 <= v:
        p *= 10
    while p > v:
        p /= 10
    return next(m * p for m in (1, 2, 5, 10) if m * p >= v)


def named_values(labels, weight_texts, i: int) -> list[str]:
    """The names the blend plot writes beside its value points ('' for a point left unnamed): every token's
    up to NUMBERS_UP_TO tokens; past that the query's, and the BLEND_NAMED_TOP largest weights (in size,
    as shown: two decimals, so the JS page ranks the very same numbers; a tie goes to the earlier token;
    a weight shown as 0 is not among them)."""
    if len(labels) <= NUMBERS_UP_TO:
        return [str(k) for k in labels]
    shown = [abs(float(t)) for t in weight_texts]
    ranked = sorted((k for k, w in enumerate(shown) if w != 0), key=lambda k: (-shown[k], k))
    named = set(ranked[:BLEND_NAMED_TOP]) | {i}
    return [str(label) if k in named else "" for k, label in enumerate(labels)]




def steps_html(trace: Trace) -> str:
    """The six steps as an HTML table; every label is escaped."""
    rows = []
    for step in trace.steps:
        lines = "<br>".join(step_line_html(line) for line in step.lines)
        rows.append(
            f'<tr><th scope="row">{step.number}</th><td class="step-name">{html.escape(step.name)}</td>'
            f'<td class="step-lines">{lines}</td></tr>'
        )
    return f'<table class="steps">{"".join(rows)}</table>'


@functools.cache
def preset_note(name: str) -> str:
    """A preset's note as HTML, with the numbers of the preset as loaded (core/notes.py).

    The page shows it only while the head on screen is that preset (any edit but the query or the
    plotted value coordinates makes the preset "custom"), so its numbers are the ones on screen.
    Worked out once per preset: the top-1 note alone tries ~500 slider positions.
    """
    preset = PRESETS.get(name)
    if preset is None:
        return "<p class='note'>Your own head.</p>"
    return "".join(
        f"<p class='note{' foot' if text.startswith('Footnote:') else ''}'>{html.escape(text)}</p>"
        for text in note(name, preset.head(), preset.tokens)
    )


def checks_html(trace: Trace, labels) -> str:
    """The row's sanity checks, each with a tick or a warning sign."""
    c = trace.checks
    sums_to_one = abs(c.row_sum - 1.0) < 1e-9
    total = f"row sums to {fmt(c.row_sum, 6)}"
    if sums_to_one and c.shown_hundredths != 100:  # the chapter's printed weights for 'it' add to 1.01
        h = c.shown_hundredths
        total += f" (the weights shown add to {h // 100}.{h % 100:02d}: each is rounded to two places)"
    items = [
        (sums_to_one, total),
        (
            c.masked_max == 0.0,
            f"largest weight on the {c.masked_keys} masked key{'s' if c.masked_keys != 1 else ''}: "
            f"{fmt(c.masked_max, 6)}"
            if c.masked_keys
            else "no key is masked for this query",
        ),
        (True, f"largest weight {fmt(c.max_weight)} on '{labels[c.max_key]}'"),
        (True, "entropy " + (f"{fmt(c.entropy, 3)} nats" if c.entropy is not None else "undefined here")),
    ]
    lis = "".join(
        f'<li class="{"ok" if ok else "warn"}">{"✓" if ok else "⚠"} {html.escape(text)}</li>'
        for ok, text in items
    )
    return f'<ul class="checks">{lis}</ul>'
