"""The controls, as plain Bokeh widgets.

Plain Bokeh widgets rather than Panel's: their Python callbacks run as soon
as the browser's change arrives, where Panel's widgets hold each change back
50 ms (`Syncable._debounce`).  The static export reuses the same widgets with
JavaScript callbacks.  Nothing here knows about the state: the explorer (or
the export) wires them.
"""

from __future__ import annotations

import html

from bokeh.layouts import column, row
from bokeh.models import Button, CheckboxGroup, Div, NumericInput, RadioButtonGroup, Select, Slider

from core.options import SWITCH, SWITCHES, Options
from core.presets import CUSTOM, PRESETS
from widgets.style import short_label, text_panel
from widgets.url_state import X_STEP
from widgets.viewdata import preset_note  # noqa: F401  (the note panel's text; app/export.py imports it here)

SLIDER_LOW, SLIDER_HIGH = -2.0, 2.0
SLIDER_STEP = X_STEP  # links write a slider's value to this step's grid (widgets/url_state.py number)
SLIDERS_ROW_PX = 280  # a row of sliders shares this width
SLIDER_LABEL_CHARS = 8  # a token label in a slider's title is cut to this many characters
PER_ROW = 3  # beyond this a token's sliders wrap onto another row, so titles like it[0]: 0.20 still fit
# Labels longer than this (as the titles show them) get two sliders a row, so a title like "attenti…[0]: 0.20"
# does not run into its neighbour's.
THREE_A_ROW_UP_TO = 4


def set_changed(model, **props) -> None:
    """Write only the properties whose value differs: a classroom send syncs every control of every
    student's page, and most of them already show the right value (Bokeh's own check costs more)."""
    changed = {k: v for k, v in props.items() if getattr(model, k) != v}
    if changed:
        model.update(**changed)


def slider_range(value: float) -> tuple[float, float]:
    """−2 … 2, widened to the next whole number when a preset or edit goes beyond."""
    return min(SLIDER_LOW, float(int(value) - (value < 0))), max(SLIDER_HIGH, float(int(value) + (value > 0)))


def slider_label(label: str) -> str:
    """A token label as its sliders' titles show it."""
    return short_label(label, SLIDER_LABEL_CHARS)


class TokenSliders:
    """A row of sliders per token, one per component of its vector, titled like it[0]."""

    def __init__(self, labels, X):
        self.sliders: list[list[Slider]] = []
        self.layout = column(name="token-sliders", css_classes=["token-sliders"])
        self.rebuild(labels, X)

    def rebuild(self, labels, X) -> None:
        """New sliders for a new set of tokens or a new width C (never during a drag)."""
        titles = [slider_label(label) for label in labels]
        per_row = PER_ROW if max(map(len, titles), default=0) <= THREE_A_ROW_UP_TO else PER_ROW - 1
        self.sliders = [
            [
                self._slider(f"{title}[{c}]", float(v), t, c, min(len(vector), per_row))
                for c, v in enumerate(vector)
            ]
            for t, (title, vector) in enumerate(zip(titles, X))
        ]
        self.layout.children = [
            row(*line[k : k + per_row], css_classes=["token-row"])
            for line in self.sliders
            for k in range(0, len(line), per_row)
        ]

    def _slider(self, title: str, value: float, t: int, c: int, width: int) -> Slider:
        low, high = slider_range(value)
        return Slider(
            title=title,
            value=value,
            start=low,
            end=high,
            step=SLIDER_STEP,
            width=SLIDERS_ROW_PX // width - 6,
            name=f"x-{t}-{c}",
            format="0.00",
            tags=[t, c],
            css_classes=["x-slider"],
        )

    def set_values(self, X) -> None:
        for line, vector in zip(self.sliders, X):
            for slider, v in zip(line, vector):
                low, high = slider_range(float(v))
                set_changed(slider, start=low, end=high, value=float(v))

    @property
    def flat(self) -> list[Slider]:
        return [s for line in self.sliders for s in line]


def query_options(labels) -> list[tuple[str, str]]:
    return [(str(i), str(label)) for i, label in enumerate(labels)]


NORMALISER_LABELS = dict(zip(SWITCH["normaliser"].choices, SWITCH["normaliser"].choice_labels))


# a served student's preset box, while on a head the teacher sent (widgets/class_link.py)
TEACHERS = "teachers-head"
TEACHERS_NOTE = "<p class='note'>Your teacher's head, as they sent it. Change anything and it is yours.</p>"


