"""Every Bokeh model of the "Attention in tiles" view, made once.

The served view (widgets/tiles_view.py) and the static export (app/export_explorers.py) build this same
page; they differ only in who computes the next view data: Python on the server, or static/tiles.js in
the browser.  `update` writes one state's view data (widgets/tiles_viewdata.py) into the existing
models: the cells' sources, the frames, the colour ranges, the key axis, the slider's range, the table
and the readout.
"""

from __future__ import annotations

from bokeh.layouts import column, row
from bokeh.models import (
    Button,
    ColumnDataSource,
    FixedTicker,
    InlineStyleSheet,
    LinearColorMapper,
    Range1d,
    Rect,
    Slider,
    Text,
)
from bokeh.plotting import figure

from widgets.matrix_plot import (
    _INK_SCORE,
    _INK_WEIGHT,
    MASKED_GREY,
    MASKED_INK,
    OUTLINE_COLOUR,
    OUTLINE_EDGE,
    SCORE_PALETTE,
    WEIGHT_PALETTE,
    titled,
)
from widgets.style import FIGURE_MIN_WIDTH, draw, drop_grid, text_panel, wrapping_row
from widgets.tiles_viewdata import FRAME_WIDTH, ROW_HEIGHT

INTRO = (
    "<h2 style='margin:4px 0'>Attention in tiles</h2>"
    "<p style='font-size:15px;margin:2px 0'>The chosen query's row of the head above, computed the way "
    "FlashAttention computes it: a tile of keys at a time, each tile's scores folded into a running "
    "maximum, a running sum and a running output, then dropped. Nothing ever holds the whole row.</p>"
)
TILE_FRAME = "#555555"
CSS = """
.tiles-table { border-collapse: collapse; font-size: 13.5px; }
.tiles-table th, .tiles-table td { padding: 3px 8px; border-bottom: 1px solid #e4e4e4; text-align: left;
  vertical-align: top; }
.tiles-table th { font-weight: 600; color: #444; font-size: 12.5px; }
.tiles-table tr.now td { background: #fff1e0; font-weight: 600; }
.tiles-table tr.next td { color: #555; font-style: italic; }
.bk-clearfix { display: block !important; }  /* the Div's content takes the Div's width, so the box scrolls */
.tiles-scroll { overflow-x: auto; width: 0; min-width: 100%; }  /* adds nothing to its column's own width */
.tiles-readout p { margin: 4px 0; font-size: 15px; }
"""


