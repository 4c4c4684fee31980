"""The head editor: token labels, adding and removing tokens, the widths C
and d, the three weight matrices as grids of exact numbers, and which two
value coordinates the blend plot shows when d > 2.

Plain Bokeh widgets, like the other controls; the explorer wires them to the
state.  Grids are rebuilt only when C or d changes, never while typing.
"""

from __future__ import annotations

from bokeh.layouts import column, row
from bokeh.models import Button, Div, NumericInput, Select, Spinner, TextInput

from widgets.controls import set_changed
from widgets.state import EDIT_MAX_TOKENS, MAX_WIDTH
from widgets.style import text_panel, wrapping_row

# Text and the labels box take the width they are given (a phone's, too), up to a comfortable one.
FLUID = {"sizing_mode": "stretch_width", "max_width": 560}

WEIGHTS = ("W_Q", "W_K", "W_V")
GRID_WIDTH = 62  # px, one number box of a weight grid


class WeightGrid:
    """A C × d grid of number boxes for one weight matrix."""

    def __init__(self, name: str, W):
        self.name = name
        self.cells: list[list[NumericInput]] = []
        self.layout = column(name=f"grid-{name}")
        self.rebuild(W)

    def rebuild(self, W) -> None:
        self.cells = [
            [
                NumericInput(
                    value=float(v), mode="float", width=GRID_WIDTH, name=f"{self.name}-{r}-{c}", tags=[r, c]
                )
                for c, v in enumerate(line)
            ]
            for r, line in enumerate(W)
        ]
        self.layout.children = [Div(text=f"<b>{self.name}</b>")] + [row(*line) for line in self.cells]

    def set_values(self, W) -> None:
        for line, values in zip(self.cells, W):
            for box, v in zip(line, values):
                set_changed(box, value=float(v))

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.cells), len(self.cells[0]) if self.cells else 0

    @property
    def flat(self) -> list[NumericInput]:
        return [box for line in self.cells for box in line]


class HeadEditor:
    def __init__(self, labels, W: dict, *, C: int, d: int, dims):
        self.labels = TextInput(
            title="Token labels, separated by commas", value=", ".join(labels), name="labels", **FLUID
        )
        self.add = Button(label="Add a token", name="add-token", width=130)
        self.remove = Button(label="Remove the query token", name="remove-token", width=180)
        self.C = Spinner(title="Token width C", low=1, high=MAX_WIDTH, step=1, value=C, name="C", width=120)
        self.d = Spinner(title="Head width d", low=1, high=MAX_WIDTH, step=1, value=d, name="d", width=120)
        self.grids = {name: WeightGrid(name, W[name]) for name in WEIGHTS}
        self.dim_x = Select(title="Blend plot: x shows value[…]", name="dim-x", width=200)
        self.dim_y = Select(title="y shows value[…]", name="dim-y", width=200)
        self.dims_note = Div(text="", name="dims-note", **FLUID)
        # The editor's own copy of the explorer's message, so a refused entry is explained next to it.
        self.message = text_panel("", name="editor-message", **FLUID)
        self.set_dims(d, dims)
        self.layout = column(
            Div(
                text=f"<p>Edit the head itself. Up to {EDIT_MAX_TOKENS} tokens, C and d from 1 to "
                f"{MAX_WIDTH}. A value the head cannot use is refused with a message and the last good "
                "state stays.</p>",
                **FLUID,
            ),
            self.message,
            self.labels,
            row(self.add, self.remove),
            row(self.C, self.d),
            wrapping_row(*(g.layout for g in self.grids.values()), name="weight-grids"),
            wrapping_row(self.dim_x, self.dim_y, name="blend-dims"),
            self.dims_note,
            name="editor",
            sizing_mode="stretch_width",
        )

    def set_dims(self, d: int, dims) -> None:
        options = [str(k) for k in range(d)]
        set_changed(self.dim_x, options=options, value=str(dims[0]), disabled=d <= 2)
        set_changed(self.dim_y, options=options, value=str(dims[1]), disabled=d <= 2)
        set_changed(
            self.dims_note,
            text=(  # unchanged controls are not written (a classroom send)
                f"d = {d}: the blend plot shows two of the {d} value coordinates, chosen above."
                if d > 2
                else "d = 1: the blend plot puts every value on one line."
                if d == 1
                else ""
            ),
        )
