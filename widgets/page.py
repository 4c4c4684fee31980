"""Every Bokeh model of the explorer, made once and laid out.

The served app (widgets/explorer.py) and the static export (app/export.py)
both build this same page; they differ only in who computes the next view
data: Python on the server, or static/attention.js in the browser (which a
served page also uses to draw a student's own moves before the server answers).
"""

from __future__ import annotations

from functools import cached_property

from bokeh.layouts import column, row

from widgets.a11y import A11yNames, accessible_names
from widgets.blend_plot import BlendPlot
from widgets.controls import (
    PER_ROW,
    SLIDER_HIGH,
    SLIDER_LABEL_CHARS,
    SLIDER_LOW,
    SLIDER_STEP,
    SLIDERS_ROW_PX,
    THREE_A_ROW_UP_TO,
    HeadControls,
)
from widgets.editor import GRID_WIDTH
from widgets.figure_text import HEATMAPS
from widgets.lesson_data import lesson_of
from widgets.lesson_view import LessonPanel
from widgets.matrix_plot import CELL_OUTLINE, MatrixPlot
from widgets.row_marks import RowMarks
from widgets.style import text_panel, wrapping_row
from widgets.viewdata import view_data

# The figures: a name, a title and a subtitle, a colour scheme, and the matrices drawn side by side in it
# (widgets/figure_text.py HEATMAPS, which also sizes the figures for their titles).
MATRIX_FIGURES = tuple(
    (name, titles, kind, HEATMAPS[name].blocks)
    for name, titles, kind in (
        ("weights", ("Weights", "how each query divides its attention"), "weights"),
        ("scores", ("Scores Q·Kᵀ", "as computed, before the mask"), "scores"),
        ("scaled", ("Scores after ÷√d, ÷τ", "and the mask"), "scores"),
        ("qkv", ("Q = X·W_Q,  K = X·W_K,  V = X·W_V", ""), "scores"),
    )
)
# The steps panel takes the width it is given, up to a comfortable line length.
READOUT_WIDTH = {"sizing_mode": "stretch_width", "max_width": 640}
SQUARE = ("weights", "scores", "scaled")


def readout_html(data: dict) -> str:
    """The worked steps for the chosen query, then its row's checks."""
    return data["steps"] + data["checks"]


def ref(model) -> dict:
    """A model as the page's JavaScript finds it (by id)."""
    return {"id": model.id}


def dim_labels(d: int) -> list[str]:
    return [str(k) for k in range(d)]


# The constants of the Python views that a page drawing a state itself repeats when it re-lays out a figure
# or a slider (static/explorer_page.js painter, in the export and the served page), with figure_models.
VIEW = {
    "slider": {
        "low": SLIDER_LOW,
        "high": SLIDER_HIGH,
        "step": SLIDER_STEP,
        "row_px": SLIDERS_ROW_PX,
        "label_chars": SLIDER_LABEL_CHARS,
        "per_row": PER_ROW,
        "three_a_row_up_to": THREE_A_ROW_UP_TO,
    },
    "cell_outline": CELL_OUTLINE,
    "grid_width": GRID_WIDTH,
}


