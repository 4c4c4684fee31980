"""What one attention layer costs at long context, explored live.

`CostSettings` holds a model shape, a context length and a GPU size, and
the `LongContextCost` they give; it knows nothing about Panel or Bokeh.
Pure functions turn the cost into a readout table and plot columns.
`CostView` shows them: one log-log Bokeh figure of FLOPs against T (built
once, sources and ranges rewritten in place), the table, and Panel widgets.

The defaults are the chapter's case (Llama 3.1 8B at 128,000 tokens: d = 128,
32 query heads, 2 bytes a number), so its 1.6 × 10¹⁰, ≈ 33 GB and ≈ 1 TB are
on screen at first load.  A refused change keeps the last good state and
says why in `message`.
"""

from __future__ import annotations

import html
import logging
import math

import panel as pn
import param
from bokeh.models import ColumnDataSource, HoverTool, Label, Legend, Range1d, Span
from bokeh.plotting import figure

from core.attention import AttentionError
from core.cost import (
    GPU_MEMORY_GB,
    PRESETS,
    CostInputs,
    LongContextCost,
    as_finite,
    human_bytes,
    long_context_cost,
    projection_flops,
    qk_flops,
    sci,
)
from core.notes import gpu_note

log = logging.getLogger(__name__)

DEFAULT_PRESET = "Llama 3.1 8B (128k)"
CUSTOM = "custom"
MAX_T = 1_000_000
SHAPE = ("T", "d", "heads", "kv_heads", "layers", "C", "element_bytes")
INPUTS = (*SHAPE, "gpu_gb")
T_STOPS = (1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000, 1_000_000)

QK = "#D55E00"  # vermillion
PROJ = "#0072B2"  # blue
PROJ_MHA = "#56B4E9"  # sky blue, dashed
NOW = "#E69F00"
LINE_POINTS = 41


def check_gpu(value) -> float:
    x = as_finite("GPU memory", value)
    low, high = GPU_MEMORY_GB
    if not low <= x <= high:
        raise AttentionError(f"GPU memory is {x:g} GB; GPUs on sale today hold {low} to {high} GB")
    return x


def check_shape(values: dict) -> CostInputs:
    """A CostInputs from the shape fields, with the explorer's own limit on T."""
    T = values["T"]
    if isinstance(T, (int, float)) and not isinstance(T, bool) and math.isfinite(T) and T > MAX_T:
        raise AttentionError(f"T is {T:,}; this explorer goes up to {MAX_T:,} tokens")
    return CostInputs(**{name: values[name] for name in SHAPE})


def preset_name(shape: CostInputs) -> str:
    """The preset this shape is, or CUSTOM."""
    for name, preset in PRESETS.items():
        if preset == shape:
            return name
    return CUSTOM


class CostSettings(param.Parameterized):
    """A model shape, a context length, a GPU, and the cost figures they give; no GUI."""

    preset = param.Selector(default=DEFAULT_PRESET, objects=[*PRESETS, CUSTOM])
    T = param.Integer(default=PRESETS[DEFAULT_PRESET].T, doc="Context length in tokens")
    d = param.Integer(default=PRESETS[DEFAULT_PRESET].d, doc="Head width")
    heads = param.Integer(default=PRESETS[DEFAULT_PRESET].heads, doc="Query heads per layer")
    kv_heads = param.Integer(default=PRESETS[DEFAULT_PRESET].kv_heads, doc="Key/value heads per layer")
    layers = param.Integer(default=PRESETS[DEFAULT_PRESET].layers)
    C = param.Integer(default=PRESETS[DEFAULT_PRESET].C, doc="Model width")
    element_bytes = param.Number(default=PRESETS[DEFAULT_PRESET].element_bytes, doc="Bytes per stored number")
    gpu_gb = param.Number(default=GPU_MEMORY_GB[0], doc="One GPU's memory in GB")

    cost = param.Parameter(default=None, constant=True, doc="The LongContextCost of the current inputs")
    message = param.String(default="", doc="Why the last change was refused, or ''")

    def __init__(self, **params):
        named = params.get("preset")
        if named in PRESETS:  # CostSettings(preset=...) starts from that preset; other fields override it
            preset = PRESETS[named]
            params = {**{field: getattr(preset, field) for field in SHAPE}, **params}
        super().__init__(**params)
        values = {name: getattr(self, name) for name in INPUTS}
        check_gpu(values["gpu_gb"])
        shape = check_shape(values)
        with param.edit_constant(self):
            self.param.update(cost=long_context_cost(shape), preset=preset_name(shape))

    def apply(self, **changes) -> bool:
        """Change any inputs together; refuse (and say why) if the core does.  True when taken."""
        unknown = set(changes) - set(INPUTS)
        if unknown:
            raise TypeError(f"not an input of CostSettings: {', '.join(sorted(unknown))}")
        values = {name: changes.get(name, getattr(self, name)) for name in INPUTS}
        try:
            gpu = check_gpu(values["gpu_gb"])
            shape = check_shape(values)
            cost = long_context_cost(shape)
        except (AttentionError, ValueError, TypeError) as exc:
            self.message = str(exc)
            return False
        fields = {name: getattr(shape, name) for name in SHAPE}
        with param.parameterized.batch_call_watchers(self), param.edit_constant(self):
            self.param.update(**fields, gpu_gb=gpu, preset=preset_name(shape), message="", cost=cost)
        return True

    def load(self, name: str) -> bool:
        """Take a preset's shape (the GPU stays as it is)."""
        if name not in PRESETS:
            self.message = f"there is no preset called '{name}'; try one of {', '.join(PRESETS)}"
            return False
        preset = PRESETS[name]
        return self.apply(**{field: getattr(preset, field) for field in SHAPE})


