"""A labelled matrix drawn as coloured cells with the number in each cell.

Used for the [T, T] score and weight heatmaps and the small Q, K, V
matrices.  The figure, its ranges and its sources are made once; `update`
only writes new column data and limits into them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    CustomJS,
    FixedTicker,
    HoverTool,
    Image,
    LinearColorMapper,
    Range1d,
    Rect,
    SaveTool,
    Text,
    Title,
)
from bokeh.palettes import Blues256, RdBu11
from bokeh.plotting import figure

from widgets.a11y import ink_for
from widgets.figure_text import GAP
from widgets.sources import write_changed
from widgets.style import draw, drop_grid

# Sequential, light for 0: each weight reads as "how much".  Blue-red diverging
# for scores: both palettes stay distinguishable under the common colour-blindnesses.
WEIGHT_PALETTE = tuple(reversed(Blues256))[:230]
SCORE_PALETTE = tuple(reversed(RdBu11))
MASKED_GREY = "#d4d4d4"
CELL_OUTLINE = "white"

# Text colour follows the cell's colour, via a second mapper on the same value with as many colours as the
# palette: black or white, whichever reads better on each (black keeps every mid blue at 4.5 : 1 or more).
_INK_WEIGHT = ink_for(WEIGHT_PALETTE, dark="#000000")
_INK_SCORE = ink_for(SCORE_PALETTE, dark="#000000")
MASKED_INK = "#1a1a1a"
# The query's row: an orange frame edged in black, so some part of it stands out at 3 : 1 or more
# against light cells and dark ones alike.
OUTLINE_COLOUR, OUTLINE_EDGE = "#f28e2b", "#000000"
# The walk through the six steps dims every cell but those its step concerns (widgets/lesson_data.py).
SPOTLIGHT_FILL, SPOTLIGHT_ALPHA = "#ffffff", 0.78

# Titles: a short bold title and a plain subtitle under it, each on one line. Bokeh clips a title at
# the canvas edge, so a figure's frame is at least as wide as its titles need (widgets/figure_text.py
# HEATMAPS least_width); a note under it (cells too small for numbers) is shorter than those.
TITLE_FONT, SUBTITLE_FONT, NOTE_FONT = "13px", "12px", "11px"


def titled(fig, title: str, subtitle: str = "") -> None:
    """Put a title, and a subtitle under it, above a figure (farther from the frame than its x axis)."""
    if subtitle:
        fig.add_layout(
            Title(
                text=subtitle,
                text_font_size=SUBTITLE_FONT,
                text_font_style="normal",
                text_color="#444444",
                standoff=2,
            ),
            "above",
        )
    fig.add_layout(Title(text=title, text_font_size=TITLE_FONT, standoff=2 if subtitle else 8), "above")


# From this many cells on, a column of numbers goes to the browser as a binary buffer.  Each buffer
# costs two websocket frames of its own (two socket writes on the server), which for a small matrix
# costs more than the few numbers it would save as JSON.
BINARY_FROM = 256


def numeric(values) -> list | np.ndarray:
    """A column of numbers as Bokeh should send it: in the message's JSON when short, binary when long."""
    return np.asarray(values, dtype=float) if len(values) >= BINARY_FROM else values


def side_by_side(blocks: dict[str, dict], n_cols: int, gap: int) -> dict:
    """The cells of several matrices as one set of columns: block k moves k · (n_cols + gap) along x,
    and a "matrix" column names the block each cell belongs to (for the hover)."""
    out: dict[str, list] = {"x": [], "y": [], "value": [], "text": [], "row": [], "col": [], "matrix": []}
    for k, (name, cells) in enumerate(blocks.items()):
        shift = k * (n_cols + gap)
        out["x"] += [x + shift for x in cells["x"]]
        out["matrix"] += [name] * len(cells["x"])
        for column in ("y", "value", "text", "row", "col"):
            out[column] += list(cells[column])
    return {k: numeric(v) if k in ("x", "y", "value") else v for k, v in out.items()}


# A matrix too big for numbers is painted as one picture, a pixel a cell scaled up, instead of one rectangle
# per cell (3 × 4096 filled rectangles at 64 tokens were most of a move's drawing). The rectangles stay, not
# painted, for the hover. The picture follows the cells' values in the browser (static/matrix_picture.js,
# the code of a CustomJS), so the served page, the export and the notebook draw it alike and the server
# sends each number once.
PICTURE_FROM_CELLS = Path(__file__).resolve().parents[1] / "static" / "matrix_picture.js"


def spotlight_side_by_side(blocks: dict[str, dict], n_cols: int, gap: int) -> dict:
    """The dimming rectangles of several matrices in one figure, each block moved as side_by_side moves
    its cells."""
    out: dict[str, list] = {"x": [], "y": [], "width": [], "height": []}
    for k, rects in enumerate(blocks.values()):
        shift = k * (n_cols + gap)
        out["x"] += [x + shift for x in rects["x"]]
        for column in ("y", "width", "height"):
            out[column] += list(rects[column])
    return out


