"""The same-shape floor: a bare Bokeh page that changes, on every slider move, as much as a move of the
explorer changes, written the simplest way Bokeh allows.

A move of the explorer (T = 4, C = 3, d = 2) rewrites the numbers and colours of four heatmaps (weights,
scores, scaled scores: 4 × 4 cells each; Q, K and V side by side: 3 × 4 × 2 cells), replaces the four
sources of the blend scatter (values, hull, output, links: scatter, patch, star, segments, labels) and the
text of the steps panel (~1,750 characters of HTML). This page has the same figures, glyph kinds, source
sizes and text length, filled with numbers that merely follow the slider: no head, no view data, no Panel
pane, no template, no controls beyond the slider. Like the explorer it sends one message per move
(`pn.io.hold()`; Bokeh's own `doc.hold("combine")` still sends one per changed model, 9 here).
bench/bench_latency.py serves it (`panel serve`, with the app's server tuning) as the floor a target is
judged against.

The text sits in a document root of its own, as the explorer's does: in one root with the figures,
BokehJS would lay the figures out again on every text change, a cost the explorer does not pay. And the
page loads static/bokeh_seam.js, the project's fixes to BokehJS, as the explorer does: without it every
repaint rewrites each renderer's style sheet (README, "How it is built"), and the floor would measure that
bug rather than what the figures need.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import panel as pn  # noqa: E402
from bokeh.io import curdoc  # noqa: E402
from bokeh.layouts import column, row  # noqa: E402
from bokeh.models import ColumnDataSource, Div, LinearColorMapper, Slider  # noqa: E402
from bokeh.plotting import figure  # noqa: E402

from app.serving import tune_server  # noqa: E402

START = "weights = [0.13, 0.56, 0.14, 0.18]"  # the line the benchmarks wait for, as in the explorer
HEATMAPS = (("weights-cells", 4, 4), ("scores-cells", 4, 4), ("scaled-cells", 4, 4), ("qkv-cells", 4, 8))
STEPS_CHARS = 1750  # the explorer's steps panel for the chapter's example


def cells(rows: int, cols: int, values) -> dict:
    k = np.arange(rows * cols)
    return {
        "x": (k % cols).tolist(),
        "y": (k // cols).tolist(),
        "value": list(values),
        "text": [f"{v:.2f}" for v in values],
    }


def numbers(x: float, n: int) -> np.ndarray:
    return 1 / (1 + np.exp(-(x + 0.1 * np.arange(n))))  # any n numbers that follow the slider


def blend(x: float) -> dict:
    px, py = np.cos(np.arange(4) + x), np.sin(np.arange(4) + x)
    w = numbers(x, 4) / numbers(x, 4).sum()
    return {
        "values": {"x": px, "y": py, "text": [f"{v:.2f}" for v in w]},
        "hull": {"x": px[:3], "y": py[:3]},
        "output": {"x": [w @ px], "y": [w @ py]},
        "links": {"x0": [w @ px] * 4, "y0": [w @ py] * 4, "x1": px, "y1": py, "alpha": w, "width": 1 + 6 * w},
    }


def steps(x: float) -> str:
    """~STEPS_CHARS of HTML: the line the benchmarks wait for, then numbers that follow the slider."""
    shown = ", ".join(f"{v:.2f}" for v in numbers(x, 4))
    line = START if abs(x - 0.2) < 1e-9 else f"weights = [{shown}]"
    head = f"<div class='steps'><p>{line}</p><p>"
    body = " ".join(f"{v:.3f}" for v in numbers(x, 400))[: STEPS_CHARS - len(head) - 10]
    return f"{head}{body}</p></div>"


def page(doc) -> None:
    mapper = LinearColorMapper(palette="Blues256", low=1, high=0)
    sources, figs = [], []
    for name, rows, cols in HEATMAPS:
        source = ColumnDataSource(cells(rows, cols, numbers(0.2, rows * cols)), name=name)
        fig = figure(
            width=60 * cols + 80,
            height=60 * rows + 80,
            x_range=(-0.5, cols - 0.5),
            y_range=(rows - 0.5, -0.5),
            tools="save",
            title=name,
        )
        fig.rect("x", "y", 1, 1, source=source, fill_color={"field": "value", "transform": mapper})
        fig.text("x", "y", text="text", source=source, text_align="center", text_baseline="middle")
        sources.append((source, rows, cols))
        figs.append(fig)
    b = blend(0.2)
    bsrc = {k: ColumnDataSource(v) for k, v in b.items()}
    scatter = figure(width=400, height=400, x_range=(-1.5, 1.5), y_range=(-1.5, 1.5), tools="save")
    scatter.patch("x", "y", source=bsrc["hull"], fill_alpha=0.1)
    scatter.segment("x0", "y0", "x1", "y1", source=bsrc["links"], line_alpha="alpha", line_width="width")
    scatter.scatter("x", "y", source=bsrc["values"], size=11)
    scatter.text("x", "y", text="text", source=bsrc["values"], x_offset=8)
    scatter.scatter("x", "y", source=bsrc["output"], size=16, marker="star", color="red")
    text = Div(text=steps(0.2), width=600)
    slider = Slider(start=-2, end=2, step=0.05, value=0.2, title="it[0]", name="x-3-0")

    def move(attr, old, new):
        with pn.io.hold():  # one message for the whole move, as the explorer sends (Bokeh's doc.hold sends 9)
            for source, rows, cols in sources:
                values = numbers(new, rows * cols)
                source.data.update(value=values.tolist(), text=[f"{v:.2f}" for v in values])
            for k, data in blend(new).items():
                bsrc[k].data = data
            text.text = steps(new)

    slider.on_change("value", move)
    doc.add_root(column(slider, row(*figs[:2], scatter), row(*figs[2:])))
    doc.add_root(text)
    doc.title = "same-shape floor"
    seam = (ROOT / "static" / "bokeh_seam.js").read_text()
    doc.template = "{% block postamble %}<script>" + seam + "</script>{% endblock %}"


tune_server()  # the same server tuning as the app (TCP_NODELAY on every websocket): the best case
page(curdoc())
