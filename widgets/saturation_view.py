"""Why the scores are divided by √d, measured on a seeded random head.

`SaturationSettings` holds the choices (seed, keys per query, trials, the
chosen width d) and the measurements they give; it knows nothing about
Panel or Bokeh.  Pure functions turn the measurements into column data and
a readout.  `SaturationView` shows them: three Bokeh figures built once,
whose sources are rewritten in place, and a few Panel widgets.

A refused change (a width outside 2..512, a negative seed, a request too
big to compute quickly) leaves everything as it was and says why in
`message`.
"""

from __future__ import annotations

import functools
import html
import logging
import math

import panel as pn
import param
from bokeh.models import ColumnDataSource, FixedTicker, HoverTool, Legend, Range1d, Span
from bokeh.plotting import figure

from core.attention import AttentionError
from core.cost import as_count
from core.saturation import (
    DEFAULT_T,
    DEFAULT_WIDTHS,
    SaturationCurve,
    SaturationPoint,
    as_seed,
    saturation_curve,
    saturation_point,
)

log = logging.getLogger(__name__)

WIDTHS = DEFAULT_WIDTHS  # 2, 4, …, 512: the sweep drawn in every figure
MIN_D, MAX_D = WIDTHS[0], WIDTHS[-1]
MIN_T, MAX_T = 2, 1024
MAX_TRIALS = 4096
DEFAULT_TRIALS = 128
# Random numbers one sweep may draw, trials · (T + 1) · Σd: about a second of work.
SWEEP_BUDGET = 60_000_000

# Okabe–Ito colours, told apart by the common colour-blindnesses; raw and
# scaled also differ in dash and marker, so the figures survive greyscale.
RAW = "#B84A00"  # dark vermillion: softmax of q·k (5.2 : 1 on white, so it can colour text)
SCALED = "#0072B2"  # blue: softmax of q·k/√d
REFERENCE = "#555555"
CHOSEN = "#E69F00"

INPUTS = ("d", "seed", "T", "trials")


@functools.lru_cache(maxsize=32)
def _sweep(seed: int, T: int, trials: int) -> SaturationCurve:
    return saturation_curve(WIDTHS, seed=seed, T=T, trials=trials)


@functools.lru_cache(maxsize=256)
def _point(d: int, seed: int, T: int, trials: int) -> SaturationPoint:
    return saturation_point(d, seed=seed, T=T, trials=trials)


def check_inputs(d, seed, T, trials) -> tuple[int, int, int, int]:
    """The four inputs as ints, or AttentionError naming the one that cannot be used."""
    d = as_count("d", d, MAX_D)
    if d < MIN_D:
        raise AttentionError(f"d is {d}; pick a head width from {MIN_D} to {MAX_D}")
    seed = as_seed(seed)
    T = as_count("T", T, MAX_T)
    if T < MIN_T:
        raise AttentionError(f"T is {T}; a softmax over one key is always 1, so use {MIN_T} to {MAX_T} keys")
    trials = as_count("trials", trials, MAX_TRIALS)
    draws = trials * (T + 1) * sum(WIDTHS)
    if draws > SWEEP_BUDGET:
        raise AttentionError(
            f"trials × (T + 1) = {trials * (T + 1):,} is too much to redraw quickly "
            f"(at most {SWEEP_BUDGET // sum(WIDTHS):,}); use fewer trials or fewer keys"
        )
    return d, seed, T, trials


class SaturationSettings(param.Parameterized):
    """The random head's settings and what it measures; no GUI."""

    d = param.Integer(default=128, bounds=(MIN_D, MAX_D), doc="The head width marked in the figures")
    seed = param.Integer(default=0, bounds=(0, None), doc="Seed for the random queries and keys")
    T = param.Integer(default=DEFAULT_T, bounds=(MIN_T, MAX_T), doc="Keys each query is scored against")
    trials = param.Integer(default=DEFAULT_TRIALS, bounds=(1, MAX_TRIALS), doc="Queries averaged over")

    curve = param.Parameter(default=None, constant=True, doc="The sweep over d = 2 … 512")
    point = param.Parameter(default=None, constant=True, doc="The measurement at the chosen d")
    message = param.String(default="", doc="Why the last change was refused, or ''")

    def __init__(self, **params):
        super().__init__(**params)
        d, seed, T, trials = check_inputs(self.d, self.seed, self.T, self.trials)
        with param.edit_constant(self):
            self.param.update(curve=_sweep(seed, T, trials), point=_point(d, seed, T, trials))

    def apply(self, **changes) -> bool:
        """Change any inputs together; refuse (and say why) if they cannot be used.

        Returns True when the change was taken.
        """
        unknown = set(changes) - set(INPUTS)
        if unknown:
            raise TypeError(f"not an input of SaturationSettings: {', '.join(sorted(unknown))}")
        values = {name: changes.get(name, getattr(self, name)) for name in INPUTS}
        try:
            d, seed, T, trials = check_inputs(**values)
            curve = _sweep(seed, T, trials)
            point = _point(d, seed, T, trials)
        except (AttentionError, ValueError, TypeError) as exc:
            self.message = str(exc)
            return False
        with param.parameterized.batch_call_watchers(self), param.edit_constant(self):
            self.param.update(d=d, seed=seed, T=T, trials=trials, message="")
            if curve is not self.curve:
                self.curve = curve
            self.point = point
        return True


