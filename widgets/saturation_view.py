"""The "Why ÷√d" explorer, served: controls → SaturationSettings → view data → the page's models.

A thin view: `SaturationSettings` (widgets/saturation_state.py) holds the
choices and refuses bad ones, `view_data` (widgets/saturation_viewdata.py)
says what to show, `SaturationPage` (widgets/saturation_page.py) holds the
Bokeh models, built once.  Each control's Bokeh callback changes the
settings; one watcher writes the new view data into the existing sources in
one held document change.
"""

from __future__ import annotations

import param

from widgets.explorer_view_base import ExplorerViewBase
from widgets.saturation_page import SaturationPage
from widgets.saturation_state import WIDTHS, SaturationSettings
from widgets.saturation_viewdata import view_data


class SaturationView(ExplorerViewBase):
    """The saturation explorer.  `SaturationView()` or `SaturationView(settings=SaturationSettings(d=64))`."""

    settings = param.ClassSelector(class_=SaturationSettings)
    explorer_name = "saturation"

    def __init__(self, **params):
        params.setdefault("settings", SaturationSettings())
        super().__init__(**params)
        s = self.settings
        self.page = SaturationPage(self._view_data(), s.inputs())
        p = self.page
        p.d_buttons.on_change("active", self._guard(lambda new: s.apply(d=WIDTHS[new])))
        self._start(["curve", "point", "worked"])

    def _view_data(self):
        return view_data(self.settings.curve, self.settings.point, self.settings.worked)

    def _write_inputs(self) -> None:
        self.page.show_inputs(self.settings.inputs())
