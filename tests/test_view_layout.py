"""Oracle tests for the view data's layout, independent of how viewdata.py computes it.

Parity (tests/test_actions.py, tests/test_parity.py) holds Python and JavaScript to each other, so it
cannot see a mistake both make alike.  These check the view data against the head's matrices and plain
geometry: which cell shows which entry, which points the hull keeps, that the blend plot's frame holds
everything it draws, the colour limits, and the outline of the query's row.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.attention import attend
from widgets.figure_text import BLEND_FONT, BLEND_FRAME, LINE, text_px
from widgets.viewdata import convex_hull, view_data

small = st.integers(-8, 8).map(lambda k: k / 4)


@st.composite
def heads(draw):
    T, C, d = draw(st.integers(1, 7)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    mat = lambda r, c: draw(st.lists(st.lists(small, min_size=c, max_size=c), min_size=r, max_size=r))  # noqa: E731
    options = dict(
        causal=draw(st.booleans()),
        normaliser=draw(st.sampled_from(("softmax", "raw", "top1"))),
        temperature=draw(st.sampled_from((1.0, 0.5, 2.0))),
    )
    head = attend(mat(T, C), mat(C, d), mat(C, d), mat(C, d), **options)
    return head, draw(st.integers(0, T - 1)), [f"t{k}" for k in range(T)]


@st.composite
def heads_and_dims(draw):
    """A head, a query, labels, and the two value coordinates the blend plot is asked for (any whole
    numbers: too large, negative or equal ones are taken back into range)."""
    head, i, labels = draw(heads())
    return head, i, labels, [draw(st.integers(-1, 5)), draw(st.integers(-1, 5))]


def plotted_dims(d: int, dims) -> tuple[int, int | None]:
    """The coordinates the plot shows, by the editor's rule: each clamped to 0..d-1; the second, if it is the
    first, moved to the next coordinate round; with d = 1 there is no second."""
    a = min(max(dims[0], 0), d - 1)
    if d == 1:
        return a, None
    b = min(max(dims[1], 0), d - 1)
    return a, b if b != a else (a + 1) % d


def half_width(*matrices) -> float:
    """A symmetric colour range's half-width: the largest |entry| that is a number, at least 1."""
    entries = [abs(float(v)) for M in matrices for v in np.ravel(M) if math.isfinite(v)]
    return max([1.0, *entries])


@settings(max_examples=60, deadline=None)
@given(heads())
def test_each_cell_shows_its_own_entry_and_labels(case):
    head, i, labels = case
    data = view_data(head, i, labels)
    for name, M in (("scores", head.scores), ("weights", head.weights), ("Q", head.Q), ("V", head.V)):
        cells = data["cells"][name]
        for x, y, v, row, col in zip(cells["x"], cells["y"], cells["value"], cells["row"], cells["col"]):
            r, c = int(y), int(x)  # y is the row (query / token), x the column (key / dimension)
            assert row == labels[r]
            assert col == (labels[c] if name in ("scores", "weights") else str(c))
            if name == "weights" and head.causal and c > r:
                assert math.isnan(v)  # masked: grey, above the diagonal only
            else:
                assert v == M[r, c]
        assert len(cells["x"]) == M.size


@settings(max_examples=60, deadline=None)
@given(heads())
def test_colour_limits_and_the_query_outline(case):
    """Every heatmap's colour range, exactly: scores and the scaled, masked scores symmetric about 0 out to
    their largest |number| (a masked cell is no number), the weights 0..1 widened to hold raw ones, and
    Q, K, V on one shared symmetric range, so their colours compare."""
    head, i, labels = case
    data = view_data(head, i, labels)
    W = head.weights.tolist()
    shown_scaled = np.where(head.future, np.nan, head.scaled)  # what the scaled-scores heatmap holds
    expected = {
        "scores": (-half_width(head.scores), half_width(head.scores)),
        "scaled": (-half_width(shown_scaled), half_width(shown_scaled)),
        "weights": (min([0.0, *np.ravel(W)]), max([1.0, *np.ravel(W)])),
        **{name: (-half_width(head.Q, head.K, head.V), half_width(head.Q, head.K, head.V)) for name in "QKV"},
    }
    assert {name: tuple(v) for name, v in data["limits"].items()} == expected
    o = data["outline"]
    # The frame spans exactly row i: centred on the middle column, one row high, all T columns wide.
    assert o == {"x": [(head.T - 1) / 2], "y": [float(i)], "width": [float(head.T)], "height": [1.0]}


@settings(max_examples=60, deadline=None)
@given(heads())
def test_blend_plot_frames_everything_it_draws(case):
    head, i, labels = case
    data = view_data(head, i, labels)
    x0, x1, y0, y1 = data["bounds"]
    b = data["blend"]
    xs, ys = b["values"]["x"] + b["output"]["x"], b["values"]["y"] + b["output"]["y"]
    span = max(max(xs) - min(xs), max(ys) - min(ys), 1.0)
    assert x1 - x0 >= 0.3 - 1e-12 and y1 - y0 >= 0.3 - 1e-12  # never degenerate, even for one point
    margin = 0.15 * span - 1e-12  # every point, the output too, stays clear of the frame's edges
    assert all(x0 + margin <= x <= x1 - margin for x in xs)
    assert all(y0 + margin <= y <= y1 - margin for y in ys)
    assert b["output"]["x"][0] == head.output[i][0]
    assert b["values"]["weight"] == head.weights[i].tolist()


