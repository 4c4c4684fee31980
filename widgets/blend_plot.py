"""The blend: value vectors as points, their hull, and the query's output.

Each line from the output to a value is drawn as wide and as opaque as the
weight on it, so a slider drag shows the output being pulled around inside
the hull.  Built once; `update` writes new data and the view data's ranges.
"""

from __future__ import annotations

from bokeh.models import (
    ColumnDataSource,
    HoverTool,
    Patch,
    Range1d,
    SaveTool,
    Scatter,
    Segment,
    Text,
    Title,
)
from bokeh.plotting import figure

from widgets.figure_text import BLEND_FONT, BLEND_FRAME
from widgets.matrix_plot import NOTE_FONT, titled
from widgets.sources import write_changed
from widgets.style import draw

VALUE_COLOUR = "#4e79a7"
OUTPUT_COLOUR = "#e15759"
# The walk's last step: a glow under each weighted line to the output, and a ring round the output.
GLOW_COLOUR, RING_COLOUR = "#f6c343", "#1a1a1a"


SOURCES = ("values", "hull", "output", "links", "leaders")


class BlendPlot:
    """The frame is BLEND_FRAME px square and its ranges are the view data's bounds, always: the view data
    places each name (widgets/figure_text.py place_blend_labels) for exactly that frame."""

    def __init__(self, data: dict, bounds, layout: dict, *, name: str = "blend"):
        self.values = ColumnDataSource(data["values"], name=f"{name}-values")
        self.hull = ColumnDataSource(data["hull"], name=f"{name}-hull")
        self.output = ColumnDataSource(data["output"], name=f"{name}-output")
        self.links = ColumnDataSource(data["links"], name=f"{name}-links")
        self.leaders = ColumnDataSource(data["leaders"], name=f"{name}-leaders")
        self.glow = ColumnDataSource({k: [] for k in ("x0", "y0", "x1", "y1", "width")}, name=f"{name}-glow")
        self.ring = ColumnDataSource({"x": [], "y": []}, name=f"{name}-ring")
        x0, x1, y0, y1 = bounds
        self.figure = fig = figure(
            name=name,
            frame_width=BLEND_FRAME,
            frame_height=BLEND_FRAME,
            x_range=Range1d(x0, x1),
            y_range=Range1d(y0, y1),
            tools="save",
            toolbar_location="right",
        )
        fig.toolbar.logo = None
        fig.select_one(SaveTool).filename = f"attention-{name}"  # saved at once, no name prompt
        titled(fig, "The blend", "the output (star) among the values")
        fig.xaxis.axis_label = data["axes"]["x"]
        fig.yaxis.axis_label = data["axes"]["y"]
        draw(
            fig,
            self.hull,
            Patch(
                x="x",
                y="y",
                fill_color=VALUE_COLOUR,
                fill_alpha=0.10,
                line_color=VALUE_COLOUR,
                line_alpha=0.5,
                line_dash="dashed",
            ),
        )
        draw(
            fig,
            self.glow,
            Segment(
                x0="x0", y0="y0", x1="x1", y1="y1", line_color=GLOW_COLOUR, line_alpha=0.9, line_width="width"
            ),
        )
        draw(
            fig,
            self.links,
            Segment(
                x0="x0",
                y0="y0",
                x1="x1",
                y1="y1",
                line_color=OUTPUT_COLOUR,
                line_alpha="alpha",
                line_width="width",
            ),
        )
        points = draw(
            fig, self.values, Scatter(x="x", y="y", size=11, fill_color=VALUE_COLOUR, line_color=VALUE_COLOUR)
        )
        leader = Segment(x0="x0", y0="y0", x1="x1", y1="y1", line_color="#666666", line_width=1)
        draw(fig, self.leaders, leader)  # from a point to its name set apart
        draw(
            fig,
            self.values,
            Text(
                x="x",
                y="y",
                # the names the view data placed (widgets/figure_text.py place_blend_labels; '' for none),
                # each centred dx, dy px from its point: computed with the data, as a transform here ran
                # (and compiled) JavaScript on every move
                text={"field": "named"},
                text_align="center",
                text_baseline="middle",
                x_offset={"field": "dx"},
                y_offset={"field": "dy"},
                text_font_size=f"{BLEND_FONT:g}px",
                text_color="#222222",
            ),
        )
        out = draw(
            fig,
            self.output,
            Scatter(x="x", y="y", size=16, marker="star", fill_color=OUTPUT_COLOUR, line_color="#7a0f12"),
        )
        ring = Scatter(x="x", y="y", size=30, fill_alpha=0, line_color=RING_COLOUR, line_width=2.5)
        draw(fig, self.ring, ring)
        fig.add_tools(
            HoverTool(
                renderers=[points],
                tooltips=[("value of", "@label"), ("weight", "@text"), ("v", "(@x{0.000}, @y{0.000})")],
            )
        )
        fig.add_tools(HoverTool(renderers=[out], tooltips=[("", "@label"), ("output", "@text")]))
        # what the plot says under it when names are left to the hover
        self.note = Title(text=layout["note"], text_font_size=NOTE_FONT, text_font_style="normal",
                          text_color="#444444", standoff=2)
        fig.add_layout(self.note, "below")

    def update(self, data: dict, bounds, layout: dict, *, lesson: dict | None = None) -> None:
        """New points in place; the ranges follow the bounds (on a grid: a small move keeps them);
        `lesson`: the lesson's view data (the glow and the ring of the walk's last step)."""
        for name in SOURCES:
            write_changed(getattr(self, name), data[name])
        if lesson is not None:
            write_changed(self.glow, lesson["glow"])
            write_changed(self.ring, lesson["ring"])
        xr, yr = self.figure.x_range, self.figure.y_range
        x0, x1, y0, y1 = bounds
        if (xr.start, xr.end) != (x0, x1):
            xr.update(start=x0, end=x1)
        if (yr.start, yr.end) != (y0, y1):
            yr.update(start=y0, end=y1)
        self.figure.xaxis.axis_label = data["axes"]["x"]
        self.figure.yaxis.axis_label = data["axes"]["y"]
        if self.note.text != layout["note"]:
            self.note.text = layout["note"]
