"""The long-context cost explorer, served: controls → CostSettings → view data → the page's models.

A thin view: `CostSettings` (widgets/cost_state.py) holds the choices and
refuses bad ones, `view_data` (widgets/cost_viewdata.py) says what to show,
`CostPage` (widgets/cost_page.py) holds the Bokeh models, built once.  Each
control's Bokeh callback changes the settings; one watcher writes the new
view data into the existing sources in one held document change.
"""

from __future__ import annotations

import logging

import panel as pn
import param

from widgets.cost_page import T_STOPS, CostPage
from widgets.cost_state import CUSTOM, CostSettings
from widgets.cost_viewdata import view_data
from widgets.refusal import failed, message_html

log = logging.getLogger(__name__)


class CostView(pn.viewable.Viewer):
    """The long-context cost explorer.  `CostView()` or `CostView(settings=CostSettings(T=8_000))`."""

    settings = param.ClassSelector(class_=CostSettings)

    def __init__(self, **params):
        params.setdefault("settings", CostSettings())
        super().__init__(**params)
        s = self.settings
        self.page = CostPage(view_data(s.cost, s.gpu_gb), s.inputs(), s.preset)
        self._syncing = False  # True while the settings write into the controls
        p = self.page
        p.preset.on_change("value", self._guard(lambda new: new != CUSTOM and s.load(new)))
        p.T_slider.on_change("value", self._guard(lambda new: s.apply(T=T_STOPS[int(new)])))
        for name, box in p.boxes.items():
            box.on_change("value", self._guard(lambda new, name=name: self._set(name, new)))
        p.gpu_slider.on_change("value", self._guard(lambda new: s.apply(gpu_gb=new)))
        s.param.watch(self._redraw, ["cost", "gpu_gb"])
        s.param.watch(lambda event: self._show_message(event.new), ["message"])
        self._show_message(s.message)

    def _set(self, name: str, value) -> None:
        s = self.settings
        taken = s.apply(**{name: value}) if value is not None else s.refuse_empty(name)
        if not taken:
            self._show_inputs()

    def _guard(self, action):
        """A Bokeh on_change callback that ignores our own writes and never lets an error escape."""

        def callback(attr, old, new):
            if self._syncing:
                return
            try:
                action(new)
            except Exception as exc:  # a bug must not end the session: say so, keep the last state
                log.exception("cost control failed")
                self.settings.message = failed(exc)

        return callback

    def _show_inputs(self) -> None:
        self._syncing = True
        try:
            self.page.show_inputs(self.settings.inputs(), self.settings.preset)
        finally:
            self._syncing = False

    def _redraw(self, *events) -> None:
        s = self.settings
        with pn.io.hold():
            self.page.update(view_data(s.cost, s.gpu_gb))
            self._show_inputs()

    def _show_message(self, text: str) -> None:
        self.page.message.text = message_html(text)

    def __panel__(self):
        return pn.pane.Bokeh(self.page.layout)
