"""Oracle tests of where the figures put their text (issue 26): no two drawn texts overlap.

For every preset, grown or cut to 1, 4, 10, 16 and 64 tokens (and with long labels), and at the page
widths 390, 760 and 1400 px, the boxes of everything drawn as text are worked out here from the view data
alone, by plain geometry: each cell's number inside its cell and apart from its neighbours', each kept tick
label apart from the next (slanted ones as rotated rectangles), each name in the blend plot apart from the
other names, the other points and the output, inside the frame. Widths come from the font metrics the
pages draw with (widgets/figure_text.py CHAR_WIDTHS, which tests/test_book_column.py checks against the
browser's own measure). The same cases then go through static/attention.js, which must agree.
"""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest

from core.attention import attend
from core.presets import PRESETS
from tests.conftest import ROOT
from tests.node_batch import NODE
from tests.test_parity import mismatches, run_js
from widgets.figure_text import (
    AXIS_FONT,
    BLEND_FONT,
    BLEND_FRAME,
    HEATMAPS,
    LINE,
    POINT_PX,
    STAR_PX,
    short_label,
    text_px,
)
from widgets.viewdata import view_data

TOKEN_COUNTS = (1, 4, 10, 16, 64)
# The room the page gives the weights' row at each width (static/page.css: the page's padding, and from
# 1060 px the controls' column beside it); a figure never narrower than its min_frame_width.
CONTAINER = {390: 374, 760: 740, 1400: 1054}
LONG = ("because", "extraordinarily", "Übermensch", "tired", "it's", "日本語のラベル", "a & b")