# --- pure: cost → words and columns ------------------------------------------


def approx_bytes(b: float) -> str:
    return f"≈ {human_bytes(b)}"


def times(x: float) -> str:
    """A ratio for the readout: '13×', '2.5×', '0.4×'."""
    if x >= 10:
        return f"{x:,.0f}×"
    return f"{x:.2g}×" if x >= 0.01 else "< 0.01×"


def readout_rows(cost: LongContextCost, gpu_gb: float) -> list[tuple[str, str, str]]:
    """(what, how much, compared with) rows for the readout table, in plain text.

    A row with an empty value and note is a section heading.
    """
    x = cost.inputs
    H, G, L = x.heads, x.kv_heads, x.layers
    gpu = gpu_gb * 1e9
    gpu_name = f"one GPU ({gpu_gb:g} GB)"
    group = f"{G} K/V heads" if x.grouped else "no sharing"
    qk_over = cost.qk_flops_per_layer / cost.projection_flops_per_layer
    rows = [
        ("The score matrix, if it were stored", "", ""),
        ("entries, per head per layer", f"T² = {sci(cost.score_entries_per_head)}", ""),
        (
            f"bytes, per head per layer ({x.element_bytes:g} B each)",
            f"{sci(cost.score_bytes_per_head)} {approx_bytes(cost.score_bytes_per_head)}",
            f"{times(cost.score_bytes_per_head / gpu)} {gpu_name}",
        ),
        (
            f"per layer (× {H} heads)",
            approx_bytes(cost.score_bytes_per_layer),
            f"{times(cost.score_bytes_per_layer / gpu)} {gpu_name}",
        ),
        (
            f"whole model (× {L} layers)",
            approx_bytes(cost.score_bytes_per_model),
            f"{times(cost.score_bytes_per_model / gpu)} {gpu_name}",
        ),
        ("One forward pass over T tokens (FLOPs)", "", ""),
        (
            "Q·Kᵀ, one layer (2·T²·d × heads)",
            sci(cost.qk_flops_per_layer),
            f"{times(qk_over)} the projections",
        ),
        ("Q·Kᵀ, whole model", sci(cost.qk_flops_per_model), ""),
        (f"Q/K/V projections, one layer ({group})", sci(cost.projection_flops_per_layer), ""),
    ]
    if x.grouped:
        rows.append(
            (
                f"Q/K/V projections, one layer (no sharing, {H} K/V heads)",
                sci(cost.projection_flops_per_layer_mha),
                "",
            )
        )
    rows.append(("Q/K/V projections, whole model", sci(cost.projection_flops_per_model), ""))
    cross = f"T ≈ {cost.crossover_T:,.0f}"
    cross_note = f"no sharing: T ≈ {cost.crossover_T_mha:,.0f} (3·C)" if x.grouped else "3·C"
    rows += [
        ("Q·Kᵀ overtakes the projections at", cross, cross_note),
        ("Generating token T+1 with a KV cache", "", ""),
        (
            "attention FLOPs for token T+1, whole model",
            sci(cost.decode_flops_per_model),
            "grows like T, not T²",
        ),
        (
            f"KV cache, whole model ({group})",
            approx_bytes(cost.kv_cache_bytes_per_model),
            f"{times(cost.kv_cache_bytes_per_model / gpu)} {gpu_name}",
        ),
    ]
    if x.grouped:
        rows.append(
            (
                "KV cache without sharing",
                approx_bytes(cost.kv_cache_bytes_per_model_mha),
                f"{times(cost.kv_cache_bytes_per_model_mha / gpu)} {gpu_name}",
            )
        )
    return rows


