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
    head, i, labels = case
    data = view_data(head, i, labels)
    W = head.weights
    assert data["limits"]["weights"] == (min(0.0, W.min()), max(1.0, W.max()))
    finite = np.abs(head.scores[np.isfinite(head.scores)])
    assert data["limits"]["scores"] == (-max(1.0, finite.max()), max(1.0, finite.max()))
    lo, hi = data["limits"]["Q"]
    assert lo == -hi and hi >= np.abs(np.concatenate([head.Q, head.K, head.V])).max()
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
