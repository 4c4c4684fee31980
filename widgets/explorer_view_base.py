"""What the two small explorer viewers share: guarded control callbacks and held redraws.

`CostView` and `SaturationView` differ only in their page, their settings
and the controls they wire; the rest is here once.  A control's Bokeh
callback goes through `_guard` (our own writes into the controls are
ignored, and a bug becomes a message, never a dead session); a number box
goes through `_set`; a watcher on the settings' outputs calls `_redraw`,
which writes the new view data into the existing models in one held change.
"""

from __future__ import annotations

import logging

import panel as pn

from widgets.refusal import failed, message_html

log = logging.getLogger(__name__)


class ExplorerViewBase(pn.viewable.Viewer):
    """A thin viewer over `self.settings` (a `Refusing` state) and `self.page` (its Bokeh models).

    A subclass builds `self.page` (with a `boxes` dict of number inputs),
    wires its other controls through `_guard`, then calls `_start(outputs)` with the names
    of the settings' computed parameters, and says what the page shows
    (`_view_data`) and how the controls show the settings (`_write_inputs`).
    """

    # What the log calls this explorer when a control hits a bug.
    explorer_name = "explorer"

    _syncing = False  # True while the settings write into the controls

    def _start(self, outputs: list[str]) -> None:
        """Wire the page's number boxes, then watch the settings: new outputs redraw, a new message shows."""
        for name, box in self.page.boxes.items():
            box.on_change("value", self._guard(lambda new, name=name: self._set(name, new)))
        s = self.settings
        s.param.watch(self._redraw, outputs)
        s.param.watch(lambda event: self._show_message(event.new), ["message"])
        self._show_message(s.message)

    def _view_data(self):
        raise NotImplementedError

    def _write_inputs(self) -> None:
        raise NotImplementedError

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
                log.exception("%s control failed", self.explorer_name)
                self.settings.message = failed(exc)

        return callback

    def _show_inputs(self) -> None:
        self._syncing = True
        try:
            self._write_inputs()
        finally:
            self._syncing = False

    def _redraw(self, *events) -> None:
        with pn.io.hold():
            self.page.update(self._view_data())
            self._show_inputs()

    def _show_message(self, text: str) -> None:
        self.page.message.text = message_html(text)

    def __panel__(self):
        return pn.pane.Bokeh(self.page.layout)
