"""The "Attention in tiles" view, served: it follows the explorer's head (a HeadState) and its own controls.

A thin view: the explorer's `HeadState` holds the head on screen and its query, `TilesSettings`
(widgets/tiles_state.py) the tile size and the tiles done, `view_data` (widgets/tiles_viewdata.py) says
what to show, `TilesPage` (widgets/tiles_page.py) holds the Bokeh models, built once.  While its tab is
not the one open, a change of the head is not drawn (`showing`): the tab catches up when it opens again,
so a student's drags cost nothing here unless they watch.
"""

from __future__ import annotations

import logging

import panel as pn
import param

from widgets.refusal import failed
from widgets.state import HeadState
from widgets.tiles_page import TilesPage
from widgets.tiles_state import TilesSettings
from widgets.tiles_viewdata import view_data

log = logging.getLogger(__name__)


class TilesView(pn.viewable.Viewer):
    """The tiles view of `state`'s head.  `TilesView(state=explorer.state)`."""

    state = param.ClassSelector(class_=HeadState)
    settings = param.ClassSelector(class_=TilesSettings)
    showing = param.Boolean(default=True, doc="Whether its tab is open (a hidden view catches up later)")

    def __init__(self, **params):
        params.setdefault("state", HeadState())
        params.setdefault("settings", TilesSettings())
        super().__init__(**params)
        self.page = TilesPage(self._view_data())
        self._syncing = False
        self._stale = False
        p = self.page
        p.size.on_change("value", self._guard(lambda new: {"do": "size", "value": int(new)}))
        p.next.on_click(lambda event: self._act({"do": "next"}))
        p.again.on_click(lambda event: self._act({"do": "again"}))
        self.state.param.watch(self._redraw, ["head", "query"])
        self.settings.param.watch(self._redraw, ["size", "step"])
        self.param.watch(lambda event: event.new and self._stale and self._redraw(), "showing")

    def _view_data(self) -> dict:
        s, t = self.state, self.settings
        return view_data(s.head, s.query, s.labels, t.size, t.step)

    def _guard(self, make_action):
        def callback(attr, old, new):
            if not self._syncing:
                self._act(make_action(new))

        return callback

    def _act(self, action: dict) -> None:
        try:
            self.settings.act(action, self.state.head.T)
        except Exception as exc:  # a bug must not end the session: say so in the log, keep the last state
            log.exception("tiles control failed")
            self.state.message = failed(exc)

    def _redraw(self, *events) -> None:
        if not self.showing:
            self._stale = True
            return
        self._stale = False
        self._syncing = True
        try:
            with pn.io.hold():
                self.page.update(self._view_data())
        finally:
            self._syncing = False

    def __panel__(self):
        return pn.pane.Bokeh(self.page.layout)