def readout_html(cost: LongContextCost, gpu_gb: float) -> str:
    """The readout table; every cell is escaped."""
    e = html.escape
    body = []
    for what, value, note in readout_rows(cost, gpu_gb):
        if not value and not note:
            body.append(f"<tr class='section'><th colspan='3'>{e(what)}</th></tr>")
        else:
            body.append(f"<tr><td>{e(what)}</td><td class='num'>{e(value)}</td><td>{e(note)}</td></tr>")
    x = cost.inputs
    head = (
        f"T = {x.T:,} tokens · d = {x.d} · {x.heads} query heads · {x.kv_heads} K/V heads · "
        f"{x.layers} layers · C = {x.C:,}"
    )
    foot = f"<p class='foot'>{e(gpu_note(cost))}</p>"
    table = f"<table>{''.join(body)}</table>"
    return f"<div class='cost-readout'><p class='shape'>{e(head)}</p>{table}{foot}</div>"


READOUT_CSS = """
.cost-readout { font-size: 15px; }
.cost-readout .shape { margin: 0 0 6px 0; color: #333; }
.cost-readout .foot { margin: 8px 0 0 0; color: #555; font-size: 13px; }
.cost-readout table { border-collapse: collapse; width: 100%; }
.cost-readout td { padding: 3px 8px; border-bottom: 1px solid #e4e4e4; vertical-align: top; }
.cost-readout td.num { font-weight: bold; white-space: nowrap; }
.cost-readout tr.section th { text-align: left; padding: 8px 8px 2px 8px; color: #555;
  font-size: 13px; letter-spacing: 0.04em; font-weight: 600; }
"""


def frame(cost: LongContextCost) -> tuple[float, float]:
    """The T range of the figure: 100 … 2,000,000, widened to show T and both crossovers."""
    x = cost.inputs
    low = min(100.0, x.T / 2, cost.crossover_T / 2)
    high = max(2e6, x.T * 2, cost.crossover_T_mha * 2)
    return low, high


def line_columns(cost: LongContextCost, low: float, high: float) -> dict[str, list]:
    """FLOPs per layer along T for Q·Kᵀ and the projections (with and without K/V sharing)."""
    x = cost.inputs
    a, b = math.log10(low), math.log10(high)
    ts = [10 ** (a + (b - a) * k / (LINE_POINTS - 1)) for k in range(LINE_POINTS)]
    qk = [float(qk_flops(1, x.d)) * t * t * x.heads for t in ts]
    proj = [float(projection_flops(1, x.C, x.d, x.heads, x.kv_heads)) * t for t in ts]
    mha = [float(projection_flops(1, x.C, x.d, x.heads, x.heads)) * t for t in ts]
    return {
        "T": ts,
        "qk": qk,
        "proj": proj,
        "proj_mha": mha,
        "T_text": [f"{t:,.0f}" for t in ts],
        "qk_text": [sci(v) for v in qk],
        "proj_text": [sci(v) for v in proj],
        "proj_mha_text": [sci(v) for v in mha],
    }


def point_columns(cost: LongContextCost) -> dict[str, list]:
    """The marked points: the crossovers, and where T is now on each line."""
    x = cost.inputs
    per_t_qk = float(qk_flops(1, x.d)) * x.heads
    rows = [
        ("crossover", cost.crossover_T, per_t_qk * cost.crossover_T**2, QK),
        ("now: Q·Kᵀ", x.T, float(cost.qk_flops_per_layer), QK),
        ("now: projections", x.T, float(cost.projection_flops_per_layer), PROJ),
    ]
    if x.grouped:
        rows.insert(
            1, ("crossover, no sharing", cost.crossover_T_mha, per_t_qk * cost.crossover_T_mha**2, PROJ_MHA)
        )
    return {
        "what": [r[0] for r in rows],
        "T": [float(r[1]) for r in rows],
        "flops": [r[2] for r in rows],
        "colour": [r[3] for r in rows],
        "T_text": [f"{r[1]:,.0f}" for r in rows],
        "flops_text": [sci(r[2]) for r in rows],
        "marker": ["diamond" if r[0].startswith("crossover") else "circle" for r in rows],
    }


def cross_text(cost: LongContextCost) -> str:
    return f"crossover T ≈ {cost.crossover_T:,.0f}"


def y_frame(lines: dict) -> tuple[float, float]:
    values = lines["qk"] + lines["proj"] + lines["proj_mha"]
    return min(values) / 3, max(values) * 3


