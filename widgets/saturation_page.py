"""Every Bokeh model of the "Why ÷√d" explorer, made once.

The served view (widgets/saturation_view.py) and the static export
(app/export_explorers.py) build this same page; they differ only in who
computes the next view data: Python on the server, or static/saturation.js
in the browser.  `update` writes one state's view data
(widgets/saturation_viewdata.py) into the existing models; `show_inputs`
makes the controls show the inputs.
"""

from __future__ import annotations

from bokeh.layouts import column
from bokeh.models import (
    ColumnDataSource,
    FixedTicker,
    HoverTool,
    InlineStyleSheet,
    Legend,
    LegendItem,
    NumericInput,
    RadioButtonGroup,
    Range1d,
    Span,
)
from bokeh.plotting import figure

from core.saturation import HIGH_QUANTILE, LOW_QUANTILE
from widgets.matrix_plot import titled
from widgets.saturation_state import MAX_T, MAX_TRIALS, MIN_T, WIDTHS
from widgets.saturation_viewdata import RAW, SCALED
from widgets.style import FIGURE_MIN_WIDTH, fluid_figure, text_panel, wrapping_row

REFERENCE = "#555555"
CHOSEN = "#E69F00"

INTRO = (
    "<h2 style='margin:4px 0'>Why divide by √d?</h2>"
    "<p style='font-size:15px;margin:2px 0'>Random queries and keys with spread 1, as an "
    "untrained head has. Pick a head width and compare the softmax with and without the "
    "division.</p>"
)
# The controls take the column's width, up to 430 px (the width buttons share it).
CONTROL_WIDTH = {"sizing_mode": "stretch_width", "max_width": 430}
# The number boxes: input name, label, width in pixels.
NUMBER_BOXES = (
    ("seed", "seed", 90),
    ("T", f"keys per query T ({MIN_T}–{MAX_T})", 170),
    ("trials", "trials (queries)", 120),
    ("row", f"row worked out (1–{MAX_TRIALS})", 170),
)
ROW_CSS = """
.saturation-row table { border-collapse: collapse; font-size: 14px; }
.saturation-row th, .saturation-row td { padding: 3px 8px; border-bottom: 1px solid #e4e4e4; text-align: left;
  vertical-align: top; }
.saturation-row .foot { margin: 6px 0 0 0; color: #444; font-size: 13px; }
"""


def width_button(d: int) -> int | None:
    """The width buttons' active index for d, or None when d is not one of WIDTHS."""
    return WIDTHS.index(d) if d in WIDTHS else None


def _style(fig) -> None:
    fig.toolbar.logo = None
    fig.axis.axis_label_text_font_size = "14px"
    fig.axis.axis_label_text_font_style = "normal"
    fig.axis.major_label_text_font_size = "13px"
    fig.xaxis.ticker = FixedTicker(ticks=list(WIDTHS))
    fig.xaxis.axis_label = "head width d"
    fig.min_border_right = 20


def _legend(fig, items) -> None:
    """Under the frame: inside it, on a phone it hid the curves."""
    legend = Legend(items=items, label_text_font_size="13px", border_line_color=None, margin=0)
    legend.click_policy = "hide"
    fig.add_layout(legend, "below")


