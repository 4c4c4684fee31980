"""The served explorer: controls → HeadState → one view-data pass → sources.

Each control's Bokeh callback changes the state; the state computes the
head once; one watcher turns it into view data and writes every source in
place inside a single held document change, so the browser receives one
message per move and no figure is ever rebuilt.
"""

from __future__ import annotations

import html
import logging

import panel as pn
import param

from core.attention import NORMALISERS
from widgets.controls import CUSTOM
from widgets.page import HeadPage
from widgets.state import HeadState
from widgets.viewdata import view_data

log = logging.getLogger(__name__)


class HeadExplorer(pn.viewable.Viewer):
    """One student's explorer: its own state and its own Bokeh models."""

    state = param.ClassSelector(class_=HeadState)
    updates = param.Integer(default=0, doc="How many times the views were redrawn (for tests and benchmarks)")

    def __init__(self, **params):
        params.setdefault("state", HeadState())
        super().__init__(**params)
        s = self.state
        self._shape = self._shape_of()
        self.page = HeadPage(
            view_data(s.head, s.query, s.labels),
            s.labels,
            s.X,
            d=s.head.d,
            query=s.query,
            scaling=s.scaling,
            causal=s.causal,
            tied_qk=s.tied_qk,
            normaliser=s.normaliser,
            x_scale=s.x_scale,
            preset=s.preset,
            title="<h1>One attention head</h1><p>Drag a token's vector, pick the query token, and watch "
            "how it divides its attention and where its output lands.</p>",
        )
        self._syncing = False  # True while the state writes into the controls
        self._wire_controls()
        s.param.watch(self._redraw, ["head", "query"])
        s.param.watch(self._show_message, ["message"])

    # -- controls → state ----------------------------------------------------

    def _wire_controls(self) -> None:
        c = self.page.controls
        c.query.on_change("value", self._guard(lambda new: self.state.apply(query=int(new))))
        c.scaling.on_change("active", self._guard(lambda new: self.state.apply(scaling=bool(new))))
        c.causal.on_change("active", self._guard(lambda new: self.state.apply(causal=bool(new))))
        c.tied_qk.on_change("active", self._guard(lambda new: self.state.apply(tied_qk=bool(new))))
        c.normaliser.on_change(
            "active", self._guard(lambda new: self.state.apply(normaliser=NORMALISERS[new]))
        )
        c.x_scale.on_change("value", self._guard(self._set_x_scale))
        c.preset.on_change("value", self._guard(lambda new: new != CUSTOM and self.state.load(new)))
        c.reset.on_click(lambda event: self._safely(self.state.reset))
        self._wire_sliders()

    def _wire_sliders(self) -> None:
        for slider in self.page.controls.tokens.flat:
            t, c = slider.tags
            slider.on_change("value", self._guard(lambda new, t=t, c=c: self.state.set_x(t, c, new)))

    def _set_x_scale(self, new) -> None:
        if new is None:  # the box was cleared or held text: put the last good value back
            self.state.message = "Multiply X by needs a number; kept the last one."
            self._sync_controls(False, set())
        else:
            self.state.apply(x_scale=new)

    def _guard(self, action):
        """A Bokeh on_change callback that ignores our own writes and never lets an error escape."""

        def callback(attr, old, new):
            if not self._syncing:
                self._safely(lambda: action(new))

        return callback

    def _safely(self, action) -> None:
        try:
            action()
        except Exception as exc:  # a bug must not take the session down: say so, keep the last state
            log.exception("control callback failed")
            self.state.message = f"That change could not be applied ({type(exc).__name__})."

    # -- state → views -------------------------------------------------------

    def _shape_of(self) -> tuple:
        s = self.state
        return (s.labels, s.head.C, s.head.d)

    def _redraw(self, *events) -> None:
        s = self.state
        data = view_data(s.head, s.query, s.labels)
        shape = self._shape_of()
        reshape = shape != self._shape
        self._shape = shape
        changed = {e.name for e in events}
        with pn.io.hold():
            self.page.update(data, s.labels, d=s.head.d, reshape=reshape)
            self._sync_controls(reshape, changed)
        self.updates += 1

    def _sync_controls(self, reshape: bool, changed: set) -> None:
        """Make the controls show the state after a change that did not come from them."""
        s, c = self.state, self.page.controls
        self._syncing = True
        try:
            if reshape:
                c.tokens.rebuild(s.labels, s.X)
                self._wire_sliders()
                c.query.options = [(str(i), label) for i, label in enumerate(s.labels)]
            elif "head" in changed:
                c.tokens.set_values(s.X)
            c.query.value = str(s.query)
            c.scaling.active = s.scaling
            c.causal.active = s.causal
            c.tied_qk.active = s.tied_qk
            c.normaliser.active = NORMALISERS.index(s.normaliser)
            c.x_scale.value = s.x_scale
            c.preset.value = s.preset or CUSTOM
        finally:
            self._syncing = False

    def _show_message(self, event) -> None:
        text = event.new
        with pn.io.hold():
            self.page.controls.message.text = f'<div class="alert">{html.escape(text)}</div>' if text else ""

    def __panel__(self):
        return pn.pane.Bokeh(self.page.layout)
