"""The floor under bench_latency's numbers: the least a served slider → heatmap round trip can cost.

One Bokeh slider and one 4 × 4 heatmap (coloured cells with their numbers, as
in the explorer), served by `panel serve` like the app; each move writes 16 new
values into the heatmap's source.  No head, no view data, no other figure, no
text panel but one line.  What bench/bench_latency.py measures for this app is
what Bokeh, Panel and the browser cost on this machine before the explorer
adds anything.
"""

import numpy as np
import panel as pn
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, Div, LinearColorMapper, Rect, Slider, Text
from bokeh.plotting import figure

T = 4
START = "weights = [0.13, 0.56, 0.14, 0.18]"  # the line the benchmark waits for, as in the explorer

cells = np.arange(T * T)
source = ColumnDataSource(
    {
        "x": (cells % T).tolist(),
        "y": (cells // T).tolist(),
        "value": [0.25] * (T * T),
        "text": ["0.25"] * (T * T),
    },
    name="weights-cells",
)
mapper = LinearColorMapper(palette="Blues256", low=1, high=0)
fig = figure(
    width=300, height=300, x_range=(-0.5, T - 0.5), y_range=(T - 0.5, -0.5), tools="", toolbar_location=None
)
fig.add_glyph(
    source, Rect(x="x", y="y", width=1, height=1, fill_color={"field": "value", "transform": mapper})
)
fig.add_glyph(source, Text(x="x", y="y", text={"field": "text"}, text_align="center", text_baseline="middle"))
slider = Slider(start=-2, end=2, step=0.05, value=0.2, title="it[0]", name="x-3-0")
line = Div(text=START)


def move(attr, old, new):
    values = 1 / (1 + np.exp(-(new + 0.1 * cells)))  # any 16 numbers that follow the slider
    source.data.update(value=values.tolist(), text=[f"{v:.2f}" for v in values])


slider.on_change("value", move)
pn.extension()
pn.pane.Bokeh(column(slider, fig, line)).servable(title="floor")
