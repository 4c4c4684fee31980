"""The benchmark's baseline: the same explorer on Panel's defaults.

Same HeadState, same HeadPage figures, same one-pass redraw inside
`pn.io.hold()`; only the controls differ: Panel widgets (pn.widgets.FloatSlider,
Checkbox, Select, RadioButtonGroup) bound to the state with param watchers, so
every browser change goes through Panel's 50 ms debounce (Syncable._debounce).
Serve with `panel serve bench/baseline_app.py`; the token sliders' Bokeh models
carry titles like "it[0]" (find them by title from JavaScript).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import panel as pn  # noqa: E402
from bokeh.layouts import column, row  # noqa: E402

from core.attention import NORMALISERS  # noqa: E402
from widgets.page import HeadPage  # noqa: E402
from widgets.state import HeadState  # noqa: E402
from widgets.viewdata import view_data  # noqa: E402


class BaselineExplorer:
    def __init__(self, state: HeadState | None = None):
        self.state = s = state or HeadState()
        self.updates = 0
        self.page = page = HeadPage.for_state(s)
        self._syncing = False
        self.sliders = [
            [
                pn.widgets.FloatSlider(name=f"{label}[{c}]", start=-2.0, end=2.0, step=0.05,
                                       value=float(v), width=82)
                for c, v in enumerate(vector)
            ]
            for label, vector in zip(s.labels, s.X)
        ]
        for t, line in enumerate(self.sliders):
            for c, slider in enumerate(line):
                slider.param.watch(lambda e, t=t, c=c: self._from_control(s.set_x, t, c, e.new), "value")
        self.query = pn.widgets.Select(
            name="Query token", options={label: i for i, label in enumerate(s.labels)}, value=s.query
        )
        self.scaling = pn.widgets.Checkbox(name="Divide scores by √d", value=s.scaling)
        self.causal = pn.widgets.Checkbox(name="Causal mask (hide later tokens)", value=s.causal)
        self.normaliser = pn.widgets.RadioButtonGroup(options=list(NORMALISERS), value=s.normaliser)
        self.query.param.watch(lambda e: self._from_control(s.apply, query=e.new), "value")
        self.scaling.param.watch(lambda e: self._from_control(s.apply, scaling=e.new), "value")
        self.causal.param.watch(lambda e: self._from_control(s.apply, causal=e.new), "value")
        self.normaliser.param.watch(lambda e: self._from_control(s.apply, normaliser=e.new), "value")
        s.param.watch(self._redraw, ["head", "query"])
        m = {k: v.figure for k, v in page.plots.items()}
        figures = column(
            row(m["weights"], page.blend.figure),
            page.steps,
            row(m["scores"], m["scaled"]),
            m["qkv"],
        )
        controls = pn.Column(
            self.query, self.scaling, self.causal, self.normaliser,
            *(pn.Row(*line) for line in self.sliders), width=300,
        )
        self.layout = pn.Row(controls, pn.pane.Bokeh(figures))

    def _from_control(self, action, *args, **kwargs):
        if not self._syncing:
            action(*args, **kwargs)

    def _redraw(self, *events):
        s = self.state
        data = view_data(s.head, s.query, s.labels)
        with pn.io.hold():
            self.page.update(data, s.labels, d=s.head.d)
            self._syncing = True
            try:
                for line, vector in zip(self.sliders, s.X):
                    for slider, v in zip(line, vector):
                        slider.value = float(v)
            finally:
                self._syncing = False
        self.updates += 1


pn.extension()
BaselineExplorer().layout.servable(title="One attention head (Panel widgets baseline)")