class HeadPage:
    """The explorer's figures, text panels and controls, bound to nothing yet."""

    def __init__(self, data: dict, labels, X, *, d: int, title: str = "", **options):
        self.controls = HeadControls(labels, X, **options)
        self.plots: dict[str, MatrixPlot] = {}
        for name, (heading, subheading), kind, blocks in MATRIX_FIGURES:
            square = name in SQUARE
            self.plots[name] = MatrixPlot(
                heading,
                {block: data["cells"][block] for block in blocks},
                data["limits"][blocks[0]],  # Q, K and V share one colour range
                labels,
                labels if square else dim_labels(d),
                kind=kind,
                layout=data["layout"][name],
                name=name,
                outline=data["outline"] if square else None,
                col_axis="key" if square else "dimension",
                row_axis="query" if square else "token",
                subtitle=subheading,
                picture=square,
            )
        # what a token slider's move did to each row of the weights (rows that cannot see the future)
        self.row_marks = RowMarks(self.plots["weights"].figure, data["moved"])
        self.blend = BlendPlot(data["blend"], data["bounds"], data["layout"]["blend"])
        self.lesson = LessonPanel(data.get("lesson"))
        self.title = text_panel(title, name="title")
        # The steps and the row's checks share one Div: each Div whose text changes costs the browser a
        # re-render and a layout pass on every move.
        self.steps = text_panel(readout_html(data), name="steps", **READOUT_WIDTH)
        m = {k: v.figure for k, v in self.plots.items()}
        # Separate document roots, arranged by the page template: a change of a
        # text panel makes Bokeh re-lay out its whole root, which costs ~40 ms
        # for the full page but a few ms for a root of two Divs.
        self.roots = {
            "controls": self.controls.layout,
            # The weights, the blend and the token sliders wrap onto as many lines as the container
            # needs, in that order: the figures a slider moves are always just above or beside it.
            "top": wrapping_row(m["weights"], self.blend.figure, self.controls.vectors, name="top"),
            # the walk and the questions, above the steps (a root of its own: its text changes by itself)
            "lesson": self.lesson.layout,
            "readout": column(
                text_panel("<h2>The steps for the chosen query</h2>", **READOUT_WIDTH),
                self.steps,
                name="readout",
                sizing_mode="stretch_width",
            ),
            "bottom": wrapping_row(m["scores"], m["scaled"], m["qkv"], name="bottom"),
        }
        # What static/a11y.js names the controls (widgets/a11y.py): a root of its own wherever the page is
        # shown (app/served_page.py, app/export.py), not part of the layout.
        self.a11y = A11yNames(names=accessible_names(labels, C=len(X[0]), d=d))

    def figure_models(self) -> dict:
        """By id, the models a page's JavaScript writes when it draws a state itself (static/explorer_page.js
        painter): every figure's source, colour mapper, axes and ranges, the weights' row marks, the steps,
        the token sliders' box."""
        models = self._figure_models()
        marks = self.row_marks
        models["plots"]["weights"]["marks"] = {
            "unchanged": ref(marks.unchanged), "changed": ref(marks.changed),
        }
        return models

    def _figure_models(self) -> dict:
        return {
            "plots": {
                name: {
                    "name": name,
                    "blocks": m.names,
                    "gap": m.GAP,
                    "square": name in SQUARE,
                    **{
                        key: ref(model)
                        for key, model in {
                            "figure": m.figure,
                            "source": m.source,
                            "outline": m.outline,
                            "numbers": m.numbers,
                            "no_numbers": m.no_numbers,
                            "cells_glyph": m.cells.glyph,
                            "mapper": m.mapper,
                            "ink": m.ink,
                            "xaxis": m.figure.xaxis[0],
                            "yaxis": m.figure.yaxis[0],
                            "note": m.note,
                            "x_range": m.figure.x_range,
                            "y_range": m.figure.y_range,
                            "spotlight": m.spotlight,
                        }.items()
                    },
                }
                for name, m in self.plots.items()
            },
            "blend": {
                key: ref(model)
                for key, model in {
                    "values": self.blend.values,
                    "hull": self.blend.hull,
                    "output": self.blend.output,
                    "links": self.blend.links,
                    "leaders": self.blend.leaders,
                    "note": self.blend.note,
                    "figure": self.blend.figure,
                    "x_range": self.blend.figure.x_range,
                    "y_range": self.blend.figure.y_range,
                    "xaxis": self.blend.figure.xaxis[0],
                    "yaxis": self.blend.figure.yaxis[0],
                    "glow": self.blend.glow,
                    "ring": self.blend.ring,
                }.items()
            },
            "steps": ref(self.steps),
            "lesson": {name: ref(model) for name, model in self.lesson.models().items()},
            "tokens": ref(self.controls.tokens.layout),
        }

    @classmethod
    def for_state(cls, state, title: str = "") -> HeadPage:
        """The page showing a HeadState as it is now (every option, the query, the preset, the lesson)."""
        s = state
        page = cls(
            view_data(s.head, s.query, s.labels, s.dims, lesson=lesson_of(s)),
            s.labels,
            s.X,
            d=s.head.d,
            title=title,
            query=s.query,
            options=s.options,
            preset=s.preset,
        )
        page.lesson.sync(s, asked=True)
        return page

    @cached_property
    def layout(self):
        """Everything in one Bokeh column, for a notebook cell (slower to re-lay out than separate roots):
        the title, the figures with the token sliders, the other controls beside the steps, the rest."""
        r = self.roots
        return column(
            self.title,
            r["top"],
            row(
                r["controls"],
                column(r["lesson"], r["readout"], sizing_mode="stretch_width"),
                sizing_mode="stretch_width",
                styles={"gap": "18px"},
            ),
            r["bottom"],
            name="head-page",
            sizing_mode="stretch_width",
        )

    def update(
        self, data: dict, labels, *, d: int, reshape: bool = False, C: int | None = None, figures: bool = True
    ) -> None:
        """Write one state's view data into the existing models (and, on `reshape`, the controls' names);
        `figures=False`: all but the figures' sources (the page has drawn them: widgets/explorer.py)."""
        if reshape and C is not None:
            self.a11y.names = accessible_names(labels, C=C, d=d)
        lesson = data.get("lesson")  # (not in a view made without the lesson's part: a benchmark's)
        if reshape:  # every figure's size first, then the data (static/explorer_page.js paint says why)
            for name, plot in self.plots.items():
                plot.lay_out(data["layout"][name])
        for name, plot in self.plots.items() if figures else ():
            square = name in SQUARE
            plot.update(
                {block: data["cells"][block] for block in plot.names},
                data["limits"][plot.names[0]],
                labels,
                labels if square else dim_labels(d),
                layout=data["layout"][name],
                outline=data["outline"] if square else None,
                reshape=reshape,
                spotlight={block: lesson["spotlight"][block] for block in plot.names} if lesson else None,
            )
        if figures:
            self.row_marks.update(data["moved"])
            self.blend.update(data["blend"], data["bounds"], data["layout"]["blend"], lesson=lesson)
        self.steps.text = readout_html(data)
        if lesson:
            self.lesson.show(lesson)
