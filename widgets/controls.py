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

from core.attention import NORMALISERS
from core.presets import PRESETS
from widgets.style import short_label, text_panel

SLIDER_LOW, SLIDER_HIGH, SLIDER_STEP = -2.0, 2.0, 0.05
SLIDERS_ROW_PX = 280  # a row of sliders shares this width
SLIDER_LABEL_CHARS = 8  # a token label in a slider's title is cut to this many characters
PER_ROW = 3  # beyond this a token's sliders wrap onto another row, so titles like it[0]: 0.20 still fit
# Labels longer than this (as the titles show them) get two sliders a row, so a title like "attenti…[0]: 0.20"
# does not run into its neighbour's.
THREE_A_ROW_UP_TO = 4


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
                slider.update(start=low, end=high, value=float(v))

    @property
    def flat(self) -> list[Slider]:
        return [s for line in self.sliders for s in line]


def query_options(labels) -> list[tuple[str, str]]:
    return [(str(i), str(label)) for i, label in enumerate(labels)]


NORMALISER_LABELS = {"softmax": "softmax", "raw": "raw scores", "top1": "top-1"}
CUSTOM = "custom"


def preset_options() -> list[tuple[str, str]]:
    return [(name, p.title) for name, p in PRESETS.items()] + [(CUSTOM, "(your own edits)")]


# One or two sentences per switch on what to look for when it is flipped.
ABLATION_NOTES = """<details><summary>What each switch shows</summary><ul class="notes">
<li><b>÷√d off</b>: scores keep their full spread, so rows sharpen; at d = 2 only a little, at d = 128 a lot
(see "Why ÷√d" below the head).</li>
<li><b>Mask off</b>: earlier tokens can read later ones; weights appear above the diagonal.</li>
<li><b>W_K = W_Q</b>: a token's score against itself becomes its query's squared length, so tokens with long
queries read mostly themselves.</li>
<li><b>Raw scores</b>: no softmax, so weights can be negative or sum to anything, and the output can leave the
values' hull.</li>
<li><b>Top-1</b>: all weight on one key; drag a slider and the output jumps instead of gliding.</li>
<li><b>Multiply X</b>: every score grows with the square of the factor, so the softmax hardens fast.</li>
</ul></details>"""


def preset_note(name: str) -> str:
    preset = PRESETS.get(name)
    return (
        f"<p class='note'>{html.escape(preset.note)}</p>" if preset else "<p class='note'>Your own head.</p>"
    )


def toggle(label: str, on: bool, name: str) -> CheckboxGroup:
    """A one-box CheckboxGroup: unlike Bokeh's Checkbox its label text is clickable too."""
    return CheckboxGroup(labels=[label], active=active_for(on), name=name)


def active_for(on: bool) -> list[int]:
    """A toggle's `active` for on or off."""
    return [0] if on else []


def is_on(active) -> bool:
    return 0 in (active or [])


class HeadControls:
    """Preset and query pickers, the ablations, reset, the sliders, and a line for messages."""

    def __init__(
        self,
        labels,
        X,
        *,
        query: int,
        scaling: bool,
        causal: bool,
        tied_qk: bool = False,
        normaliser: str = "softmax",
        x_scale: float = 1.0,
        preset: str = "chapter",
    ):
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
        self.scaling = toggle("Divide scores by √d", scaling, "scaling")
        self.causal = toggle("Causal mask (hide later tokens)", causal, "causal")
        self.tied_qk = toggle("Tie keys to queries (W_K = W_Q)", tied_qk, "tied_qk")
        self.normaliser = RadioButtonGroup(
            labels=[NORMALISER_LABELS[n] for n in NORMALISERS],
            active=NORMALISERS.index(normaliser),
            name="normaliser",
            width=280,
        )
        self.x_scale = NumericInput(
            title="Multiply X by", value=x_scale, mode="float", low=-1e6, high=1e6, name="x_scale", width=120
        )
        self.reset = Button(
            label="Reset to the chapter's example", name="reset", button_type="default", width=280
        )
        self.message = text_panel("", name="message", width=280)
        self.tokens = TokenSliders(labels, X)
        self.layout = column(
            self.preset,
            self.note,
            self.query,
            self.scaling,
            self.causal,
            self.tied_qk,
            Div(text="Turn scores into weights with", width=280),
            self.normaliser,
            self.x_scale,
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
