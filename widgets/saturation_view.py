"""The "Why ÷√d" explorer, served: controls → SaturationSettings → view data → the page's models.

A thin view: `SaturationSettings` (widgets/saturation_state.py) holds the
choices and refuses bad ones, `view_data` (widgets/saturation_viewdata.py)
says what to show, `SaturationPage` (widgets/saturation_page.py) holds the
Bokeh models, built once.  Each control's Bokeh callback changes the
settings; one watcher writes the new view data into the existing sources in
one held document change.
"""

from __future__ import annotations

import logging

import panel as pn
import param

from widgets.refusal import failed, message_html
from widgets.saturation_page import SaturationPage
from widgets.saturation_state import WIDTHS, SaturationSettings
from widgets.saturation_viewdata import view_data

log = logging.getLogger(__name__)


class SaturationView(pn.viewable.Viewer):
    """The saturation explorer.  `SaturationView()` or `SaturationView(settings=SaturationSettings(d=64))`."""

    settings = param.ClassSelector(class_=SaturationSettings)

    def __init__(self, **params):
        params.setdefault("settings", SaturationSettings())
        super().__init__(**params)
        s = self.settings
        self.page = SaturationPage(view_data(s.curve, s.point), s.inputs())
        self._syncing = False  # True while the settings write into the controls
        p = self.page
        p.d_buttons.on_change("active", self._guard(lambda new: s.apply(d=WIDTHS[new])))
        for name, box in p.boxes.items():
            box.on_change("value", self._guard(lambda new, name=name: self._set(name, new)))
        s.param.watch(self._redraw, ["curve", "point"])
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
                log.exception("saturation control failed")
                self.settings.message = failed(exc)

        return callback

    def _show_inputs(self) -> None:
        self._syncing = True
        try:
            self.page.show_inputs(self.settings.inputs())
        finally:
            self._syncing = False

    def _redraw(self, *events) -> None:
        s = self.settings
        with pn.io.hold():
            self.page.update(view_data(s.curve, s.point))
            self._show_inputs()

    def _show_message(self, text: str) -> None:
        self.page.message.text = message_html(text)

    def __panel__(self):
        return pn.pane.Bokeh(self.page.layout)