def preset_options(teachers: bool = False) -> list[tuple[str, str]]:
    """The preset box's entries; `teachers`: with one for a head the teacher sent."""
    extra = [(TEACHERS, "Your teacher's head")] if teachers else []
    return [(name, p.title) for name, p in PRESETS.items()] + extra + [(CUSTOM, "(your own edits)")]


def ablation_notes() -> str:
    """The "What each switch shows" panel: one item per row of core.options.SWITCHES.

    Each row's note quotes the chapter's example with that switch flipped (core/notes.py), and says so.
    """
    items = "".join(
        f"<li><b>{html.escape(s.flipped)}</b>: {html.escape(s.look_for())}</li>" for s in SWITCHES
    )
    return (
        "<details><summary>What each switch shows</summary>"
        "<p class='note'>Each flipped alone on the chapter's example, query 'it'.</p>"
        f"<ul class='notes'>{items}</ul></details>"
    )


ABLATION_NOTES = ablation_notes()


def toggle(label: str, on: bool, name: str) -> CheckboxGroup:
    """A one-box CheckboxGroup: unlike Bokeh's Checkbox its label text is clickable too."""
    return CheckboxGroup(labels=[label], active=active_for(on), name=name)


def active_for(on: bool) -> list[int]:
    """A toggle's `active` for on or off."""
    return [0] if on else []


def is_on(active) -> bool:
    return 0 in (active or [])


def switch_widget(name: str, value):
    """The control for one option, made from its row in the table."""
    s = SWITCH[name]
    if s.kind == "toggle":
        return toggle(s.label, value, name)
    if s.kind == "choice":
        return RadioButtonGroup(
            labels=list(s.choice_labels), active=s.choices.index(value), name=name, width=280
        )
    if s.slider is not None:
        start, end, step = s.slider
        return Slider(
            title=s.label, value=value, start=start, end=end, step=step, name=name, width=270, format="0.00"
        )
    return NumericInput(
        title=s.label, value=value, mode="float", low=s.low, high=s.high, name=name, width=120
    )


def switch_value(name: str, active):
    """What a toggle's or a choice's widget said (its `active`), as the option's value."""
    if SWITCH[name].kind == "toggle":
        return is_on(active)
    return SWITCH[name].choices[active]


def show_value(name: str, widget, value) -> None:
    """Make a switch's widget show an option's value."""
    kind = SWITCH[name].kind
    if kind == "toggle":
        set_changed(widget, active=active_for(value))
    elif kind == "choice":
        set_changed(widget, active=SWITCH[name].choices.index(value))
    else:
        set_changed(widget, value=value)


class HeadControls:
    """Preset and query pickers, the ablations, reset, the sliders, and a line for messages."""

    def __init__(
        self,
        labels,
        X,
        *,
        query: int,
        options: Options | None = None,
        preset: str = "chapter",
    ):
        options = options or Options()
        self.preset = Select(
            title="Preset", value=preset or CUSTOM, options=preset_options(), name="preset", width=280
        )
        self.note = text_panel(preset_note(preset), name="preset-note", width=280)
        self.query = Select(
            title="Query token (the row being read)",
            value=str(query),
            options=query_options(labels),
            name="query",
            width=280,
        )
        # One widget per row of core.options.SWITCHES, also reachable by name (self.scaling, ...).
        self.switches = {s.name: switch_widget(s.name, getattr(options, s.name)) for s in SWITCHES}
        for name, widget in self.switches.items():
            setattr(self, name, widget)
        switch_rows = []
        for s in SWITCHES:
            if s.kind == "choice":  # a button group has no title of its own
                switch_rows.append(Div(text=html.escape(s.label), width=280))
            switch_rows.append(self.switches[s.name])
        self.reset = Button(
            label="Reset to the chapter's example", name="reset", button_type="default", width=280
        )
        self.message = text_panel("", name="message", width=280)
        self.tokens = TokenSliders(labels, X)
        self.layout = column(
            self.preset,
            self.note,
            self.query,
            *switch_rows,
            text_panel(ABLATION_NOTES, width=280, name="ablation-notes"),
            self.reset,
            self.message,
            name="controls",
            css_classes=["controls"],
            width=300,
        )
        # The token vectors are laid out apart from the other controls (widgets/page.py puts them right
        # after the weights and the blend), so the slider being dragged and the figures it moves are on
        # screen together at every width.
        self.vectors = column(
            Div(text="<b>Token vectors</b> (drag, or focus a slider and use the arrow keys)", width=280),
            self.tokens.layout,
            name="token-vectors",
            css_classes=["token-vectors"],
            width=SLIDERS_ROW_PX + 10,
        )
