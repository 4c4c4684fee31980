"""The lesson's panel: the walk through the six steps and the questions, as plain Bokeh models.

One document root of its own (widgets/page.py puts it above the steps), so a new step's text re-lays out
only this root. The text and which controls show come from the view data's "lesson" part
(widgets/lesson_data.py) through `show`, here and in the page's JavaScript (static/explorer_page.js
painter, which writes the same properties); the controls' values (the question picked, the prediction) are
synced from the state by the explorer (`sync`). Nothing here knows the state.
"""

from __future__ import annotations

from pathlib import Path

from bokeh.layouts import column, row
from bokeh.models import Button, InlineStyleSheet, RadioGroup, Select, Slider

from core.lessons import ESTIMATE_SLIDER, QUESTIONS
from widgets.controls import set_changed
from widgets.style import CSS, text_panel

NO_QUESTION = ""
LESSON_CSS = (Path(__file__).resolve().parents[1] / "static" / "lesson.css").read_text()
# How wide the panel may get: as the steps under it.
WIDTH = {"sizing_mode": "stretch_width", "max_width": 640}
WRAP = {"flex-wrap": "wrap", "gap": "6px 10px"}
# A rule down its left side sets the panel apart from the steps under it (on its own element: the served page
# puts each root in a shadow root of Panel's, where the page's style sheet does not reach).
PANEL = {"border-left": "4px solid #4e79a7", "padding": "2px 0 6px 10px", "margin-bottom": "8px"}


def question_options() -> list[tuple[str, str]]:
    return [(NO_QUESTION, "Pick a question…")] + [
        (name, f"{k}. {q.title}") for k, (name, q) in enumerate(QUESTIONS.items(), start=1)
    ]


# What the panel shows before it is given the lesson's view data: nothing open.
CLOSED = {
    "question": "",
    "answer": "",
    "walk": "",
    "controls": {
        "walk": False, "prev": False, "next": False, "offer": "", "question": "", "kind": "", "choices": [],
        "revealed": False,
    },
}


# Bokeh's primary button (white on #428bca) reads at 3.6 : 1; this blue gives 7 : 1.
PRIMARY_CSS = (
    ".bk-btn-primary { background-color: #2c5d8f; border-color: #24507b; }"
    ".bk-btn-primary:hover, .bk-btn-primary:focus { background-color: #24507b; border-color: #1b3d5e; }"
)


def display(model, on: bool) -> None:
    """Show or hide one of the panel's controls by its inline style, not by `visible`: BokehJS lays the whole
    panel out again, reading the page's geometry back, at each change of a `visible` (a reveal changed four:
    ~5 ms of its ~12 in the export); a style it only applies. static/lesson_page.js does the same."""
    styles = dict(model.styles or {})
    want = None if on else "none"
    if styles.get("display") != want:
        model.styles = {**styles, "display": want}


def primary(label: str, name: str, sheet: InlineStyleSheet) -> Button:
    """The button a student presses next (the walk's Next step, Check, Next question)."""
    return Button(label=label, name=name, button_type="primary", stylesheets=[sheet])


