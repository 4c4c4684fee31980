"""Every Bokeh model of the long-context cost explorer, made once.

The served view (widgets/cost_view.py) and the static export
(app/export_explorers.py) build this same page; they differ only in who
computes the next view data: Python on the server, or static/cost.js in the
browser.  `update` writes one state's view data (widgets/cost_viewdata.py)
into the existing models; `show_inputs` makes the controls show the inputs.
"""

from __future__ import annotations

from bokeh.layouts import column, row
from bokeh.models import (
    ColumnDataSource,
    CustomJSTickFormatter,
    HoverTool,
    InlineStyleSheet,
    Label,
    Legend,
    NumericInput,
    Range1d,
    Select,
    Slider,
    Span,
)
from bokeh.plotting import figure

from core.cost import GPU_MEMORY_GB, PRESETS
from widgets.cost_state import CUSTOM
from widgets.cost_viewdata import PROJ, PROJ_MHA, QK
from widgets.matrix_plot import titled
from widgets.style import fluid_figure, text_panel, wrapping_row

NOW = "#E69F00"
# The context lengths the T slider stops at (any other T is typed into "T exactly").
T_STOPS = (1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000, 1_000_000)
GPU_STEP = 1  # whole GB, so every part in GPU_PARTS_GB (141 GB among them) can be picked

INTRO = (
    "<h2 style='margin:4px 0'>What a long context costs</h2>"
    "<p style='font-size:15px;margin:2px 0'>Every token scores every other, so the score "
    "matrix and Q·Kᵀ grow like T². Slide T past the crossover and watch Q·Kᵀ leave the "
    "projections behind.</p>"
)
# The number boxes: input name, label, whole numbers only?
NUMBER_BOXES = (
    ("T", "T exactly", True),
    ("d", "head width d", True),
    ("heads", "query heads", True),
    ("kv_heads", "K/V heads", True),
    ("layers", "layers", True),
    ("C", "model width C", True),
    ("element_bytes", "bytes per number", False),
    ("tile", "tile size B", True),
)
READOUT_CSS = """
.cost-readout { font-size: 15px; }
.cost-readout .shape { margin: 0 0 6px 0; color: #333; }
.cost-readout .foot { margin: 8px 0 0 0; color: #555; font-size: 13px; }
.cost-readout table { border-collapse: collapse; width: 100%; }
.cost-readout td { padding: 3px 8px; border-bottom: 1px solid #e4e4e4; vertical-align: top; }
.cost-readout td.num { font-weight: bold; white-space: nowrap; }
.cost-readout tr.section th { text-align: left; padding: 8px 8px 2px 8px; color: #555;
  font-size: 13px; letter-spacing: 0.04em; font-weight: 600; }
/* a phone: each row's words on a line of their own, its number and note under them */
@media (max-width: 560px) {
  .cost-readout tr:not(.section) { display: grid; grid-template-columns: auto 1fr; }
  .cost-readout tr:not(.section) td:first-child { grid-column: 1 / -1; border-bottom: none;
    padding-bottom: 0; }
}
"""


LABEL_GROUND = {"background_fill_color": "white", "background_fill_alpha": 0.85, "padding": 2}


def t_stop(T: int) -> int | None:
    """The T slider's position for T, or None when T is not one of its stops."""
    return T_STOPS.index(T) if T in T_STOPS else None


