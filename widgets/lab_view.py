"""The training lab: heads trained by core/train.py, shown with the main head's figures.

Pick a run, slide through its snapshots and watch the head's pattern form on a probe sequence; the loss
curves set each ablation against the full head it changes; the text says what the chapter claims and
what the run showed, in numbers computed by core.train from the run's own data. Every figure is built
once; a change of run, snapshot or query rewrites the sources in place (widgets/lab_data.py computes what
they show).
"""

from __future__ import annotations

import html
import logging

import panel as pn
import param
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, InlineStyleSheet, PrintfTickFormatter, Range1d, Select, Slider
from bokeh.plotting import figure
from panel.models import HTML

from widgets.lab_data import LAB_INTRO, curves, describe, lab_view_data, load_lab
from widgets.matrix_plot import CELL_OUTLINE, MatrixPlot, side_by_side
from widgets.style import CSS, drop_grid, short_label, text_panel

log = logging.getLogger(__name__)

INTRO = "<h3>Training lab</h3>" + LAB_INTRO
# The loss lines: source name, legend label, colour, dash.
LINES = (
    ("train", "this run: training loss", "#1f77b4", "solid"),
    ("eval", "this run: held-out loss", "#1f77b4", "dashed"),
    ("full train", "full head: training loss", "#7f7f7f", "solid"),
    ("full eval", "full head: held-out loss", "#7f7f7f", "dashed"),
    ("honest", "generated one token at a time", "#d62728", "dotted"),
    ("uniform", "uniform guess, ln V", "#2ca02c", "dotdash"),
)

# Why a run switch or a snapshot move costs the browser little (bench/RESULTS-lab.md, bench/profile_lab.py):
# in BokehJS a Div whose text changes, a model whose `visible` flips and a figure whose axis or colour bar
# changes size each re-lay out the whole tab (every figure measured and repainted, 20-100 ms each on this
# machine). So the lab's changing text goes in Panel's HTML model (its new text only replaces the HTML
# inside a box of fixed size), a figure a run does not have is hidden by CSS in the space it keeps, and
# tick labels are monospaced and padded to one width, so a new run's axes keep their size.
TICK_FONT = "monospace"
TICK_CHARS = 2  # the longest axis label: 24 positions or stream components, letters for tokens
BAR_FORMAT = "%+.1f"  # W's colour bar (±limit): "-2.5" and "+1.0" are one width (BokehJS has no "% f")


def html_panel(text: str, **kw) -> HTML:
    """Text whose changes re-lay out nothing: Panel's HTML model, styled like the explorer's text panels."""
    return HTML(text=html.escape(text), stylesheets=[InlineStyleSheet(css=CSS)], **kw)


def set_html(panel: HTML, text: str) -> None:
    panel.text = html.escape(text)  # Panel's HTML view reads its text HTML-escaped


def shown(fig) -> bool:
    return fig.styles.get("visibility") != "hidden"


def show(fig, on: bool) -> None:
    """Hide or show a figure by CSS: it keeps its space, so nothing around it is laid out again."""
    if shown(fig) != on:
        fig.styles = {**fig.styles, "visibility": "visible" if on else "hidden"}


class LabMatrix(MatrixPlot):
    """A MatrixPlot whose numbers are only hidden, never moved to another source, and whose axes and colour
    bar keep their size from run to run.

    The main head swaps the numbers' source to spare BokehJS 64 × 64 hidden texts; here matrices are at
    most 24 × 8, and each swap makes Bokeh walk the document's whole model graph again (~0.15 s a run
    switch in the server, measured) as W_Q's numbers come and go between runs of different widths.
    """

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.figure.axis.major_label_text_font = TICK_FONT
        for bar in self.figure.right:
            if hasattr(bar, "color_mapper"):
                bar.major_label_text_font = TICK_FONT
                if self.kind == "scores":  # weights keep 0 to 1 (only the raw run's differ)
                    bar.formatter = PrintfTickFormatter(format=BAR_FORMAT)

    def _set_axes(self, rows, cols) -> None:
        self._labels = (rows, cols)
        # Row labels padded on the left (8 or 24 stream components); column labels are one character in
        # every run (letters, or up to 8 head components), and in monospace one character is one width.
        super()._set_axes([short_label(str(r)).rjust(TICK_CHARS) for r in rows], cols)

    def update(self, blocks, limits, rows, cols, *, outline=None, reshape=False) -> None:
        """As MatrixPlot.update; a new run whose matrices have the previous one's shape (every probe has 12
        tokens) keeps the cells where they are and sends only new numbers and labels."""
        if reshape and self._shape_of(rows, cols) == self._shape_of(*self._labels):
            self._set_axes(rows, cols)
            self.set_limits(limits)
            cells = side_by_side(blocks, len(cols), self.GAP)
            self.source.data.update({c: cells[c] for c in ("value", "text", "row", "col")})
            if outline is not None and outline != self.outline.data:
                self.outline.data = outline
        else:
            super().update(blocks, limits, rows, cols, outline=outline, reshape=reshape)

    @staticmethod
    def _shape_of(rows, cols) -> tuple[int, int]:
        return len(rows), len(cols)

    def show_numbers(self, show: bool) -> None:
        if self.numbers.visible != show or self.numbers.data_source is not self.source:
            self.numbers.update(visible=show, data_source=self.source)
            self.cells.glyph.line_color = CELL_OUTLINE if show else None