def picture_of(cells: dict, rows: int, cols: int) -> dict:
    """One matrix's cells as the picture's columns: a rows × cols image from the first cell's corner."""
    image = np.full((rows, cols), np.nan)
    image[np.asarray(cells["y"], dtype=int), np.asarray(cells["x"], dtype=int)] = cells["value"]
    return {"image": [image], "x": [-0.5], "y": [-0.5], "dw": [float(cols)], "dh": [float(rows)]}


class MatrixPlot:
    """Matrices of one colour scheme side by side in one figure, as coloured cells with their numbers.

    Each [T, T] heatmap is a figure of its own; Q, K and V share one. All the cells of a figure are one
    source with one glyph for the colours and one for the numbers, so a move changes one source and
    repaints one canvas however many matrices the figure holds. `kind` is "weights" (sequential 0..1)
    or "scores" (diverging ±limit). Its size, its numbers' font and its tick labels are the view data's
    (`layout`, widgets/figure_text.py heatmap_layouts), which decides them so that no texts overlap.
    """

    GAP = GAP  # empty columns between two matrices in one figure

    def __init__(
        self,
        title: str,
        blocks: dict[str, dict],
        limits,
        rows,
        cols,
        *,
        kind: str,
        layout: dict,
        outline: dict | None = None,
        name: str,
        row_axis: str = "query",
        col_axis: str = "key",
        subtitle: str = "",
        picture: bool = False,
    ):
        self.kind = kind
        n_rows, n_cols = len(rows), len(cols)
        weights = kind == "weights"
        self.mapper = LinearColorMapper(
            palette=WEIGHT_PALETTE if weights else SCORE_PALETTE,
            low=limits[0],
            high=limits[1],
            nan_color=MASKED_GREY,
        )
        self.ink = LinearColorMapper(
            palette=_INK_WEIGHT if weights else _INK_SCORE,
            low=self.mapper.low,
            high=self.mapper.high,
            nan_color=MASKED_INK,
        )
        self.names = list(blocks)
        width_cols = self._span(n_cols)
        self.figure = fig = figure(
            name=name,
            frame_width=layout["frame_width"],
            min_width=layout["min_width"],
            frame_height=layout["frame_height"],
            x_range=Range1d(-0.5, width_cols - 0.5),
            y_range=Range1d(n_rows - 0.5, -0.5),
            tools="save",
            toolbar_location="right",
            x_axis_location="above",
        )
        fig.toolbar.logo = None
        fig.select_one(SaveTool).filename = f"attention-{name}"  # saved at once, no name prompt
        titled(fig, title, subtitle)
        drop_grid(fig)
        fig.outline_line_color = None
        fig.axis.major_tick_line_color = None
        fig.axis.minor_tick_line_color = None
        fig.axis.axis_line_color = None
        fig.xaxis.axis_label = col_axis
        fig.yaxis.axis_label = row_axis
        self.source = ColumnDataSource(side_by_side(blocks, n_cols, self.GAP), name=f"{name}-cells")
        # What the numbers read while they are hidden: BokehJS re-measures every text of a renderer whose
        # source changes, shown or not (~0.4 s a move for three 64 × 64 matrices).
        self.no_numbers = ColumnDataSource(
            {"x": [], "y": [], "text": [], "value": []}, name=f"{name}-no-numbers"
        )
        self.outline = ColumnDataSource(
            outline or {"x": [], "y": [], "width": [], "height": []}, name=f"{name}-outline"
        )
        # the walk's: rectangles that dim the cells its step does not concern
        self.spotlight = ColumnDataSource(spotlight_side_by_side({}, 0, 0), name=f"{name}-spotlight")
        # `picture`: one matrix only, painted as an image when it has too many cells for numbers
        self.picture = None
        if picture and len(blocks) == 1:
            self.picture = ColumnDataSource(
                picture_of(next(iter(blocks.values())), n_rows, n_cols), name=f"{name}-picture"
            )
            image = Image(image="image", x="x", y="y", dw="dw", dh="dh", color_mapper=self.mapper)
            self.picture_r = draw(fig, self.picture, image)
        self.cells = cells_r = draw(
            fig,
            self.source,
            Rect(
                x="x",
                y="y",
                width=1,
                height=1,
                line_color=CELL_OUTLINE,
                fill_color={"field": "value", "transform": self.mapper},
            ),
        )
        self.numbers = draw(
            fig,
            self.source,
            Text(
                x="x",
                y="y",
                text={"field": "text"},
                text_align="center",
                text_baseline="middle",
                text_font_size="11px",
                text_color={"field": "value", "transform": self.ink},
            ),
        )
        draw(
            fig,
            self.spotlight,
            Rect(
                x="x", y="y", width="width", height="height", line_color=None, fill_color=SPOTLIGHT_FILL,
                fill_alpha=SPOTLIGHT_ALPHA,
            ),
        )
        if outline is not None:
            for colour, line_width in ((OUTLINE_EDGE, 5), (OUTLINE_COLOUR, 3)):
                draw(
                    fig,
                    self.outline,
                    Rect(
                        x="x",
                        y="y",
                        width="width",
                        height="height",
                        fill_alpha=0,
                        line_color=colour,
                        line_width=line_width,
                    ),
                )
        fig.add_tools(
            HoverTool(
                renderers=[cells_r],
                tooltips=[
                    ("matrix", "@matrix"),
                    (row_axis, "@row"),
                    (col_axis, "@col"),
                    ("value", "@text"),
                    ("exact", "@value{0.000000}"),
                ],
            )
        )
        if self.picture is not None:
            self.source.js_on_change(
                "data",
                CustomJS(
                    args={
                        "source": self.source,
                        "picture": self.picture,
                        "picture_r": self.picture_r,
                        "cells_r": cells_r,
                        "numbers": self.numbers,
                    },
                    code=PICTURE_FROM_CELLS.read_text(),
                ),
            )
        if width_cols > 2 or kind == "weights":
            fig.add_layout(ColorBar(color_mapper=self.mapper, width=10, title=None, padding=4), "right")
        # what the figure says under it when its cells are too small for numbers
        self.note = Title(text=layout["note"], text_font_size=NOTE_FONT, text_font_style="normal",
                          text_color="#444444", standoff=2)
        fig.add_layout(self.note, "below")
        self.lay_out(layout)

    def _span(self, n_cols: int) -> int:
        """Columns the figure spans: every matrix and the gaps between them."""
        return len(self.names) * (n_cols + self.GAP) - self.GAP

    def lay_out(self, layout: dict) -> None:
        """The figure's size, its numbers' font and its tick labels, as the view data decided them."""
        fig = self.figure
        for key in ("frame_width", "frame_height", "min_width"):
            if getattr(fig, key) != layout[key]:
                setattr(fig, key, layout[key])
        self.show_numbers(bool(layout["font"]))
        if layout["font"]:
            self.numbers.glyph.text_font_size = f"{layout['font']:g}px"
        fig.xaxis.major_label_orientation = layout["x_angle"]
        for axis, key in ((fig.xaxis[0], "x"), (fig.yaxis[0], "y")):
            labels = dict(zip(layout[f"{key}_ticks"], layout[f"{key}_labels"]))
            if isinstance(axis.ticker, FixedTicker):
                axis.ticker.ticks = layout[f"{key}_ticks"]
            else:
                axis.ticker = FixedTicker(ticks=layout[f"{key}_ticks"])
            axis.major_label_overrides = labels
        if self.note.text != layout["note"]:
            self.note.text = layout["note"]

    def show_numbers(self, show: bool) -> None:
        """Numbers in the cells, or none (too many cells to read) and nothing for the browser to redo.

        Cells too small for a number also lose their white outline: at 64 tokens stroking 3 × 4096
        outlines was a third of a move's drawing, and the outlines hid a fifth of each cell's colour.
        """
        self.numbers.visible = show
        self.numbers.data_source = self.source if show else self.no_numbers
        self.cells.glyph.line_color = CELL_OUTLINE if show else None
        if self.picture is not None:  # no numbers: the picture paints the colours, the cells only hover
            self.picture_r.visible = not show
            self.cells.glyph.fill_alpha = 0 if not show else 1

    def set_limits(self, limits) -> None:
        low, high = limits
        if (low, high) != (self.mapper.low, self.mapper.high):
            self.mapper.update(low=low, high=high)
            self.ink.update(low=low, high=high)

    def update(
        self,
        blocks: dict[str, dict],
        limits,
        rows,
        cols,
        *,
        layout: dict,
        outline: dict | None = None,
        reshape: bool = False,
        spotlight: dict | None = None,
    ) -> None:
        """New numbers in place; `reshape` also resets ranges, size and tick labels (tokens or widths
        changed); `spotlight`: each block's dimming rectangles (the walk's, widgets/lesson_data.py)."""
        n_rows, n_cols = len(rows), len(cols)
        self.set_limits(limits)
        if reshape:
            self.figure.x_range.update(start=-0.5, end=self._span(n_cols) - 0.5)
            self.figure.y_range.update(start=n_rows - 0.5, end=-0.5)
            self.lay_out(layout)
            self.source.data = side_by_side(blocks, n_cols, self.GAP)
        else:  # same cells, new numbers: send only what changes
            columns = {"value": numeric([v for cells in blocks.values() for v in cells["value"]])}
            if self.numbers.visible:  # else too many cells for numbers: their text stays empty
                columns["text"] = [t for cells in blocks.values() for t in cells["text"]]
            write_changed(self.source, columns)
        if outline is not None and outline != self.outline.data:
            self.outline.data = outline
        if spotlight is not None:
            write_changed(self.spotlight, spotlight_side_by_side(spotlight, n_cols, self.GAP))