class CostFigure:
    """FLOPs per layer against T, log-log; built once."""

    def __init__(self, cost: LongContextCost, *, width: int = 620, height: int = 430):
        low, high = frame(cost)
        self.lines = ColumnDataSource(line_columns(cost, low, high), name="cost-lines")
        self.points = ColumnDataSource(point_columns(cost), name="cost-points")
        y0, y1 = y_frame(self.lines.data)
        self.figure = fig = figure(
            title="FLOPs per layer, one forward pass over T tokens",
            width=width,
            height=height,
            x_axis_type="log",
            y_axis_type="log",
            x_range=Range1d(low, high),
            y_range=Range1d(y0, y1),
            tools="save",
            toolbar_location="right",
        )
        fig.toolbar.logo = None
        fig.title.text_font_size = "15px"
        fig.axis.axis_label_text_font_size = "14px"
        fig.axis.axis_label_text_font_style = "normal"
        fig.axis.major_label_text_font_size = "13px"
        fig.xaxis.axis_label = "context length T (tokens)"
        fig.yaxis.axis_label = "FLOPs per layer"
        fig.min_border_right = 24
        qk = fig.line("T", "qk", source=self.lines, line_color=QK, line_width=3)
        proj = fig.line("T", "proj", source=self.lines, line_color=PROJ, line_width=3)
        mha = fig.line(
            "T", "proj_mha", source=self.lines, line_color=PROJ_MHA, line_width=3, line_dash="dashed"
        )
        self.now = Span(
            location=cost.inputs.T, dimension="height", line_color=NOW, line_width=3, line_alpha=0.7
        )
        self.cross = Span(
            location=cost.crossover_T,
            dimension="height",
            line_color="#777777",
            line_width=1,
            line_dash="dotted",
        )
        fig.add_layout(self.now)
        fig.add_layout(self.cross)
        self.now_label = Label(
            x=cost.inputs.T, y=0, y_units="screen", x_offset=6, y_offset=8,
            text=f"T = {cost.inputs.T:,}", text_font_size="13px", text_color="#8a5a00",
        )  # fmt: skip
        fig.add_layout(self.now_label)
        self.cross_label = Label(
            x=cost.crossover_T, y=0, y_units="screen", x_offset=-6, y_offset=30, text_align="right",
            text=cross_text(cost), text_font_size="13px", text_color="#444444",
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
                ("projections without K/V sharing", [mha]),
            ],
            location="top_left",
            label_text_font_size="13px",
            background_fill_alpha=0.85,
        )
        fig.add_layout(legend, "center")
        self.mha_item = legend.items[2]
        self.mha_item.visible = cost.inputs.grouped
        fig.add_tools(
            HoverTool(
                renderers=[qk, proj, mha],
                tooltips=[
                    ("T", "@T_text"),
                    ("Q·Kᵀ", "@qk_text"),
                    ("projections", "@proj_text"),
                    ("no sharing", "@proj_mha_text"),
                ],
                mode="vline",
                line_policy="nearest",
            )
        )
        fig.add_tools(
            HoverTool(renderers=[pts], tooltips=[("", "@what"), ("T", "@T_text"), ("FLOPs", "@flops_text")])
        )
        self._mha = mha

    def update(self, cost: LongContextCost) -> None:
        low, high = frame(cost)
        xr = self.figure.x_range
        if (low, high) != (xr.start, xr.end):
            xr.update(start=low, end=high)
        self.lines.data = line_columns(cost, low, high)
        self.points.data = point_columns(cost)
        y0, y1 = y_frame(self.lines.data)
        self.figure.y_range.update(start=y0, end=y1)
        self.now.location = cost.inputs.T
        self.now_label.update(x=cost.inputs.T, text=f"T = {cost.inputs.T:,}")
        self.cross.location = cost.crossover_T
        self.cross_label.update(x=cost.crossover_T, text=cross_text(cost))
        self._mha.visible = cost.inputs.grouped
        self.mha_item.visible = cost.inputs.grouped


def message_html(text: str) -> str:
    if not text:
        return ""
    return (
        "<div class='explorer-message' style='background:#fff3cd;border:1px solid #e0b84d;"
        f"padding:6px 10px;border-radius:4px;color:#5c4400'>{html.escape(text)}</div>"
    )


# --- the view ----------------------------------------------------------------