# --- pure: measurements → column data and words ------------------------------


def curve_columns(curve: SaturationCurve) -> dict[str, list]:
    """One row per width, with the numbers also as text for the hover."""
    data = curve.columns()
    data["uniform_weight"] = [1 / curve.T] * len(data["d"])
    return data


def reference_columns(T: int) -> dict[str, list]:
    """The √d line (dense, so it is straight on log axes) and the uniform-softmax levels."""
    xs = [2 ** (k / 4) for k in range(4, 37)]  # 2 … 512
    return {
        "d": xs,
        "sqrt_d": [math.sqrt(x) for x in xs],
        "uniform_weight": [1 / T] * len(xs),
        "uniform_entropy": [math.log(T)] * len(xs),
    }


def marker_columns(p: SaturationPoint) -> dict[str, list]:
    """The chosen width: one point per line in every figure."""
    return {
        "d": [p.d, p.d],
        "spread": [p.score_std, p.scaled_score_std],
        "max_weight": [p.max_weight_raw, p.max_weight_scaled],
        "entropy": [p.entropy_raw, p.entropy_scaled],
        "which": ["raw q·k", "q·k ÷ √d"],
    }


def entropy_range(T: int) -> tuple[float, float]:
    return (-0.05 * math.log(T), 1.08 * math.log(T))


def readout_html(p: SaturationPoint) -> str:
    """What to look for at the chosen width, in a few sentences (all values escaped)."""
    e = html.escape
    uniform_w = 1 / p.T
    verdict = (
        "nearly all of it on one key"
        if p.max_weight_raw >= 0.75
        else "a large share on one key"
        if p.max_weight_raw >= 0.3
        else "still spread out"
    )
    lines = [
        f"<b>d = {p.d}</b>: raw scores q·k spread about <b>{p.score_std:.1f}</b> "
        f"(√d = {p.sqrt_d:.1f}); after ÷√d about <b>{p.scaled_score_std:.2f}</b>.",
        f"<span style='color:{RAW}'>Without ÷√d</span> the biggest weight averages "
        f"<b>{p.max_weight_raw:.2f}</b> ({e(verdict)}); entropy {p.entropy_raw:.2f} nats.",
        f"<span style='color:{SCALED}'>With ÷√d</span> the biggest weight is "
        f"<b>{p.max_weight_scaled:.2f}</b> and the entropy {p.entropy_scaled:.2f} "
        f"of a possible {p.uniform_entropy:.2f} (all {p.T} keys equal, each {uniform_w:.3f}).",
        "Watch: as d grows the vermillion lines run to one-hot (weight → 1, entropy → 0) "
        "while the blue ones stay put. That flatness is what the division buys.",
    ]
    foot = f"Averages over {p.trials} random queries, each against {p.T} random keys; seed {p.seed}."
    body = "".join(f"<p>{line}</p>" for line in lines)
    return f"<div class='saturation-readout'>{body}<p class='foot'>{e(foot)}</p></div>"


def message_html(text: str) -> str:
    if not text:
        return ""
    return (
        "<div class='explorer-message' style='background:#fff3cd;border:1px solid #e0b84d;"
        f"padding:6px 10px;border-radius:4px;color:#5c4400'>{html.escape(text)}</div>"
    )


# --- the figures -------------------------------------------------------------


def _style(fig) -> None:
    fig.toolbar.logo = None
    fig.title.text_font_size = "15px"
    fig.axis.axis_label_text_font_size = "14px"
    fig.axis.axis_label_text_font_style = "normal"
    fig.axis.major_label_text_font_size = "13px"
    fig.xaxis.ticker = FixedTicker(ticks=list(WIDTHS))
    fig.xaxis.axis_label = "head width d"
    fig.min_border_right = 20


def _legend(fig, items) -> None:
    legend = Legend(items=items, location="top_left", label_text_font_size="13px", background_fill_alpha=0.85)
    legend.click_policy = "hide"
    fig.add_layout(legend, "center")