class LessonPanel:
    """The walk's buttons, the question picker, the prediction's controls and the text between them."""

    def __init__(self, view: dict | None = None):
        view = view or CLOSED
        sheet = InlineStyleSheet(css=PRIMARY_CSS)
        self.walk_open = primary("Walk through the six steps", "walk-open", sheet)
        self.ask = Select(
            title="Predict, then check", value=NO_QUESTION, options=question_options(), name="ask", width=300
        )
        # the question (or what the panel is for), its answer, the walk's step: three texts, written apart,
        # always there (an empty one takes no room: no margin of its own), so that a step or an answer changes
        # no control's visibility, each of which costs BokehJS a layout of the whole panel
        texts = InlineStyleSheet(css=CSS + LESSON_CSS)  # one sheet for the panel's four texts
        flat = {**WIDTH, "margin": (0, 5, 0, 5)}
        self.question = text_panel(view["question"], texts, name="lesson-question", **flat)
        self.answer = text_panel(view["answer"], texts, name="lesson-answer", **flat)
        self.walk = text_panel(view["walk"], texts, name="lesson-walk", **flat)
        # why a change was refused
        self.message = text_panel("", texts, name="lesson-message", visible=False, **WIDTH)
        self.walk_prev = Button(label="Previous step", name="walk-prev")
        self.walk_next = primary("Next step", "walk-next", sheet)
        self.walk_offer = Button(label="Show this step for another query", name="walk-offer")
        self.walk_leave = Button(label="Leave the walk", name="walk-leave")
        self.choices = RadioGroup(labels=["-"], active=None, inline=True, name="choices")
        low, high, step, start = ESTIMATE_SLIDER
        self.estimate = Slider(
            title="Your estimate", start=low, end=high, step=step, value=start, format="0.00", width=300,
            name="estimate",
        )
        self.check = primary("Check my prediction", "check", sheet)
        self.reveal = Button(label="Reveal without predicting", name="reveal")
        self.next_question = primary("Next question", "next-question", sheet)
        self.close_question = Button(label="Close the question", name="close-question")
        self.walk_row = row(self.walk_prev, self.walk_next, self.walk_offer, self.walk_leave, styles=WRAP)
        # before the answer: Check and Reveal; after it: Next question (an answer swaps two rows, not three
        # buttons); Close all along
        self.asking = row(self.check, self.reveal, styles=WRAP)
        self.answered = row(self.next_question, styles=WRAP)
        self.answer_row = row(self.asking, self.answered, self.close_question, styles=WRAP)
        self.layout = column(
            row(self.walk_open, self.ask, styles=WRAP | {"align-items": "flex-end"}),
            self.question,
            self.choices,
            self.estimate,
            self.answer_row,
            self.answer,
            self.walk,
            self.walk_row,
            self.message,
            name="lesson",
            css_classes=["lesson-panel"],
            styles=PANEL,
            **WIDTH,
        )
        self.show(view)

    def show(self, view: dict) -> None:
        """The text and which controls are on show, from the lesson's view data (as the page's painter)."""
        c = view["controls"]
        question, open_walk = bool(c["question"]), c["walk"]
        choose = question and c["kind"] != "estimate"
        for name in ("question", "answer", "walk"):
            set_changed(getattr(self, name), text=view[name])
        display(self.walk_open, not open_walk)
        display(self.walk_row, open_walk)
        set_changed(self.walk_prev, disabled=not c["prev"])
        set_changed(self.walk_next, disabled=not c["next"])
        display(self.walk_offer, bool(c["offer"]))
        if c["offer"]:
            set_changed(self.walk_offer, label=c["offer"])
        display(self.choices, choose)
        if choose:
            set_changed(self.choices, labels=c["choices"])
        display(self.estimate, question and c["kind"] == "estimate")
        display(self.answer_row, question)
        display(self.asking, not c["revealed"])
        display(self.answered, c["revealed"])

    def sync(self, state, asked: bool) -> None:
        """The controls' values from the state: the question picked; on a new question or its answer
        (`asked`), the prediction's controls."""
        set_changed(self.ask, value=state.question)
        if asked:
            choice = state.prediction if state.revealed and isinstance(state.prediction, int) else None
            set_changed(self.choices, active=choice)
            estimate = state.prediction if isinstance(state.prediction, float) else ESTIMATE_SLIDER[3]
            set_changed(self.estimate, value=estimate)

    def models(self) -> dict:
        """By name, the models a page's JavaScript writes or listens to (static/explorer_page.js)."""
        names = (
            "question", "answer", "walk", "walk_open", "ask", "walk_prev", "walk_next", "walk_offer",
            "walk_leave", "walk_row", "choices", "estimate", "check", "reveal", "next_question",
            "close_question", "answer_row", "asking", "answered", "message",
        )  # fmt: skip
        return {name: getattr(self, name) for name in names}
