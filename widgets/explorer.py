"""The served explorer: controls → HeadState → one view-data pass → sources.

Each control's Bokeh callback changes the state; the state computes the
head once; one watcher turns it into view data and writes every source in
place inside a single held document change, so the browser receives one
message per move and no figure is ever rebuilt. A served page draws the
student's own moves itself (app/served_page.py follow_in_browser), from the
state published here (`_publish`) and its own controls; while its channel
says the page draws them (widgets/channel.py), a drag's redraw sends nothing
of the figures.
"""

from __future__ import annotations

import io
import json
import logging
from functools import partial
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import panel as pn
import param
from bokeh.core.property.validation import validate, without_property_validation

from core.lessons import pose
from core.options import SWITCHES
from widgets.channel import PAGE, HeadChannel
from widgets.controls import (
    CUSTOM,
    TEACHERS,
    TEACHERS_NOTE,
    preset_note,
    preset_options,
    query_options,
    set_changed,
    show_value,
    switch_value,
)
from widgets.editor import WEIGHTS, HeadEditor
from widgets.intermediates import as_csv, as_json
from widgets.latest import LatestWins, overwritable
from widgets.lesson_data import lesson_of
from widgets.lesson_state import LESSON_PARAMS
from widgets.page import HeadPage
from widgets.refusal import message_html
from widgets.state import HeadState
from widgets.url_state import apply_params, encode
from widgets.viewdata import view_data

log = logging.getLogger(__name__)

BOKEH_SEAM = Path(__file__).resolve().parents[1] / "static" / "bokeh_seam.js"