def snapshot_title(step: int, k: int, n: int) -> str:
    return f"Snapshot {k + 1} of {n}: step {step}"


def query_options(labels) -> list[tuple[str, str]]:
    return [(str(i), f"{i}: {t}") for i, t in enumerate(labels)]


class LabState(param.Parameterized):
    """The student's choices in the lab."""

    run = param.String(default="previous-token")
    snapshot = param.Integer(default=-1, doc="index into the run's snapshots; -1 for the last")
    query = param.Integer(default=-1, doc="the probe position whose steps are shown; -1 for the last")


class LabView(pn.viewable.Viewer):
    """The lab's figures and controls (Bokeh models, built once)."""

    state = param.ClassSelector(class_=LabState)
    updates = param.Integer(default=0)

    def __init__(self, **params):
        params.setdefault("state", LabState())
        super().__init__(**params)
        lab = load_lab()
        self.runs, self.index = lab["runs"], lab["index"]
        s = self.state
        run = self.runs[s.run]
        n = len(run["snapshots"])
        k = s.snapshot % n
        i = s.query % len(run["probe"])
        data = lab_view_data(run, k, i)
        labels = data["labels"]
        self.run_select = Select(
            title="Run", value=s.run, options=list(self.index["runs"]), name="lab-run", width=220
        )
        self.snap_slider = Slider(
            start=0,
            end=n - 1,
            step=1,
            value=k,
            title="Snapshot (drag to watch the pattern form)",
            name="lab-snapshot",
            width=320,
            show_value=False,
        )
        self.query_select = Select(
            title="Query token", value=str(i), options=query_options(labels), name="lab-query", width=140
        )
        self.weights = LabMatrix(
            "The learned head's weights on the probe",
            {"weights": data["weights"]},
            data["weights_limits"],
            labels,
            labels,
            kind="weights",
            name="lab-weights",
            outline=data["outline"],
            max_px=560,
        )
        self.layer0 = LabMatrix(
            "Layer 0's weights on the probe",
            {"weights": data["layer0"] or data["weights"]},
            [0.0, 1.0],
            labels,
            labels,
            kind="weights",
            name="lab-layer0",
            max_px=560,
        )
        show(self.layer0.figure, data["layer0"] is not None)
        W = data["W"] or {"W_Q": data["weights"], "W_K": data["weights"]}
        rows, cols = self._w_axes(data)
        self.w = LabMatrix(
            "Learned W_Q and W_K (rows: stream, columns: head)",
            W,
            data["W_limits"],
            rows,
            cols,
            kind="scores",
            name="lab-w",
            row_axis="stream",
            col_axis="head",
            max_px=420,
        )
        show(self.w.figure, data["W"] is not None)
        # A fixed size, so new text never changes the layout around it.
        self.steps = html_panel(
            self._steps_html(data, k, n), name="lab-steps", width=560, height=640, styles={"overflow": "auto"}
        )
        self.text = html_panel(
            describe(run, self.index), name="lab-text", width=900, height=230, styles={"overflow": "auto"}
        )
        self.curve_sources = {
            name: ColumnDataSource(cols_, name=f"lab-{name}")
            for name, cols_ in curves(run, self.runs).items()
        }
        self.curves = self._curves_figure(run)
        self._shape = (run["name"],)
        self._syncing = False
        self.run_select.on_change("value", self._guard(lambda new: self._set(run=new, snapshot=-1, query=-1)))
        self.snap_slider.on_change("value", self._guard(lambda new: self._set(snapshot=int(new))))
        self.query_select.on_change("value", self._guard(lambda new: self._set(query=int(new))))
        self.layout = column(
            text_panel(INTRO, width=900),
            row(self.run_select, self.snap_slider, self.query_select),
            self.text,
            row(self.weights.figure, self.layer0.figure),
            row(
                column(text_panel("<h3>The steps for the chosen query</h3>", width=560), self.steps),
                self.w.figure,
            ),
            self.curves,
            name="lab",
        )

    @staticmethod
    def _steps_html(data, k: int, n: int) -> str:
        """The snapshot's step, then the chosen query's steps (the slider's own title stays the same)."""
        return f'<p class="lab-snapshot">{snapshot_title(data["step"], k, n)}</p>' + data["steps"]

    @staticmethod
    def _w_axes(data):
        if data["W_shape"] is None:
            return [str(c) for c in range(len(data["labels"]))], [str(c) for c in range(len(data["labels"]))]
        C, d = data["W_shape"]
        return [str(c) for c in range(C)], [str(c) for c in range(d)]

    def _curves_figure(self, run):
        fig = figure(
            title="Loss during training",
            width=900,
            height=320,
            x_axis_label="step",
            y_axis_label="cross-entropy (nats)",
            tools="save",
            name="lab-curves",
            x_range=Range1d(0, run["steps"]),
            y_range=Range1d(0, self._y_top(run)),
        )
        fig.toolbar.logo = None
        drop_grid(fig)
        fig.axis.major_label_text_font = TICK_FONT  # loss and step labels keep one width across runs
        fig.yaxis.formatter = PrintfTickFormatter(format="%4.1f")  # "12.9", the honest loss, and " 3.0"
        for name, label, colour, dash in LINES:
            fig.line(
                "x",
                "y",
                source=self.curve_sources[name],
                color=colour,
                line_dash=dash,
                line_width=2,
                legend_label=label,
            )
        fig.legend.location = "top_right"
        fig.legend.label_text_font_size = "11px"
        return fig

    def _y_top(self, run) -> float:
        ys = [y for src in self.curve_sources.values() for y in src.data["y"] if y is not None]
        return 1.1 * max(ys, default=1.0)

    def _guard(self, action):
        def callback(attr, old, new):
            if self._syncing:  # our own write into a control
                return
            try:
                action(new)
            except Exception:  # a bug must not take the session down
                log.exception("lab callback failed")

        return callback

    def _set(self, **changes) -> None:
        self.state.param.update(**changes)
        self.redraw()

    def redraw(self) -> None:
        s = self.state
        run = self.runs[s.run]
        n = len(run["snapshots"])
        k, i = s.snapshot % n, s.query % len(run["probe"])
        data = lab_view_data(run, k, i)
        labels = data["labels"]
        reshape = self._shape != (run["name"],)
        with pn.io.hold():
            self.weights.update(
                {"weights": data["weights"]},
                data["weights_limits"],
                labels,
                labels,
                outline=data["outline"],
                reshape=reshape,
            )
            if data["layer0"] is not None:
                self.layer0.update({"weights": data["layer0"]}, [0.0, 1.0], labels, labels, reshape=reshape)
            show(self.layer0.figure, data["layer0"] is not None)
            if data["W"] is not None:
                rows, cols = self._w_axes(data)
                self.w.update(data["W"], data["W_limits"], rows, cols, reshape=reshape)
            show(self.w.figure, data["W"] is not None)
            set_html(self.steps, self._steps_html(data, k, n))
            if reshape:
                set_html(self.text, describe(run, self.index))
                for name, cols_ in curves(run, self.runs).items():
                    self.curve_sources[name].data = cols_
                self.curves.x_range.update(start=0, end=run["steps"])
                self.curves.y_range.update(start=0, end=self._y_top(run))
                self._syncing = True
                try:
                    self.snap_slider.update(end=n - 1, value=k)
                    self.query_select.update(options=query_options(labels), value=str(i))
                finally:
                    self._syncing = False
        self._shape = (run["name"],)
        self.updates += 1

    def __panel__(self):
        return pn.pane.Bokeh(self.layout)
