"""A labelled matrix drawn as coloured cells with the number in each cell.

Used for the [T, T] score and weight heatmaps and the small Q, K, V
matrices.  The figure, its ranges and its sources are made once; `update`
only writes new column data and limits into them.
"""

from __future__ import annotations

import math
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
from widgets.sources import write_changed
from widgets.style import draw, drop_grid, short_label
from widgets.viewdata import shows_numbers

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

# A cell's size on screen. Figures are sized by their frame (the cells), so a long token label widens the
# figure for its axis instead of squeezing the cells and cutting the title short.
CELL_W, CELL_H = 54, 44
# What the axes, title, colour bar and toolbar take around the frame, for the size caps below.
BORDERS_W, BORDERS_H = 130, 80
# In a container narrower than a figure (a phone), the figure may narrow its cells down to this width,
# where a number like 0.10 still fits; below that its area scrolls instead (static/page.css).
MIN_CELL_W = 30
# Column labels lie flat while there are at most FLAT_UP_TO of them and each fits across its cell;
# otherwise they slant by SLANT radians, so they do not run together.
FLAT_UP_TO = 8
# Tick labels closer together than this (px, along the axis) would print over each other: then only every
# k-th row or column is labelled (64 tokens in 380 px: every third). BokehJS measures and draws every tick
# label at every repaint, so unreadable labels also cost a move time.
MIN_LABEL_PX = 14
LABEL_FITS_CELL = 6  # characters
SLANT = 0.9

# Titles: a short bold title and a plain subtitle under it, each on one line. Bokeh clips a title at
# the canvas edge, so a figure is made wide enough for its longest title line (estimated from these
# per-character widths, generous for the sans-serif fonts Chromium and Firefox fall back to).
TITLE_FONT, SUBTITLE_FONT = "13px", "12px"
TITLE_PX_PER_CHAR, SUBTITLE_PX_PER_CHAR = 8.5, 7.2
# Right of the frame a title may also use: the colour bar's room (narrowest case) and the toolbar.
RIGHT_OF_FRAME = 50


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


def title_px(title: str, subtitle: str = "") -> int:
    """How wide the longest title line is expected to be, in CSS pixels."""
    return int(max(len(title) * TITLE_PX_PER_CHAR, len(subtitle) * SUBTITLE_PX_PER_CHAR))


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


def picture_of(cells: dict, rows: int, cols: int) -> dict:
    """One matrix's cells as the picture's columns: a rows × cols image from the first cell's corner."""
    image = np.full((rows, cols), np.nan)
    image[np.asarray(cells["y"], dtype=int), np.asarray(cells["x"], dtype=int)] = cells["value"]
    return {"image": [image], "x": [-0.5], "y": [-0.5], "dw": [float(cols)], "dh": [float(rows)]}


def every_kth(labels: dict, cell_px: float) -> dict:
    """The tick labels (position → text) kept when cells are `cell_px` apart: every k-th, from the first,
    so that kept labels lie at least MIN_LABEL_PX apart."""
    k = max(1, math.ceil(MIN_LABEL_PX / cell_px))
    return {i: t for n, (i, t) in enumerate(sorted(labels.items())) if n % k == 0}


class MatrixPlot:
    """Matrices of one colour scheme side by side in one figure, as coloured cells with their numbers.

    Each [T, T] heatmap is a figure of its own; Q, K and V share one. All the cells of a figure are one
    source with one glyph for the colours and one for the numbers, so a move changes one source and
    repaints one canvas however many matrices the figure holds. `kind` is "weights" (sequential 0..1)
    or "scores" (diverging ±limit).
    """

    GAP = 1  # empty columns between two matrices in one figure

    def __init__(
        self,
        title: str,
        blocks: dict[str, dict],
        limits,
        rows,
        cols,
        *,
        kind: str,
        outline: dict | None = None,
        name: str,
        row_axis: str = "query",
        col_axis: str = "key",
        max_px: int = 420,
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
        frame_width = min(max_px * len(blocks) - BORDERS_W, CELL_W * max(width_cols, 2))
        frame_width = max(frame_width, title_px(title, subtitle) - RIGHT_OF_FRAME)  # no title cut short
        frame_height = min(max_px - BORDERS_H, CELL_H * max(n_rows, 2))
        self.figure = fig = figure(
            name=name,
            frame_width=frame_width,
            min_width=min(frame_width, MIN_CELL_W * max(width_cols, 2)) + BORDERS_W,
            frame_height=frame_height,
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
        self.show_numbers(shows_numbers(n_rows, n_cols))
        if width_cols > 2 or kind == "weights":
            fig.add_layout(ColorBar(color_mapper=self.mapper, width=10, title=None, padding=4), "right")
        self._set_axes(rows, cols)

    def _span(self, n_cols: int) -> int:
        """Columns the figure spans: every matrix and the gaps between them."""
        return len(self.names) * (n_cols + self.GAP) - self.GAP

    def _set_axes(self, rows, cols) -> None:
        if len(self.names) == 1:
            col_labels = {i: short_label(c) for i, c in enumerate(cols)}
        else:  # Q[0], Q[1], K[0], …: each column says which matrix it belongs to
            step = len(cols) + self.GAP
            col_labels = {
                k * step + j: f"{n}[{c}]" for k, n in enumerate(self.names) for j, c in enumerate(cols)
            }
        row_labels = {i: short_label(r) for i, r in enumerate(rows)}
        fig = self.figure
        col_labels = every_kth(col_labels, fig.frame_width / max(self._span(len(cols)), 1))
        row_labels = every_kth(row_labels, fig.frame_height / max(len(rows), 1))
        longest = max(map(len, col_labels.values()), default=0)
        fits = len(col_labels) <= FLAT_UP_TO and longest <= LABEL_FITS_CELL
        self.figure.xaxis.major_label_orientation = 0.0 if fits else SLANT
        for axis, labels in ((self.figure.xaxis[0], col_labels), (self.figure.yaxis[0], row_labels)):
            ticks = sorted(labels)
            if isinstance(axis.ticker, FixedTicker):
                axis.ticker.ticks = ticks
            else:
                axis.ticker = FixedTicker(ticks=ticks)
            axis.major_label_overrides = labels

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
        outline: dict | None = None,
        reshape: bool = False,
    ) -> None:
        """New numbers in place; `reshape` also resets ranges and tick labels (tokens or widths changed)."""
        n_rows, n_cols = len(rows), len(cols)
        self.set_limits(limits)
        if reshape:
            self.figure.x_range.update(start=-0.5, end=self._span(n_cols) - 0.5)
            self.figure.y_range.update(start=n_rows - 0.5, end=-0.5)
            self.show_numbers(shows_numbers(n_rows, n_cols))
            self._set_axes(rows, cols)
            self.source.data = side_by_side(blocks, n_cols, self.GAP)
        else:  # same cells, new numbers: send only what changes
            columns = {"value": numeric([v for cells in blocks.values() for v in cells["value"]])}
            if self.numbers.visible:  # else too many cells for numbers: their text stays empty
                columns["text"] = [t for cells in blocks.values() for t in cells["text"]]
            write_changed(self.source, columns)
        if outline is not None and outline != self.outline.data:
            self.outline.data = outline