class SaturationFigures:
    """The three figures, their sources, and the span marking the chosen d."""

    def __init__(
        self, curve: SaturationCurve, point: SaturationPoint, *, width: int = 470, height: int = 330
    ):
        self.curve = ColumnDataSource(curve_columns(curve), name="saturation-curve")
        self.reference = ColumnDataSource(reference_columns(curve.T), name="saturation-reference")
        self.marker = ColumnDataSource(marker_columns(point), name="saturation-marker")
        x_range = Range1d(1.6, 640)  # shared: the three figures pan together
        self.chosen = []
        hover = [("d", "@d"), ("raw q·k", "@{field_raw}{{0.000}}"), ("÷√d", "@{field_scaled}{{0.000}}")]

        def tooltips(raw: str, scaled: str):
            return [(k, v.format(field_raw=raw, field_scaled=scaled)) for k, v in hover]

        def make(title: str, y_label: str, y_range, y_axis_type: str):
            fig = figure(
                title=title,
                width=width,
                height=height,
                x_axis_type="log",
                y_axis_type=y_axis_type,
                x_range=x_range,
                y_range=y_range,
                tools="save",
                toolbar_location="right",
            )
            _style(fig)
            fig.yaxis.axis_label = y_label
            span = Span(location=point.d, dimension="height", line_color=CHOSEN, line_width=3, line_alpha=0.6)
            fig.add_layout(span)
            self.chosen.append(span)
            return fig

        # 1. spread of the scores
        self.spread = fig = make(
            "Spread of the scores grows like √d", "spread (std) of scores", Range1d(0.6, 40), "log"
        )
        fig.yaxis.ticker = FixedTicker(ticks=[1, 2, 4, 8, 16, 32])
        ref = fig.line(
            "d", "sqrt_d", source=self.reference, line_color=REFERENCE, line_dash="dashed", line_width=2
        )
        raw = fig.scatter("d", "score_std", source=self.curve, size=10, color=RAW, marker="triangle")
        scaled = fig.scatter(
            "d", "scaled_score_std", source=self.curve, size=9, color=SCALED, marker="circle"
        )
        fig.scatter(
            "d", "spread", source=self.marker, size=18, fill_alpha=0, line_color="#222222", line_width=2
        )
        _legend(fig, [("raw q·k", [raw]), ("q·k ÷ √d", [scaled]), ("√d", [ref])])
        fig.add_tools(HoverTool(renderers=[raw, scaled], tooltips=tooltips("score_std", "scaled_score_std")))

        # 2. largest weight
        self.weight = fig = make(
            "Largest softmax weight (1 = one key gets it all)",
            "mean largest weight",
            Range1d(0, 1.04),
            "linear",
        )
        uni = fig.line(
            "d",
            "uniform_weight",
            source=self.reference,
            line_color=REFERENCE,
            line_dash="dotted",
            line_width=2,
        )
        rl = fig.line(
            "d", "max_weight_raw", source=self.curve, line_color=RAW, line_width=3, line_dash="dashed"
        )
        rp = fig.scatter("d", "max_weight_raw", source=self.curve, size=10, color=RAW, marker="triangle")
        sl = fig.line("d", "max_weight_scaled", source=self.curve, line_color=SCALED, line_width=3)
        sp = fig.scatter("d", "max_weight_scaled", source=self.curve, size=9, color=SCALED)
        fig.scatter(
            "d", "max_weight", source=self.marker, size=18, fill_alpha=0, line_color="#222222", line_width=2
        )
        _legend(fig, [("without ÷√d", [rl, rp]), ("with ÷√d", [sl, sp]), ("all keys equal (1/T)", [uni])])
        fig.add_tools(HoverTool(renderers=[rp, sp], tooltips=tooltips("max_weight_raw", "max_weight_scaled")))

        # 3. entropy
        self.entropy = fig = make(
            "Entropy of the weights (0 = one-hot)",
            "mean entropy (nats)",
            Range1d(*entropy_range(curve.T)),
            "linear",
        )
        uni = fig.line(
            "d",
            "uniform_entropy",
            source=self.reference,
            line_color=REFERENCE,
            line_dash="dotted",
            line_width=2,
        )
        rl = fig.line("d", "entropy_raw", source=self.curve, line_color=RAW, line_width=3, line_dash="dashed")
        rp = fig.scatter("d", "entropy_raw", source=self.curve, size=10, color=RAW, marker="triangle")
        sl = fig.line("d", "entropy_scaled", source=self.curve, line_color=SCALED, line_width=3)
        sp = fig.scatter("d", "entropy_scaled", source=self.curve, size=9, color=SCALED)
        fig.scatter(
            "d", "entropy", source=self.marker, size=18, fill_alpha=0, line_color="#222222", line_width=2
        )
        _legend(fig, [("without ÷√d", [rl, rp]), ("with ÷√d", [sl, sp]), ("all keys equal (ln T)", [uni])])
        fig.legend.location = "center_right"
        fig.add_tools(HoverTool(renderers=[rp, sp], tooltips=tooltips("entropy_raw", "entropy_scaled")))

    @property
    def figures(self):
        return (self.spread, self.weight, self.entropy)

    def update(self, curve: SaturationCurve | None, point: SaturationPoint) -> None:
        """New numbers into the existing sources; ranges change in place only when T does."""
        if curve is not None:
            self.curve.data = curve_columns(curve)
            if self.reference.data["uniform_weight"][0] != 1 / curve.T:
                self.reference.data = reference_columns(curve.T)
                low, high = entropy_range(curve.T)
                self.entropy.y_range.update(start=low, end=high)
        self.marker.data = marker_columns(point)
        for span in self.chosen:
            span.location = point.d