@settings(max_examples=80, deadline=None)
@given(heads_and_dims())
def test_blend_plot_draws_the_values_the_output_and_the_lines_between_them(case):
    """The blend plot, from the head alone: value points at (V[:, a], V[:, b]) for the coordinates asked
    for, the output of the query at (out[a], out[b]), a line from the output to each value, thicker and
    darker as its weight is larger, the hull's corners among the values, and axes named after a and b."""
    head, i, labels, dims = case
    a, b = plotted_dims(head.d, dims)
    data = view_data(head, i, labels, dims)
    b_data = data["blend"]
    vx = head.V[:, a].tolist()
    vy = head.V[:, b].tolist() if b is not None else [0.0] * head.T
    out = head.output[i]
    assert (b_data["values"]["x"], b_data["values"]["y"]) == (vx, vy)
    assert b_data["values"]["label"] == labels
    assert b_data["output"]["x"] == [out[a]] and b_data["output"]["y"] == [out[b] if b is not None else 0.0]
    links = b_data["links"]
    assert links["x1"] == vx and links["y1"] == vy  # each line ends on its value
    assert links["x0"] == [out[a]] * head.T and links["y0"] == b_data["output"]["y"] * head.T
    strength = np.minimum(np.abs(head.weights[i]), 1.0)
    for j in range(head.T):
        for k in range(head.T):
            if strength[j] < strength[k] - 1e-9:  # a larger weight, a bolder line
                assert links["width"][j] < links["width"][k] and links["alpha"][j] < links["alpha"][k]
            elif strength[j] <= strength[k]:
                assert links["width"][j] <= links["width"][k] and links["alpha"][j] <= links["alpha"][k]
    points = set(zip(vx, vy))
    corners = set(zip(b_data["hull"]["x"], b_data["hull"]["y"]))
    assert corners <= points and len(corners) == len(b_data["hull"]["x"])
    distinct = sorted(points)
    if len(distinct) > 2 and not all(cross(distinct[0], distinct[1], p) == 0 for p in distinct):
        assert corners == {p for p in distinct if is_vertex(p, distinct)}
    names = {"x": f"value[{a}]", "y": f"value[{b}]" if b is not None else "(d = 1)"}
    assert b_data["axes"] == names
    # each name shown lies wholly inside the plot's frame, whatever side of its point it was put on
    x0, x1, y0, y1 = data["bounds"]
    v = b_data["values"]
    for x, y, text, dx, dy in zip(vx, vy, v["named"], v["dx"], v["dy"]):
        if not text:
            continue
        cx = (x - x0) * BLEND_FRAME / (x1 - x0) + dx
        cy = (y1 - y) * BLEND_FRAME / (y1 - y0) + dy
        half_w, half_h = text_px(text, BLEND_FONT) / 2, LINE * BLEND_FONT / 2
        assert 0 <= cx - half_w and cx + half_w <= BLEND_FRAME
        assert 0 <= cy - half_h and cy + half_h <= BLEND_FRAME


def cross(o, p, q) -> float:
    return (p[0] - o[0]) * (q[1] - o[1]) - (p[1] - o[1]) * (q[0] - o[0])


@settings(max_examples=60, deadline=None)
@given(heads())
def test_the_row_check_says_when_the_shown_weights_do_not_add_to_one(case):
    """Beside "row sums to 1.000000", the weights as the steps panel prints them (two places, Python's
    rounding) added up, when that is not 1.00."""
    from decimal import ROUND_HALF_EVEN, Decimal

    head, i, labels = case
    checks = view_data(head, i, labels)["checks"]
    w = head.weights[i]
    shown = sum(Decimal(float(v)).quantize(Decimal("0.01"), ROUND_HALF_EVEN) for v in w) + 0
    is_one = abs(float(w.sum()) - 1) < 1e-9
    note = f"(the weights shown add to {shown:.2f}: each is rounded to two places)"
    assert (note in checks) == (is_one and shown != 1), (checks, shown)
    assert ("weights shown add to" in checks) == (is_one and shown != 1)


def is_vertex(p, others) -> bool:
    """p is a corner of the hull iff the other points all lie within an angle smaller than π seen from p."""
    angles = sorted(math.atan2(q[1] - p[1], q[0] - p[0]) for q in others if q != p)
    if len(angles) < 2:
        return True
    gaps = [b - a for a, b in zip(angles, angles[1:])] + [angles[0] + 2 * math.pi - angles[-1]]
    return max(gaps) > math.pi + 1e-12


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-4, 4), st.integers(-4, 4)), min_size=1, max_size=12))
def test_the_hull_keeps_exactly_the_corners(points):
    pts = [(float(x), float(y)) for x, y in points]
    hx, hy = convex_hull([p[0] for p in pts], [p[1] for p in pts])
    hull = list(zip(hx, hy))
    distinct = sorted(set(pts))
    if len(distinct) <= 2:
        assert sorted(hull) == distinct
        return
    collinear = all(
        (b[0] - distinct[0][0]) * (distinct[1][1] - distinct[0][1])
        == (b[1] - distinct[0][1]) * (distinct[1][0] - distinct[0][0])
        for b in distinct
    )
    expected = {p for p in distinct if is_vertex(p, distinct)}
    if collinear:
        expected = {distinct[0], distinct[-1]}  # a segment: its two ends
    assert set(hull) == expected and len(hull) == len(expected)  # no collinear middle points, no repeats
    # Counter-clockwise, so the patch is drawn as a simple polygon.
    if len(hull) >= 3:
        area = sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(hull, hull[1:] + hull[:1]))
        assert area > 0