class CostView(pn.viewable.Viewer):
    """The long-context cost explorer.  `CostView()` or `CostView(settings=CostSettings(T=8_000))`."""

    settings = param.ClassSelector(class_=CostSettings)

    def __init__(self, **params):
        params.setdefault("settings", CostSettings())
        super().__init__(**params)
        self._build()

    def _build(self) -> None:
        """Make the figures and widgets and start listening to the settings."""
        s = self.settings
        self.plot = CostFigure(s.cost)
        self._syncing = False
        w = 110
        self.preset_select = pn.widgets.Select(
            label="model", options=[*PRESETS, CUSTOM], value=s.preset, width=250
        )
        self.T_slider = pn.widgets.DiscreteSlider(
            label="context T (tokens)",
            options={f"{t:,}": t for t in T_STOPS},
            value=s.T if s.T in T_STOPS else T_STOPS[0],
            width=250,
        )
        self.inputs = {
            "T": pn.widgets.IntInput(label="T exactly", value=s.T, width=w),
            "d": pn.widgets.IntInput(label="head width d", value=s.d, width=w),
            "heads": pn.widgets.IntInput(label="query heads", value=s.heads, width=w),
            "kv_heads": pn.widgets.IntInput(label="K/V heads", value=s.kv_heads, width=w),
            "layers": pn.widgets.IntInput(label="layers", value=s.layers, width=w),
            "C": pn.widgets.IntInput(label="model width C", value=s.C, width=w),
            "element_bytes": pn.widgets.FloatInput(
                label="bytes per number", value=s.element_bytes, step=0.5, width=w
            ),
        }
        self.gpu_slider = pn.widgets.IntSlider(
            label="one GPU's memory (GB)", start=GPU_MEMORY_GB[0], end=GPU_MEMORY_GB[1], step=1,
            value=int(s.gpu_gb), width=250,
        )  # fmt: skip
        self.readout = pn.pane.HTML(readout_html(s.cost, s.gpu_gb), stylesheets=[READOUT_CSS], width=900)
        self.message = pn.pane.HTML("", width=250)

        self.preset_select.param.watch(
            lambda e: self._guard(lambda: e.new != CUSTOM and s.load(e.new)), "value"
        )
        self.T_slider.param.watch(lambda e: self._guard(lambda: s.apply(T=e.new)), "value")
        for field, widget in self.inputs.items():
            widget.param.watch(lambda e, field=field: self._guard(lambda: self._set(field, e.new)), "value")
        self.gpu_slider.param.watch(lambda e: self._guard(lambda: s.apply(gpu_gb=e.new)), "value")
        s.param.watch(self._redraw, ["cost", "gpu_gb"])
        s.param.watch(self._show_message, ["message"])

        i = self.inputs
        controls = pn.Column(
            self.preset_select,
            self.T_slider,
            pn.Row(i["T"], i["d"]),
            pn.Row(i["heads"], i["kv_heads"]),
            pn.Row(i["layers"], i["C"]),
            i["element_bytes"],
            self.gpu_slider,
            self.message,
            width=270,
        )
        self._layout = pn.Column(
            pn.pane.HTML(
                "<h2 style='margin:4px 0'>What a long context costs</h2>"
                "<p style='font-size:15px;margin:2px 0'>Every token scores every other, so the score "
                "matrix and Q·Kᵀ grow like T². Slide T past the crossover and watch Q·Kᵀ leave the "
                "projections behind.</p>",
                sizing_mode="stretch_width",
            ),
            pn.Row(controls, self.plot.figure),
            self.readout,
            name="cost-explorer",
        )

    def _set(self, field: str, value) -> None:
        s = self.settings
        if value is None:
            s.message = f"{field} needs a number; kept {getattr(s, field):,}."
            self._sync_widgets()
        elif not s.apply(**{field: value}):
            self._sync_widgets()

    def _guard(self, action) -> None:
        if self._syncing:
            return
        try:
            action()
        except Exception as exc:  # a bug must not end the session: say so, keep the last state
            log.exception("cost control failed")
            self.settings.message = f"That change could not be applied ({type(exc).__name__})."

    def _sync_widgets(self) -> None:
        s = self.settings
        self._syncing = True
        try:
            self.preset_select.value = s.preset
            if s.T in T_STOPS:
                self.T_slider.value = s.T
            for field, widget in self.inputs.items():
                widget.value = getattr(s, field)
            self.gpu_slider.value = int(round(s.gpu_gb))
        finally:
            self._syncing = False

    def _redraw(self, *events) -> None:
        s = self.settings
        with pn.io.hold():
            self.plot.update(s.cost)
            self.readout.object = readout_html(s.cost, s.gpu_gb)
            self._sync_widgets()

    def _show_message(self, event) -> None:
        self.message.object = message_html(event.new)

    def __panel__(self):
        return self._layout