class CostFigure:
    """FLOPs per layer against T, log-log; built once, then only its sources and ranges change."""

    def __init__(self, data: dict, *, width: int = 620, height: int = 500):
        self.lines = ColumnDataSource(data["lines"], name="cost-lines")
        self.points = ColumnDataSource(data["points"], name="cost-points")
        self.figure = fig = figure(
            **fluid_figure(width, height),
            x_axis_type="log",
            y_axis_type="log",
            x_range=Range1d(*data["x_range"]),
            y_range=Range1d(*data["y_range"]),
            tools="save",
            toolbar_location="right",
            name="cost-figure",
        )
        fig.toolbar.logo = None
        titled(fig, "FLOPs per layer", "one forward pass over T tokens")  # two short lines fit a phone
        fig.axis.axis_label_text_font_size = "14px"
        fig.axis.axis_label_text_font_style = "normal"
        fig.axis.major_label_text_font_size = "13px"
        fig.xaxis.axis_label = "context length T (tokens)"
        fig.yaxis.axis_label = "FLOPs per layer"
        fig.min_border_right = 24
        qk = fig.line("T", "qk", source=self.lines, line_color=QK, line_width=3)
        proj = fig.line("T", "proj", source=self.lines, line_color=PROJ, line_width=3)
        # exercise 2 counts the two above; with the blend A·V and the output projection counted too:
        dotdash = {"line_width": 2, "line_dash": "dotdash"}
        attn = fig.line("T", "attn", source=self.lines, line_color=QK, **dotdash)
        proj_all = fig.line("T", "proj_all", source=self.lines, line_color=PROJ, **dotdash)
        self.mha = fig.line(
            "T", "proj_mha", source=self.lines, line_color=PROJ_MHA, line_width=3, line_dash="dashed"
        )
        self.now = Span(
            location=data["now"], dimension="height", line_color=NOW, line_width=3, line_alpha=0.7
        )
        self.cross = Span(
            location=data["cross"], dimension="height", line_color="#777777", line_width=1, line_dash="dotted"
        )
        fig.add_layout(self.now)
        fig.add_layout(self.cross)
        # Each label is centred on its line, on a white ground: beside the line it ran off a phone's frame.
        self.now_label = Label(
            x=data["now"], y=0, y_units="screen", y_offset=8, text_align="center",
            text=data["now_text"], text_font_size="13px", text_color="#8a5a00", **LABEL_GROUND,
        )  # fmt: skip
        fig.add_layout(self.now_label)
        self.cross_label = Label(
            x=data["cross"], y=0, y_units="screen", y_offset=32, text_align="center",
            text=data["cross_text"], text_font_size="13px", text_color="#444444", **LABEL_GROUND,
        )  # fmt: skip
        fig.add_layout(self.cross_label)
        pts = fig.scatter(
            "T", "flops", source=self.points, size=13, marker="marker", fill_color="colour",
            line_color="#222222", line_width=1.5,
        )  # fmt: skip
        legend = Legend(
            items=[
                ("Q·Kᵀ (grows like T²)", [qk]),
                ("Q/K/V projections (grows like T)", [proj]),
                ("projections without K/V sharing", [self.mha]),
                ("Q·Kᵀ + A·V", [attn]),
                ("Q, K, V and output projections", [proj_all]),
            ],
            label_text_font_size="13px",
            border_line_color=None,
            margin=0,
        )
        fig.add_layout(legend, "below")  # under the frame: inside it, on a phone it hid the lines
        self.mha_item = legend.items[2]
        self.mha.visible = self.mha_item.visible = data["grouped"]
        fig.add_tools(
            HoverTool(
                renderers=[qk, proj, self.mha, attn, proj_all],
                tooltips=[
                    ("T", "@T_text"),
                    ("Q·Kᵀ", "@qk_text"),
                    ("projections", "@proj_text"),
                    ("no sharing", "@proj_mha_text"),
                    ("Q·Kᵀ + A·V", "@attn_text"),
                    ("all four projections", "@proj_all_text"),
                ],
                mode="vline",
                line_policy="nearest",
            )
        )
        fig.add_tools(
            HoverTool(renderers=[pts], tooltips=[("", "@what"), ("T", "@T_text"), ("FLOPs", "@flops_text")])
        )

    def update(self, data: dict) -> None:
        xr, yr = self.figure.x_range, self.figure.y_range
        if [xr.start, xr.end] != data["x_range"]:
            xr.update(start=data["x_range"][0], end=data["x_range"][1])
        self.lines.data = data["lines"]
        self.points.data = data["points"]
        yr.update(start=data["y_range"][0], end=data["y_range"][1])
        self.now.location = data["now"]
        self.now_label.update(x=data["now"], text=data["now_text"])
        self.cross.location = data["cross"]
        self.cross_label.update(x=data["cross"], text=data["cross_text"])
        self.mha.visible = self.mha_item.visible = data["grouped"]


class CostPage:
    """The cost explorer's figure, readout and controls, bound to nothing yet."""

    def __init__(self, data: dict, inputs: dict, preset: str):
        self.plot = CostFigure(data)
        self.intro = text_panel(INTRO, name="cost-intro", sizing_mode="stretch_width")
        self.readout = text_panel(
            data["readout"], name="cost-readout", sizing_mode="stretch_width", max_width=900
        )
        self.readout.stylesheets = [*self.readout.stylesheets, InlineStyleSheet(css=READOUT_CSS)]
        self.message = text_panel("", name="cost-message", width=250)
        self.preset = Select(
            title="model", options=[*PRESETS, CUSTOM], value=preset, width=250, name="cost-preset"
        )
        stop = t_stop(inputs["T"])
        self.T_slider = Slider(
            title="context T (tokens)", start=0, end=len(T_STOPS) - 1, step=1,
            value=0 if stop is None else stop, width=250, name="cost-T-slider",
            format=CustomJSTickFormatter(
                args={"stops": list(T_STOPS)}, code="return stops[Math.round(tick)].toLocaleString('en-US');"
            ),
        )  # fmt: skip
        self.boxes = {
            name: NumericInput(
                title=label,
                value=inputs[name],
                mode="int" if whole else "float",
                width=110,
                name=f"cost-{name}",
            )
            for name, label, whole in NUMBER_BOXES
        }
        self.gpu_slider = Slider(
            title="one GPU's memory (GB)", start=GPU_MEMORY_GB[0], end=GPU_MEMORY_GB[1], step=GPU_STEP,
            value=round(inputs["gpu_gb"]), width=250, name="cost-gpu",
        )  # fmt: skip
        b = self.boxes
        controls = column(
            self.preset,
            self.T_slider,
            row(b["T"], b["d"]),
            row(b["heads"], b["kv_heads"]),
            row(b["layers"], b["C"]),
            row(b["element_bytes"], b["tile"]),
            self.gpu_slider,
            self.message,
            width=270,
        )
        # The controls and the figure wrap when the page is narrower than both (a phone, a book's column).
        self.layout = column(
            self.intro,
            wrapping_row(controls, self.plot.figure, name="cost-top"),
            self.readout,
            name="cost-explorer",
            sizing_mode="stretch_width",
        )

    def update(self, data: dict) -> None:
        """Write one state's view data into the existing models."""
        self.plot.update(data)
        self.readout.text = data["readout"]

    def show_inputs(self, inputs: dict, preset: str) -> None:
        """Make every control show these inputs (the T slider only moves for one of its stops)."""
        self.preset.value = preset
        stop = t_stop(inputs["T"])
        if stop is not None:
            self.T_slider.value = stop
        for name, box in self.boxes.items():
            box.value = inputs[name]
        self.gpu_slider.value = round(inputs["gpu_gb"])