def grown(preset, T: int):
    """The preset's head with T tokens: its rows cycled, each repeat nudged so the points do not coincide,
    labels its own and then longer ones, each its own."""
    p = PRESETS[preset]
    X = np.array(p.X, dtype=float)
    rows = [X[k % len(X)] + 0.07 * (k // len(X)) * np.cos(np.arange(X.shape[1]) + k) for k in range(T)]
    words = list(p.tokens) + [f"{LONG[k % len(LONG)]}{k}" for k in range(T)]
    labels = words[:T]
    query = min(list(p.tokens).index(p.query), T - 1)
    return np.array(rows), p, labels, query


def cases():
    for preset in PRESETS:
        for T in TOKEN_COUNTS:
            X, p, labels, query = grown(preset, T)
            yield preset, T, X, p, labels, query


def intersect(a, b) -> bool:
    """Axis-aligned boxes (x0, y0, x1, y1) that share more than an edge."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def rotated(cx: float, width: float, height: float, angle: float) -> list[tuple[float, float]]:
    """The corners of a label `width` long and `height` thick, starting at (cx, 0) and rising at `angle`."""
    ux, uy = math.cos(angle), -math.sin(angle)  # along the text (screen y grows downward)
    nx, ny = -uy, ux  # across it
    half = height / 2
    return [(cx + nx * s * half + ux * t, ny * s * half + uy * t) for s in (-1, 1) for t in (0, width)]


def polygons_meet(p, q) -> bool:
    """Separating axis test for two convex polygons (corner lists in any order of a rectangle)."""
    def axes(poly):
        a, b, c = poly[0], poly[1], poly[2]
        return [(b[0] - a[0], b[1] - a[1]), (c[0] - a[0], c[1] - a[1])]

    for ax, ay in axes(p) + axes(q):
        if ax == 0 and ay == 0:
            continue
        pa = [x * ax + y * ay for x, y in p]
        qa = [x * ax + y * ay for x, y in q]
        if max(pa) <= min(qa) + 1e-9 or max(qa) <= min(pa) + 1e-9:
            return False
    return True


def frame_width(layout: dict, width: int) -> float:
    """The frame a figure gets at a page width: as wide as it asks where there is room, never narrower than
    its min_frame_width (then its area scrolls)."""
    beside = layout["min_width"] - layout["min_frame_width"]
    return max(layout["min_frame_width"], min(layout["frame_width"], CONTAINER[width] - beside))


def heatmap_overlaps(view: dict, width: int) -> list[str]:
    found = []
    for name, spec in HEATMAPS.items():
        layout = view["layout"][name]
        n_rows = int(max(view["cells"][spec.blocks[0]]["y"])) + 1
        n_cols = int(max(view["cells"][spec.blocks[0]]["x"])) + 1
        span = len(spec.blocks) * (n_cols + 1) - 1
        cell_w, cell_h = frame_width(layout, width) / span, layout["frame_height"] / n_rows
        assert cell_w >= layout["min_frame_width"] / span - 1e-9
        # numbers: each inside its cell (so apart from every other), checked against its right neighbour too
        font = layout["font"]
        for k, block in enumerate(spec.blocks):
            cells = view["cells"][block]
            if not font:
                assert all(t == "" for t in cells["text"]), (name, block)
                continue
            boxes = {}
            for x, y, t in zip(cells["x"], cells["y"], cells["text"]):
                if not t:
                    continue
                cx, cy = (x + k * (n_cols + 1) + 0.5) * cell_w, (y + 0.5) * cell_h
                w, h = text_px(t, font), LINE * font
                box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
                left, right, top = cx - cell_w / 2, cx + cell_w / 2, cy - cell_h / 2 - 1e-9
                if not (box[0] > left and box[2] < right and box[1] >= top):
                    found.append(f"{name} at {width}px: {t!r} overflows its {cell_w:.1f}px cell")
                boxes[(x, y)] = box
            for (x, y), box in boxes.items():
                for other in ((x + 1, y), (x, y + 1)):
                    if other in boxes and intersect(box, boxes[other]):
                        found.append(f"{name} at {width}px: numbers at {(x, y)} and {other} meet")
        # tick labels along x (flat or slanted) and along y
        h = LINE * AXIS_FONT
        xs = [(t + 0.5) * cell_w for t in layout["x_ticks"]]
        angle = layout["x_angle"]
        shapes = []
        for cx, label in zip(xs, layout["x_labels"]):
            w = text_px(label, AXIS_FONT)
            if angle == 0:
                shapes.append([(cx - w / 2, -h), (cx + w / 2, -h), (cx - w / 2, 0.0), (cx + w / 2, 0.0)])
            else:
                shapes.append(rotated(cx, w, h, angle))
        for a, b, la, lb in zip(shapes, shapes[1:], layout["x_labels"], layout["x_labels"][1:]):
            if polygons_meet(a, b):
                found.append(f"{name} at {width}px: column labels {la!r} and {lb!r} meet")
        ys = [(t + 0.5) * cell_h for t in layout["y_ticks"]]
        for (ya, la), (yb, lb) in zip(zip(ys, layout["y_labels"]), zip(ys[1:], layout["y_labels"][1:])):
            if yb - ya < h:
                found.append(f"{name} at {width}px: row labels {la!r} and {lb!r} meet")
    return found


def blend_overlaps(view: dict) -> list[str]:
    b = view["blend"]
    x0, x1, y0, y1 = view["bounds"]
    sx, sy = BLEND_FRAME / (x1 - x0), BLEND_FRAME / (y1 - y0)
    values = b["values"]
    points = [((x - x0) * sx, (y1 - y) * sy) for x, y in zip(values["x"], values["y"])]
    out = ((b["output"]["x"][0] - x0) * sx, (y1 - b["output"]["y"][0]) * sy)
    h = LINE * BLEND_FONT
    labels = []
    for k, (name, dx, dy) in enumerate(zip(values["named"], values["dx"], values["dy"])):
        if name:
            cx, cy = points[k][0] + dx, points[k][1] + dy
            w = text_px(name, BLEND_FONT)
            labels.append((k, name, (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)))
    found = []
    def mark(p, size):
        return (p[0] - size / 2, p[1] - size / 2, p[0] + size / 2, p[1] + size / 2)

    marks, star = [mark(p, POINT_PX) for p in points], mark(out, STAR_PX)
    for n, (k, name, box) in enumerate(labels):
        if not (box[0] >= 0 and box[1] >= 0 and box[2] <= BLEND_FRAME and box[3] <= BLEND_FRAME):
            found.append(f"blend: {name!r} leaves the frame")
        if intersect(box, star):
            found.append(f"blend: {name!r} covers the output")
        for j, mark in enumerate(marks):
            if j != k and intersect(box, mark):
                found.append(f"blend: {name!r} covers the point of {values['label'][j]!r}")
        for _, other, obox in labels[n + 1 :]:
            if intersect(box, obox):
                found.append(f"blend: {name!r} and {other!r} meet")
    return found


@pytest.mark.parametrize("T", TOKEN_COUNTS)
def test_no_two_drawn_texts_meet_at_any_width(T):
    found, named = [], 0
    for preset, n, X, p, labels, query in cases():
        if n != T:
            continue
        head = attend(X, p.W_Q, p.W_K, p.W_V, **p.options.as_dict())
        view = view_data(head, query, labels)
        for width in CONTAINER:
            found += [f"{preset}, {T} tokens: {m}" for m in heatmap_overlaps(view, width)]
        found += [f"{preset}, {T} tokens: {m}" for m in blend_overlaps(view)]
        named += bool(view["blend"]["values"]["named"][query])
        # what is not drawn is said: a heatmap with no numbers, names left to the hover
        for name, spec in HEATMAPS.items():
            layout = view["layout"][name]
            blank = any(not t for b in spec.blocks for t in view["cells"][b]["text"])
            assert bool(layout["note"]) == blank, (preset, T, name)
            assert ("Colours only" in layout["note"]) == (not layout["font"]), (preset, T, name)
    assert not found, "\n".join(found[:20])
    assert named == len(PRESETS)  # the query's name is placed first: it always finds room


def test_the_chapter_shows_every_number_and_name_and_tired_on_a_phone_too():
    """The worked example keeps every number whole and every name; "tired" (ten tokens) keeps every weight,
    without its leading zero (1.00 as 1), at the width a phone gives it."""
    for preset, whole in (("chapter", True), ("tired", False)):
        p = PRESETS[preset]
        head = p.head()
        view = view_data(head, list(p.tokens).index(p.query), list(p.tokens))
        assert view["layout"]["weights"]["font"] >= 10
        texts = view["cells"]["weights"]["text"]
        fractions = [t for t in texts if t not in ("0", "1", "1.00")]
        assert all(texts) and fractions and all(t.startswith("0.") == whole for t in fractions)
        assert all(view["blend"]["values"]["named"]) and view["layout"]["blend"]["note"] == ""


@pytest.mark.skipif(NODE is None, reason="node is not installed, so the JS port cannot be run")
def test_the_page_decides_the_same_layout():
    """The same cases (64 tokens and long labels among them) through static/attention.js."""
    batch = []
    for _, T, X, p, labels, query in cases():
        if T in (16, 64):
            batch.append({"X": X.tolist(), "W_Q": p.W_Q, "W_K": p.W_K, "W_V": p.W_V,
                          "options": p.options.as_dict(), "i": query, "labels": labels})
    results = run_js(batch)["cases"]
    found = []
    for k, (case, js) in enumerate(zip(batch, results)):
        head = attend(case["X"], case["W_Q"], case["W_K"], case["W_V"], **case["options"])
        py = view_data(head, case["i"], case["labels"])
        for key in ("layout", "cells", "blend", "bounds"):
            found += mismatches(py[key], js["view"][key], f"case {k}.{key}")
    assert not found, "\n".join(found[:10])


@pytest.mark.skipif(NODE is None, reason="node is not installed, so the JS port cannot be run")
def test_the_page_measures_and_sizes_alike():
    """static/attention.js holds the same metrics and the same figures' sizes as widgets/figure_text.py."""
    texts = ["".join(chr(k) for k in range(32, 127)), "−∞ é … 日本 😀", "because it was tired", ""]
    code = (
        "const A = require('./static/attention.js');"
        "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify({px: texts.map((t) => [A.textPx(t, 11), A.shortLabel(t)]),"
        " heatmaps: A.HEATMAPS, frame: A.BLEND_FRAME, font: A.BLEND_FONT}));"
    )
    out = subprocess.run([NODE, "-e", code], input=json.dumps(texts), capture_output=True, text=True,
                         check=True, cwd=ROOT)
    js = json.loads(out.stdout)
    assert js["px"] == [[text_px(t, 11), short_label(t)] for t in texts]
    sizes = {name: {**spec._asdict(), "blocks": list(spec.blocks)} for name, spec in HEATMAPS.items()}
    assert js["heatmaps"] == sizes
    assert (js["frame"], js["font"]) == (BLEND_FRAME, BLEND_FONT)


def test_no_label_is_wider_than_the_room_kept_for_labels():
    """Q, K and V's figure keeps room for the widest label there can be, so that new labels do not make
    BokehJS lay its row out again (widgets/figure_text.py WIDEST_LABEL_PX)."""
    from widgets.figure_text import AXIS_LABEL_CHARS, WIDEST_LABEL_PX

    for ch in ("W", "M", "日", "😀", "…"):
        assert text_px(short_label(ch * (AXIS_LABEL_CHARS + 3)), AXIS_FONT) <= WIDEST_LABEL_PX
