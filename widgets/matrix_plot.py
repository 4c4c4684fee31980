"""A labelled matrix drawn as coloured cells with the number in each cell.

Used for the [T, T] score and weight heatmaps and the small Q, K, V
matrices.  The figure, its ranges and its sources are made once; `update`
only writes new column data and limits into them.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    FixedTicker,
    HoverTool,
    LinearColorMapper,
    Range1d,
)
from bokeh.palettes import Blues256, RdBu11
from bokeh.plotting import figure

from widgets.style import short_label
from widgets.viewdata import NUMBERS_UP_TO

# Sequential, light for 0: each weight reads as "how much".  Blue-red diverging
# for scores: both palettes stay distinguishable under the common colour-blindnesses.
WEIGHT_PALETTE = tuple(reversed(Blues256))[:230]
SCORE_PALETTE = tuple(reversed(RdBu11))
MASKED_GREY = "#d4d4d4"

# Text colour follows the cell's darkness, via a second mapper on the same value.
_INK_WEIGHT = ("#1a1a1a",) * 6 + ("#ffffff",) * 4
_INK_SCORE = ("#ffffff",) * 2 + ("#1a1a1a",) * 7 + ("#ffffff",) * 2

CELL_PX = 46


def as_columns(cells: dict) -> dict:
    """View data → source columns; numbers as arrays so Bokeh sends them as binary."""
    return {k: np.asarray(v, dtype=float) if k in ("x", "y", "value") else v for k, v in cells.items()}


class MatrixPlot:
    """One matrix figure.  `kind` is "weights" (sequential 0..1) or "scores" (diverging ±limit)."""

    def __init__(
        self,
        title: str,
        cells: dict,
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
            nan_color="#1a1a1a",
        )
        self.source = ColumnDataSource(as_columns(cells), name=f"{name}-cells")
        self.outline = ColumnDataSource(
            outline or {"x": [], "y": [], "width": [], "height": []}, name=f"{name}-outline"
        )
        width = min(max_px, 90 + CELL_PX * max(n_cols, 2) + (70 if n_cols > 2 else 0))
        height = min(max_px, 70 + CELL_PX * max(n_rows, 2))
        self.figure = fig = figure(
            title=title,
            name=name,
            width=width,
            height=height,
            x_range=Range1d(-0.5, n_cols - 0.5),
            y_range=Range1d(n_rows - 0.5, -0.5),
            tools="save",
            toolbar_location="right",
            x_axis_location="above",
        )
        fig.toolbar.logo = None
        fig.grid.visible = False
        fig.outline_line_color = None
        fig.axis.major_tick_line_color = None
        fig.axis.minor_tick_line_color = None
        fig.axis.axis_line_color = None
        fig.xaxis.axis_label = col_axis
        fig.yaxis.axis_label = row_axis
        fig.xaxis.major_label_orientation = 0.0 if n_cols <= 8 else 0.9
        cells_r = fig.rect(
            "x",
            "y",
            width=1,
            height=1,
            source=self.source,
            line_color="white",
            fill_color={"field": "value", "transform": self.mapper},
        )
        self.numbers = fig.text(
            "x",
            "y",
            text="text",
            source=self.source,
            text_align="center",
            text_baseline="middle",
            text_font_size="11px",
            text_color={"field": "value", "transform": self.ink},
        )
        self.numbers.visible = max(n_rows, n_cols) <= NUMBERS_UP_TO
        fig.rect(
            "x",
            "y",
            width="width",
            height="height",
            source=self.outline,
            fill_alpha=0,
            line_color="#f28e2b",
            line_width=3,
        )
        fig.add_tools(
            HoverTool(
                renderers=[cells_r],
                tooltips=[
                    (row_axis, "@row"),
                    (col_axis, "@col"),
                    ("value", "@text"),
                    ("exact", "@value{0.000000}"),
                ],
            )
        )
        if n_cols > 2 or kind == "weights":
            fig.add_layout(ColorBar(color_mapper=self.mapper, width=10, title=None, padding=4), "right")
        self._set_axes(rows, cols)

    def _set_axes(self, rows, cols) -> None:
        for axis, labels in ((self.figure.xaxis[0], cols), (self.figure.yaxis[0], rows)):
            ticks = list(range(len(labels)))
            if isinstance(axis.ticker, FixedTicker):
                axis.ticker.ticks = ticks
            else:
                axis.ticker = FixedTicker(ticks=ticks)
            axis.major_label_overrides = {i: short_label(label) for i, label in enumerate(labels)}

    def update(
        self, cells: dict, limits, rows, cols, *, outline: dict | None = None, reshape: bool = False
    ) -> None:
        """New numbers in place; `reshape` also resets ranges and tick labels (tokens or widths changed)."""
        if reshape:
            n_rows, n_cols = len(rows), len(cols)
            self.figure.x_range.update(start=-0.5, end=n_cols - 0.5)
            self.figure.y_range.update(start=n_rows - 0.5, end=-0.5)
            self._set_axes(rows, cols)
            self.numbers.visible = max(n_rows, n_cols) <= NUMBERS_UP_TO
        low, high = limits
        if (low, high) != (self.mapper.low, self.mapper.high):
            self.mapper.update(low=low, high=high)
            self.ink.update(low=low, high=high)
        if reshape:
            self.source.data = as_columns(cells)
        elif self.numbers.visible:  # same cells, new numbers: send only what changes, values as binary
            self.source.data.update(value=np.asarray(cells["value"], dtype=float), text=cells["text"])
        else:  # too many cells for numbers: their text stays empty
            self.source.data.update(value=np.asarray(cells["value"], dtype=float))
        if outline is not None and outline != self.outline.data:
            self.outline.data = outline
