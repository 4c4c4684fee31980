"""The floor under the benchmarks' numbers: the least a slider → heatmap update can cost here.

One Bokeh slider and one 4 × 4 heatmap (coloured cells with their numbers, as
in the explorer); each move writes 16 new values into the heatmap's source.
No head, no view data, no other figure.  Served (`panel serve
bench/floor_app.py`, with the app's server tuning) it is bench/bench_latency.py's
floor; in a self-contained file with a CustomJS callback it is
bench/bench_export.py's.  What they measure for it is what Bokeh, Panel and the
browser cost on this machine before the explorer adds anything.  bench/floor5_app.py
serves the same page with five heatmaps, as many figures as a move of the explorer
repaints.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from bokeh.models import ColumnDataSource, LinearColorMapper, Rect, Slider, Text  # noqa: E402
from bokeh.plotting import figure  # noqa: E402

T = 4
START = "weights = [0.13, 0.56, 0.14, 0.18]"  # the line the benchmarks wait for, as in the explorer


def slider_and_heatmaps(figures: int = 1):
    """The slider x-3-0 and `figures` 4 × 4 heatmaps; the first one's source is named weights-cells, as in
    the explorer. Returns (slider, sources, figures)."""
    cells = np.arange(T * T)
    mapper = LinearColorMapper(palette="Blues256", low=1, high=0)
    span = (-0.5, T - 0.5)
    sources, figs = [], []
    for k in range(figures):
        source = ColumnDataSource(
            {
                "x": (cells % T).tolist(),
                "y": (cells // T).tolist(),
                "value": [0.25] * (T * T),
                "text": ["0.25"] * (T * T),
            },
            name="weights-cells" if k == 0 else f"cells-{k}",
        )
        fig = figure(width=300, height=300, x_range=span, y_range=span[::-1], tools="", toolbar_location=None)
        fig.add_glyph(
            source, Rect(x="x", y="y", width=1, height=1, fill_color={"field": "value", "transform": mapper})
        )
        fig.add_glyph(
            source, Text(x="x", y="y", text={"field": "text"}, text_align="center", text_baseline="middle")
        )
        sources.append(source)
        figs.append(fig)
    slider = Slider(start=-2, end=2, step=0.05, value=0.2, title="it[0]", name="x-3-0")
    return slider, sources, figs


def serve_floor(figures: int = 1) -> None:
    """This session's document: the slider and its heatmaps, all rewritten in one message per move."""
    import panel as pn
    from bokeh.layouts import column, row
    from bokeh.models import Div

    from app.serving import tune_server

    slider, sources, figs = slider_and_heatmaps(figures)

    def move(attr, old, new):
        values = 1 / (1 + np.exp(-(new + 0.1 * np.arange(T * T))))  # any 16 numbers that follow the slider
        with pn.io.hold():
            for source in sources:
                source.data.update(value=values.tolist(), text=[f"{v:.2f}" for v in values])

    slider.on_change("value", move)
    tune_server()  # the same server tuning as the app (TCP_NODELAY on every websocket): the best case
    pn.extension()
    pn.pane.Bokeh(column(slider, row(*figs), Div(text=START))).servable(title="floor")


if __name__.startswith("bokeh_app"):  # run by `panel serve`
    serve_floor()