class SaturationFigures:
    """The four figures, their sources, and the spans marking the chosen d."""

    def __init__(self, data: dict, *, width: int = 470, height: int = 410):
        self.curve = ColumnDataSource(data["curve"], name="saturation-curve")
        self.reference = ColumnDataSource(data["reference"], name="saturation-reference")
        self.marker = ColumnDataSource(data["marker"], name="saturation-marker")
        x_range = Range1d(1.6, 640)  # shared: the three figures pan together
        self.chosen = []
        hover = [("d", "@d"), ("raw q·k", "@{field_raw}{{0.000}}"), ("÷√d", "@{field_scaled}{{0.000}}")]

        def tooltips(raw: str, scaled: str):
            return [(k, v.format(field_raw=raw, field_scaled=scaled)) for k, v in hover]

        def make(name: str, title: tuple[str, str], y_label: str, y_range, y_axis_type: str):
            fig = figure(
                **fluid_figure(width, height),
                x_axis_type="log",
                y_axis_type=y_axis_type,
                x_range=x_range,
                y_range=y_range,
                tools="save",
                toolbar_location="right",
                name=name,
            )
            _style(fig)
            titled(fig, *title)  # two short lines: they fit the narrowest figure
            fig.yaxis.axis_label = y_label
            span = Span(
                location=data["chosen"], dimension="height", line_color=CHOSEN, line_width=3, line_alpha=0.6
            )
            fig.add_layout(span)
            self.chosen.append(span)
            return fig

        def ring(fig, y: str) -> None:
            """The open circle on the chosen d."""
            fig.scatter("d", y, source=self.marker, size=18, fill_alpha=0, line_color="#222222", line_width=2)

        def without_and_with(fig, y: str, uniform: str, uniform_label: str) -> None:
            """`y` without ÷√d (dashed, triangles) and with it (solid, circles), over all keys equal."""
            uni = fig.line(
                "d", uniform, source=self.reference, line_color=REFERENCE, line_dash="dotted", line_width=2
            )
            raw, scaled = f"{y}_raw", f"{y}_scaled"
            rl = fig.line("d", raw, source=self.curve, line_color=RAW, line_width=3, line_dash="dashed")
            rp = fig.scatter("d", raw, source=self.curve, size=10, color=RAW, marker="triangle")
            sl = fig.line("d", scaled, source=self.curve, line_color=SCALED, line_width=3)
            sp = fig.scatter("d", scaled, source=self.curve, size=9, color=SCALED)
            ring(fig, y)
            _legend(fig, [("without ÷√d", [rl, rp]), ("with ÷√d", [sl, sp]), (uniform_label, [uni])])
            fig.add_tools(HoverTool(renderers=[rp, sp], tooltips=tooltips(raw, scaled)))

        # 1. spread of the scores
        self.spread = fig = make(
            "saturation-spread", ("Spread of the scores", "grows like √d"), "spread (std) of scores",
            Range1d(0.6, 40), "log",
        )  # fmt: skip
        fig.yaxis.ticker = FixedTicker(ticks=[1, 2, 4, 8, 16, 32])
        ref = fig.line(
            "d", "sqrt_d", source=self.reference, line_color=REFERENCE, line_dash="dashed", line_width=2
        )
        raw = fig.scatter("d", "score_std", source=self.curve, size=10, color=RAW, marker="triangle")
        scaled = fig.scatter(
            "d", "scaled_score_std", source=self.curve, size=9, color=SCALED, marker="circle"
        )
        ring(fig, "spread")
        _legend(fig, [("raw q·k", [raw]), ("q·k ÷ √d", [scaled]), ("√d", [ref])])
        fig.add_tools(HoverTool(renderers=[raw, scaled], tooltips=tooltips("score_std", "scaled_score_std")))

        # 2. largest weight
        self.weight = fig = make(
            "saturation-weight", ("Largest softmax weight", "1 = one key gets it all"), "mean largest weight",
            Range1d(0, 1.04), "linear",
        )  # fmt: skip
        without_and_with(fig, "max_weight", "uniform_weight", "all keys equal (1/T)")

        # 3. the softmax's gradient: its mean, and a band from the LOW_QUANTILE to the HIGH_QUANTILE row
        self.gradient = fig = make(
            "saturation-gradient", ("Gradient through the softmax", "‖∂w/∂z‖; 0 = passes nothing back"),
            "mean size of ∂w/∂z", Range1d(0, 0.55), "linear",
        )  # fmt: skip
        for colour, name in ((RAW, "gradient_raw"), (SCALED, "gradient_scaled")):
            fig.varea(
                "d", f"{name}_low", f"{name}_high", source=self.curve, fill_color=colour, fill_alpha=0.15
            )
        without_and_with(fig, "gradient", "uniform_gradient", "all keys equal")
        band = f"rows from {LOW_QUANTILE:.0%} to {HIGH_QUANTILE:.0%}"
        fig.legend[0].items.append(LegendItem(label=band, renderers=fig.renderers[:2]))

        # 4. entropy
        self.entropy = fig = make(
            "saturation-entropy", ("Entropy of the weights", "0 = one-hot"), "mean entropy (nats)",
            Range1d(*data["entropy_range"]), "linear",
        )  # fmt: skip
        without_and_with(fig, "entropy", "uniform_entropy", "all keys equal (ln T)")

    @property
    def figures(self):
        return (self.spread, self.weight, self.gradient, self.entropy)

    def update(self, data: dict) -> None:
        """New numbers into the existing sources; the entropy axis moves only when T does."""
        if self.curve.data["score_std"] != data["curve"]["score_std"]:
            self.curve.data = data["curve"]
        if self.reference.data["uniform_weight"] != data["reference"]["uniform_weight"]:
            self.reference.data = data["reference"]
            self.entropy.y_range.update(start=data["entropy_range"][0], end=data["entropy_range"][1])
        self.marker.data = data["marker"]
        for span in self.chosen:
            span.location = data["chosen"]