class TilesPage:
    """The tiles view's figure, table, readout and controls, bound to nothing yet."""

    def __init__(self, data: dict):
        T = data["T"]
        self.scores = ColumnDataSource(data["scores"], name="tiles-scores")
        self.weights = ColumnDataSource(data["weights"], name="tiles-weights")
        self.tiles = ColumnDataSource(data["tiles"], name="tiles-frames")
        self.current = ColumnDataSource(data["current"], name="tiles-current")
        self.score_mapper = LinearColorMapper(palette=SCORE_PALETTE, nan_color=MASKED_GREY)
        self.weight_mapper = LinearColorMapper(palette=WEIGHT_PALETTE, nan_color=MASKED_GREY)
        self.score_ink = LinearColorMapper(palette=_INK_SCORE, nan_color=MASKED_INK)
        self.weight_ink = LinearColorMapper(palette=_INK_WEIGHT, nan_color=MASKED_INK)
        self.numbers = []  # the two rows' Text glyphs: their font follows the layout
        self.figure = fig = figure(
            name="tiles-figure",
            frame_width=FRAME_WIDTH,  # one size on every screen: its text is laid out for it (view data)
            frame_height=2 * ROW_HEIGHT,
            x_range=Range1d(-0.5, T - 0.5),
            y_range=Range1d(1.5, -0.5),
            tools="save",
            toolbar_location="right",
            x_axis_location="above",
        )
        fig.toolbar.logo = None
        titled(fig, "The query's row, tile by tile", "scores, and the weights so far")
        drop_grid(fig)
        fig.outline_line_color = None
        fig.axis.major_tick_line_color = None
        fig.axis.axis_line_color = None
        fig.xaxis.axis_label = "key"
        fig.xaxis.ticker = FixedTicker(ticks=[])
        self.axis = fig.xaxis[0]
        fig.yaxis.ticker = FixedTicker(ticks=[0, 1])
        fig.yaxis.major_label_overrides = {0: "score", 1: "weight so far"}
        for source, mapper, ink in (
            (self.scores, self.score_mapper, self.score_ink),
            (self.weights, self.weight_mapper, self.weight_ink),
        ):
            colour = {"field": "value", "transform": mapper}
            draw(fig, source, Rect(x="x", y="y", width=1, height=1, line_color="white", fill_alpha="alpha",
                                   fill_color=colour))  # fmt: skip
            ink = {"field": "value", "transform": ink}
            middle = {"text_align": "center", "text_baseline": "middle"}
            text = Text(x="x", y="y", text="text", text_color=ink, **middle)
            numbers = draw(fig, source, text)
            self.numbers.append(numbers.glyph)
        frame = {"x": "x", "y": "y", "width": "width", "height": "height", "fill_alpha": 0}
        draw(fig, self.tiles, Rect(**frame, line_color=TILE_FRAME, line_width=1.5, line_dash="dashed"))
        for colour, width in ((OUTLINE_EDGE, 5), (OUTLINE_COLOUR, 3)):
            draw(fig, self.current, Rect(**frame, line_color=colour, line_width=width))

        self.intro = text_panel(INTRO, name="tiles-intro", sizing_mode="stretch_width")
        self.size = Slider(title="tile size (keys)", start=1, end=max(T, 2), step=1, value=data["size"],
                           width=260, name="tiles-size", disabled=T < 2)  # fmt: skip
        self.next = Button(label="Next tile", width=120, name="tiles-next")
        self.again = Button(label="Start again", width=120, name="tiles-again")
        css = InlineStyleSheet(css=CSS)
        fluid = {"sizing_mode": "stretch_width"}
        self.readout = text_panel(data["readout"], name="tiles-readout", max_width=560, **fluid)
        self.table = text_panel(data["table"], name="tiles-table", max_width=900, **fluid)
        for div in (self.readout, self.table):
            div.stylesheets = [*div.stylesheets, css]
        self.layout = column(
            self.intro,
            wrapping_row(
                column(self.size, row(self.next, self.again), self.readout, sizing_mode="stretch_width",
                       min_width=FIGURE_MIN_WIDTH, max_width=560),  # fmt: skip
                self.figure,
                name="tiles-top",
            ),
            self.table,
            name="tiles-explorer",
            sizing_mode="stretch_width",
        )
        self.update(data)

    def update(self, data: dict) -> None:
        """One state's view data into the existing models (the range and the axis only when they change)."""
        T = data["T"]
        for source, name in ((self.scores, "scores"), (self.weights, "weights"),
                             (self.tiles, "tiles"), (self.current, "current")):  # fmt: skip
            if source.data != data[name]:
                source.data = data[name]
        for mapper, ink, (low, high) in (
            (self.score_mapper, self.score_ink, data["score_limits"]),
            (self.weight_mapper, self.weight_ink, data["weight_limits"]),
        ):
            if (mapper.low, mapper.high) != (low, high):
                mapper.update(low=low, high=high)
                ink.update(low=low, high=high)
        fig, axis, layout = self.figure, self.axis, data["layout"]
        if fig.x_range.end != T - 0.5:
            fig.x_range.update(start=-0.5, end=T - 0.5)
        labels = dict(zip(layout["x_ticks"], layout["x_labels"]))
        if axis.major_label_overrides != labels:
            axis.major_label_overrides = labels  # before the ticks: no frame draws the old labels
            axis.ticker.ticks = layout["x_ticks"]
            axis.major_label_orientation = layout["x_angle"]
        for glyph in self.numbers:
            if glyph.text_font_size != f"{layout['font']}px":
                glyph.text_font_size = f"{layout['font']}px"
        self.size.update(end=max(T, 2), value=data["size"], disabled=T < 2)
        self.next.disabled = data["step"] >= data["count"]
        self.again.disabled = data["step"] == 0
        if self.readout.text != data["readout"]:
            self.readout.text = data["readout"]
        if self.table.text != data["table"]:
            self.table.text = data["table"]