class HeadExplorer(pn.viewable.Viewer):
    """One student's explorer: its own state and its own Bokeh models."""

    state = param.ClassSelector(class_=HeadState)
    sync_url = param.Boolean(default=False, doc="Read settings from the page's URL; keep it current")
    updates = param.Integer(default=0, doc="How many times the views were redrawn (for tests and benchmarks)")
    editor_on_open = param.Boolean(
        default=False,
        constant=True,
        doc="Build the head editor when its card is first opened (the served page: a fifth of a session's "
        "models, which most students never open), not with the page",
    )

    def __init__(self, **params):
        params.setdefault("state", HeadState())
        super().__init__(**params)
        s = self.state
        if self.sync_url and pn.state.session_args:
            apply_params(s, dict(pn.state.session_args))
        self._shape = self._shape_of()
        with validate(False):  # checks double the cost; the export builds this same page with them on
            self.page = HeadPage.for_state(
                s,
                title="<h1>One attention head</h1><p>Drag a token's vector, pick the query token, and "
                "watch how it divides its attention and where its output lands.</p>",
            )
        self.editor: HeadEditor | None = None  # built by open_editor
        self._syncing = False  # True while the state writes into the controls
        self.latest = LatestWins(run=self._safely)  # in a burst only each control's newest value is computed
        self._dragging = False  # True while a slider move is applied: the URL waits for the release
        self._pressing = False  # True while a lesson button's press is applied (the page has drawn it)
        self.channel = HeadChannel()  # the page's JavaScript and this server: the state, who draws a move
        self._wire_controls()
        if not self.editor_on_open:
            self.open_editor()
        self._publish()
        s.param.watch(self._redraw, ["head", "query", "dims", *LESSON_PARAMS])
        s.param.watch(lambda event: self._show_message(event.new), ["message"])
        self._show_message(s.message)

    # -- controls → state ----------------------------------------------------

    def _wire_controls(self) -> None:
        c = self.page.controls
        c.query.on_change("value", self._guard(lambda new: self.state.apply(query=int(new))))
        for s in SWITCHES:  # one callback per row of the table
            widget = c.switches[s.name]
            if s.kind == "number":
                apply_number = partial(self._apply_option, s.name)
                widget.on_change("value", self._guard(self._needs_number(s.label, apply_number)))
            else:
                widget.on_change("active", self._guard(partial(self._apply_switch, s.name)))
        c.preset.on_change("value", self._guard(self._pick_preset))
        c.reset.on_click(lambda event: self._press(self.state.reset))
        self._wire_sliders()
        self._wire_lesson()

    def _wire_lesson(self) -> None:
        """The walk's and the questions' buttons, each one action of the state (widgets/lesson_state.py);
        the question picker, a value like the query's."""
        L = self.page.lesson
        buttons = {
            "walk-open": L.walk_open, "walk-next": L.walk_next, "walk-prev": L.walk_prev,
            "walk-leave": L.walk_leave, "walk-offer": L.walk_offer, "reveal": L.reveal,
            "next-question": L.next_question, "close-question": L.close_question,
        }  # fmt: skip
        for do, button in buttons.items():
            button.on_click(partial(self._lesson_press, lambda do=do: {"do": do}))
        L.check.on_click(partial(self._lesson_press, self._prediction))
        L.ask.on_change("value", self._guard(lambda new: self.state.act({"do": "ask", "name": new})))

    def _prediction(self) -> dict:
        """Check: the prediction the open question's control holds."""
        L, s = self.page.lesson, self.state
        estimate = bool(s.question) and pose(s.question).kind == "estimate"
        return {"do": "predict", "value": float(L.estimate.value) if estimate else L.choices.active}

    def _lesson_press(self, action, event=None) -> None:
        """A lesson button: its action, then the count of presses applied (widgets/channel.py `presses`)
        with the state, so the page, which drew the press at once (static/explorer_page.js follow), knows
        the server has it."""

        def run():
            with pn.io.hold():  # the new state and the count in one message: the page reads them together
                try:
                    self._pressing = True
                    self.state.act(action())
                finally:
                    self._pressing = False
                    self.channel.presses += 1
                    self._publish()

        self._press(run)

    def _pick_preset(self, name: str) -> None:
        if name == TEACHERS:  # not a preset: the box goes back to what the head is
            self._sync_preset()
        elif name != CUSTOM:
            self.state.load(name)

    def _apply_option(self, name: str, value) -> None:
        self.state.apply(**{name: value})

    def _apply_switch(self, name: str, new) -> None:
        # `new`, not the widget's value now: a change applied a turn later (widgets/latest.py) finds its
        # widget set back by the sync of a change applied before it
        self.state.apply(**{name: switch_value(name, new)})

    def _wire_sliders(self) -> None:
        for slider in self.page.controls.tokens.flat:
            t, c = slider.tags
            slider.on_change("value", self._guard(partial(self._drag, t, c)))
            slider.on_change("value_throttled", self._guard(lambda new: self._write_url()))

    def _drag(self, t: int, c: int, new) -> None:
        self._dragging = True
        try:
            self.state.set_x(t, c, new)
        finally:
            self._dragging = False

    def open_editor(self) -> HeadEditor:
        """The head editor, built (from the state as it is now) and wired the first time it is asked for."""
        if self.editor is None:
            s = self.state
            with validate(False):
                self.editor = HeadEditor(
                    s.labels, {n: getattr(s, n) for n in WEIGHTS}, C=s.head.C, d=s.head.d, dims=s.dims
                )
            self.editor.message.text = message_html(s.message)
            self._wire_editor()
        return self.editor

    def _wire_editor(self) -> None:
        e, s = self.editor, self.state
        e.labels.on_change("value", self._guard(s.set_labels))
        e.add.on_click(lambda event: self._press(s.add_token))
        e.remove.on_click(lambda event: self._press(lambda: s.remove_token(s.query)))
        e.C.on_change("value", self._guard(self._needs_number("C", lambda v: s.set_widths(C=v))))
        e.d.on_change("value", self._guard(self._needs_number("d", lambda v: s.set_widths(d=v))))
        e.dim_x.on_change("value", self._guard(lambda new: s.apply(dims=[int(new), s.dims[1]])))
        e.dim_y.on_change("value", self._guard(lambda new: s.apply(dims=[s.dims[0], int(new)])))
        self._wire_grids()

    def _wire_grids(self) -> None:
        for name in self.editor.grids:
            self._wire_grids_of(name)

    def _wire_grids_of(self, name: str) -> None:
        for box in self.editor.grids[name].flat:
            r, c = box.tags
            set_entry = partial(self.state.set_weight, name, r, c)
            box.on_change("value", self._guard(self._needs_number(f"{name}[{r}, {c}]", set_entry)))

    def _needs_number(self, field: str, action):
        """Wrap a number box's action: an emptied box (Bokeh sends None) restores the last good value."""

        def run(new):
            if new is None:
                self.state.message = f"{field} needs a number; kept the last one."
            else:
                action(new)

        return run

    def _guard(self, action):
        """A Bokeh on_change callback that ignores our own writes, lets the control's newest value win over
        the ones it overtook (widgets/latest.py), and never lets an error escape. A value the state refuses
        is not left in its control: the controls go back to the last good state, so what they show is the
        head on screen, and the same value entered again is a change again (with its message again)."""
        control = object()  # one key per wired control and property

        def run(new):
            action(new)
            if self.state.message:
                self._sync_controls(False, set())

        def callback(attr, old, new):
            if not self._syncing:  # a pick is never overtaken: it goes in turn, as a press does
                self.latest.submit(control if overwritable(new) else object(), lambda: run(new))

        return callback

    def _press(self, action) -> None:
        """A button press: queued behind the values already pending, never merged with another press."""
        self.latest.submit(object(), action)

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

    @without_property_validation  # the view data is built to fit; Bokeh's checks would double the cost
    def _redraw(self, *events) -> None:
        s = self.state
        shape = self._shape_of()
        reshape = shape != self._shape
        self._shape = shape
        changed = {e.name for e in events}
        lesson = bool(changed & set(LESSON_PARAMS))  # a drag closes an answered question: the page must know
        if self._dragging and self.channel.drawn_by == PAGE and not reshape and not lesson:
            # the page has drawn this move itself, with the same numbers: no view data to make or send
            self._sync_preset()
            return
        data = view_data(s.head, s.query, s.labels, s.dims, s.moved, s.before, lesson=lesson_of(s))
        # A lesson press the page has drawn already: its figures are not sent again (BokehJS repaints a source
        # sent whole even when its numbers are the same); the controls and texts are.
        drawn = self._pressing and self.channel.drawn_by == PAGE and not reshape
        with pn.io.hold():
            self.page.update(data, s.labels, d=s.head.d, reshape=reshape, C=s.head.C, figures=not drawn)
            if self._dragging and not lesson:  # the slider shows its value; the preset may be "custom" now
                self._sync_preset()
            else:
                self._publish()  # (a drag changes only what the page's own controls hold)
                self._sync_controls(reshape, changed)
        self.updates += 1
        if not self._dragging:
            self._write_url()

    def _publish(self) -> None:
        """Put the state where the page's JavaScript reads it (widgets/channel.py): static/explorer_page.js
        follow draws the student's own moves (the token sliders, the query, the switches) on top of it,
        reading those from the controls, so a drag need not publish it again."""
        self.channel.state = json.dumps(self.state.as_data(), allow_nan=False)

    def _write_url(self) -> None:
        """Put the settings in the address bar, so a copied link opens the same head."""
        location = pn.state.location
        if self.sync_url and location is not None:
            # as Location.update_query, without its parsing of every value (a classroom send writes the
            # address of every student's page)
            query = dict(parse_qsl(location.search.lstrip("?"), keep_blank_values=True))
            query.update(encode(self.state))
            location.search = "?" + urlencode(query)

    _teachers_head = False  # a custom head the teacher sent is on show (show_teachers_head)

    def show_teachers_head(self, on: bool) -> None:
        """(widgets/class_link.py) While the head on show is the one the teacher sent, a head of no preset
        shows in the preset box and its note as "Your teacher's head", not as the student's own edits."""
        if on != self._teachers_head:
            self._teachers_head = on
            if on:
                set_changed(self.page.controls.preset, options=preset_options(teachers=True))
            self._sync_preset()

    def _preset_shown(self) -> tuple[str, str]:
        name = self.state.preset
        if not name and self._teachers_head:
            return TEACHERS, TEACHERS_NOTE
        return name or CUSTOM, preset_note(name)

    def _sync_preset(self) -> None:
        value, note = self._preset_shown()
        c = self.page.controls
        if c.preset.value != value or c.note.text != note:
            self._syncing = True
            try:
                self._show_preset()
            finally:
                self._syncing = False

    def _show_preset(self) -> None:
        c = self.page.controls
        value, note = self._preset_shown()
        set_changed(c.preset, value=value)
        set_changed(c.note, text=note)

    def _sync_controls(self, reshape: bool, changed: set) -> None:
        """Make the controls show the state after a change that did not come from them."""
        s, c, e = self.state, self.page.controls, self.editor
        self._syncing = True
        try:
            if reshape:
                c.tokens.rebuild(s.labels, s.X)
                self._wire_sliders()
                c.query.options = query_options(s.labels)
            elif "head" in changed:
                c.tokens.set_values(s.X)
            if e is not None:  # an editor not opened yet is built from the state when it opens
                self._sync_editor(e)
            set_changed(c.query, value=str(s.query))
            for switch in SWITCHES:
                show_value(switch.name, c.switches[switch.name], getattr(s, switch.name))
            self._show_preset()
            self.page.lesson.sync(s, asked=bool({"question", "revealed"} & changed))
        finally:
            self._syncing = False

    def _sync_editor(self, e: HeadEditor) -> None:
        s = self.state
        # (only what differs is written: a classroom send syncs every control of every student)
        set_changed(e.labels, value=", ".join(s.labels))
        set_changed(e.C, value=s.head.C)
        set_changed(e.d, value=s.head.d)
        for name, grid in e.grids.items():
            W = getattr(s, name)
            if grid.shape != W.shape:
                grid.rebuild(W)
                self._wire_grids_of(name)
            else:
                grid.set_values(W)
        e.set_dims(s.head.d, s.dims)

    def _show_message(self, text: str) -> None:
        markup = message_html(text)
        with pn.io.hold():
            self.page.controls.message.text = markup
            self.page.lesson.message.update(text=markup, visible=bool(markup))
            if self.editor is not None:
                self.editor.message.text = markup

    def _download(self, kind: str):
        s = self.state
        text = as_json(s.head, s.labels) if kind == "json" else as_csv(s.head, s.labels)
        return io.BytesIO(text.encode("utf-8"))

    def _downloads(self) -> pn.FlexBox:
        buttons = [
            pn.widgets.FileDownload(
                callback=partial(self._download, kind),
                filename=f"attention-head.{kind}",
                label=f"Download every matrix ({kind.upper()})",
                button_type="light",
            )
            for kind in ("json", "csv")
        ]
        # a FlexBox wraps the buttons and the note onto more lines when the page is narrow (a phone)
        return pn.FlexBox(*buttons, pn.pane.Markdown("Each figure saves itself as a PNG from its toolbar."))

    def _editor_card(self) -> pn.Card:
        """The card holding the editor; with editor_on_open, closed and empty until first opened."""
        card = pn.Card(title="Edit the head", collapsed=self.editor_on_open, sizing_mode="stretch_width")
        if not self.editor_on_open:
            card.objects = [pn.pane.Bokeh(self.editor.layout)]
            return card

        def fill(event) -> None:
            if not event.new and not card.objects:  # opened the first time
                card.objects = [pn.pane.Bokeh(self.open_editor().layout)]

        card.param.watch(fill, "collapsed")
        return card

    def areas(self) -> dict:
        """The page's parts as separate Panel objects, for a template that places each as its own root."""
        roots = self.page.roots
        return {
            **{name: pn.pane.Bokeh(model) for name, model in roots.items()},
            "editor": pn.Column(self._downloads(), self._editor_card(), sizing_mode="stretch_width"),
        }

    def _repr_mimebundle_(self, include=None, exclude=None):
        """In a notebook: the seam to BokehJS that the served page and the export load (static/bokeh_seam.js),
        published the way Panel publishes its own notebook JavaScript, then the explorer itself."""
        from IPython.display import publish_display_data
        from panel.io.notebook import LOAD_MIME

        seam = BOKEH_SEAM.read_text()
        publish_display_data({"application/javascript": seam, LOAD_MIME: seam})
        return super()._repr_mimebundle_(include, exclude)

    def __panel__(self):
        return pn.Column(pn.pane.Bokeh(self.page.layout), self._downloads(), self._editor_card())