def headed(title: str, max_width: int, *children):
    """A column of text and controls under a bold title, as wide as it is given (a figure wraps beside it)."""
    heading = text_panel(f"<b style='font-size:15px'>{title}</b>")
    fluid = {"sizing_mode": "stretch_width", "min_width": FIGURE_MIN_WIDTH, "max_width": max_width}
    return column(heading, *children, **fluid)


class SaturationPage:
    """The saturation explorer's figures, readout and controls, bound to nothing yet."""

    def __init__(self, data: dict, inputs: dict):
        self.plots = SaturationFigures(data)
        self.intro = text_panel(INTRO, name="saturation-intro", sizing_mode="stretch_width")
        self.readout = text_panel(
            data["readout"], name="saturation-readout", **CONTROL_WIDTH, styles={"font-size": "15px"}
        )
        self.message = text_panel("", name="saturation-message", **CONTROL_WIDTH)
        self.row = text_panel(
            data["row"], name="saturation-worked", sizing_mode="stretch_width", max_width=640
        )
        self.row.stylesheets = [*self.row.stylesheets, InlineStyleSheet(css=ROW_CSS)]
        active = width_button(inputs["d"])
        self.d_buttons = RadioButtonGroup(
            labels=[str(d) for d in WIDTHS], active=0 if active is None else active, **CONTROL_WIDTH,
            name="saturation-d",
        )  # fmt: skip
        self.boxes = {
            name: NumericInput(
                title=label, value=inputs[name], mode="int", width=px, name=f"saturation-{name}"
            )
            for name, label, px in NUMBER_BOXES
        }
        # The rows wrap when the page is narrower than the controls and a figure side by side (a phone,
        # a book's column); the explorer then takes the width it is given.
        boxes = wrapping_row(*self.boxes.values(), name="saturation-boxes")
        self.layout = column(
            self.intro,
            wrapping_row(
                headed("head width d", 460, self.d_buttons, boxes, self.message, self.readout),
                self.plots.spread,
                name="saturation-top",
            ),
            wrapping_row(self.plots.weight, self.plots.gradient, name="saturation-curves"),
            wrapping_row(
                headed("One row worked out", 640, self.row), self.plots.entropy, name="saturation-more"
            ),
            name="saturation-explorer",
            sizing_mode="stretch_width",
        )

    def update(self, data: dict) -> None:
        """Write one state's view data into the existing models."""
        self.plots.update(data)
        self.readout.text = data["readout"]
        self.row.text = data["row"]

    def show_inputs(self, inputs: dict) -> None:
        """Make every control show these inputs (the buttons only move for one of WIDTHS)."""
        active = width_button(inputs["d"])
        if active is not None:
            self.d_buttons.active = active
        for name, box in self.boxes.items():
            box.value = inputs[name]