# --- the view ----------------------------------------------------------------


class SaturationView(pn.viewable.Viewer):
    """The saturation explorer.  `SaturationView()` or `SaturationView(settings=SaturationSettings(d=64))`."""

    settings = param.ClassSelector(class_=SaturationSettings)

    def __init__(self, **params):
        params.setdefault("settings", SaturationSettings())
        super().__init__(**params)
        self._build()

    def _build(self) -> None:
        """Make the figures and widgets and start listening to the settings."""
        s = self.settings
        self.plots = SaturationFigures(s.curve, s.point)
        self._syncing = False
        self.d_buttons = pn.widgets.RadioButtonGroup(
            label="head width d",
            options=list(WIDTHS),
            value=s.d if s.d in WIDTHS else WIDTHS[0],
            color="primary",
            variant="outline",
            width=430,
        )
        self.seed_input = pn.widgets.IntInput(label="seed", value=s.seed, width=100)
        self.T_input = pn.widgets.IntInput(label=f"keys per query T ({MIN_T}–{MAX_T})", value=s.T, width=150)
        self.trials_input = pn.widgets.IntInput(label="trials (queries)", value=s.trials, width=120)
        self.readout = pn.pane.HTML(readout_html(s.point), width=430, styles={"font-size": "15px"})
        self.message = pn.pane.HTML("", width=430)
        for widget, field in (
            (self.d_buttons, "d"),
            (self.seed_input, "seed"),
            (self.T_input, "T"),
            (self.trials_input, "trials"),
        ):
            widget.param.watch(lambda event, field=field: self._changed(field, event.new), "value")
        s.param.watch(self._redraw, ["curve", "point"])
        s.param.watch(self._show_message, ["message"])
        self._layout = pn.Column(
            pn.pane.HTML(
                "<h2 style='margin:4px 0'>Why divide by √d?</h2>"
                "<p style='font-size:15px;margin:2px 0'>Random queries and keys with spread 1, as an "
                "untrained head has. Pick a head width and compare the softmax with and without the "
                "division.</p>",
                sizing_mode="stretch_width",
            ),
            pn.Row(
                pn.Column(
                    pn.pane.HTML("<b style='font-size:15px'>head width d</b>", margin=(5, 10, 0, 10)),
                    self.d_buttons,
                    pn.Row(self.seed_input, self.T_input, self.trials_input),
                    self.message,
                    self.readout,
                    width=460,
                ),
                self.plots.spread,
            ),
            pn.Row(self.plots.weight, self.plots.entropy),
            name="saturation-explorer",
        )

    def _changed(self, field: str, value) -> None:
        if self._syncing:
            return
        try:
            if value is None:
                self.settings.message = f"{field} needs a number; kept {getattr(self.settings, field)}."
                self._sync_widgets()
            elif not self.settings.apply(**{field: value}):
                self._sync_widgets()
        except Exception as exc:  # a bug must not end the session: say so, keep the last state
            log.exception("saturation control failed")
            self.settings.message = f"That change could not be applied ({type(exc).__name__})."

    def _sync_widgets(self) -> None:
        s = self.settings
        self._syncing = True
        try:
            if s.d in WIDTHS:
                self.d_buttons.value = s.d
            self.seed_input.value = s.seed
            self.T_input.value = s.T
            self.trials_input.value = s.trials
        finally:
            self._syncing = False

    def _redraw(self, *events) -> None:
        s = self.settings
        changed = {e.name for e in events}
        with pn.io.hold():
            self.plots.update(s.curve if "curve" in changed else None, s.point)
            self.readout.object = readout_html(s.point)
            self._sync_widgets()

    def _show_message(self, event) -> None:
        self.message.object = message_html(event.new)

    def __panel__(self):
        return self._layout
