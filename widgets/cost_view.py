"""The long-context cost explorer, served: controls → CostSettings → view data → the page's models.

A thin view: `CostSettings` (widgets/cost_state.py) holds the choices and
refuses bad ones, `view_data` (widgets/cost_viewdata.py) says what to show,
`CostPage` (widgets/cost_page.py) holds the Bokeh models, built once.  Each
control's Bokeh callback changes the settings; one watcher writes the new
view data into the existing sources in one held document change.
"""

from __future__ import annotations

import param

from widgets.cost_page import T_STOPS, CostPage
from widgets.cost_state import CUSTOM, CostSettings
from widgets.cost_viewdata import view_data
from widgets.explorer_view_base import ExplorerViewBase


class CostView(ExplorerViewBase):
    """The long-context cost explorer.  `CostView()` or `CostView(settings=CostSettings(T=8_000))`."""

    settings = param.ClassSelector(class_=CostSettings)
    explorer_name = "cost"

    def __init__(self, **params):
        params.setdefault("settings", CostSettings())
        super().__init__(**params)
        s = self.settings
        self.page = CostPage(self._view_data(), s.inputs(), s.preset)
        p = self.page
        p.preset.on_change("value", self._guard(lambda new: new != CUSTOM and s.load(new)))
        p.T_slider.on_change("value", self._guard(lambda new: s.apply(T=T_STOPS[int(new)])))
        p.gpu_slider.on_change("value", self._guard(lambda new: s.apply(gpu_gb=new)))
        self._start(["cost", "gpu_gb", "tile"])

    def _view_data(self):
        return view_data(self.settings.cost, self.settings.gpu_gb, self.settings.tile)

    def _write_inputs(self) -> None:
        self.page.show_inputs(self.settings.inputs(), self.settings.preset)
