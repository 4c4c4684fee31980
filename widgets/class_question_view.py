"""The class answers a question together (issue 24 item 3): the card on a student's page, the teacher's desk.

Plain Bokeh models, as the rest of the classroom: what travels between a page and its server is their declared
properties (the student's answer is the RadioGroup's `active`; the question, the counts and the reveal are
server-written text), so no JavaScript of ours is involved. The question and what counts as right come from
core/class_question.py (the bank of core/lessons.py); the counts from the class bus (widgets/broadcast.py).

On a student's page the card shows the question in the lesson panel's style and takes one answer, which can be
changed until the reveal; the reveal shows the answer and the class's distribution, the student's own answer
marked. On the teacher's page: which question, Ask / Reveal / Close, and the answers live (how many answered,
a bar chart updated in place, and the same counts as a table in words). Nothing on the teacher's page names a
student; before the reveal it does not say which answer is right (it is on the projector).

The counts the reveal shows are the teacher's at the press: with several server processes, each reports its
students' counts at most every 0.2 s (widgets/broadcast.py REPORT_EVERY), so an answer given in the last
moment before Reveal may be on its student's page as theirs but missing from the counts.
"""

from __future__ import annotations

import html
from pathlib import Path

from bokeh.layouts import column, row
from bokeh.models import (
    AdaptiveTicker,
    Button,
    ColumnDataSource,
    FactorRange,
    InlineStyleSheet,
    RadioGroup,
    Select,
)
from bokeh.plotting import figure

from core.class_question import TOP_KEY, answer_index, ask, ask_top_key, letter, share
from core.lessons import QUESTIONS
from widgets.broadcast import CLOSED, OPEN, REVEALED, question_message
from widgets.controls import set_changed
from widgets.lesson_view import LESSON_CSS, PANEL, PRIMARY_CSS, WIDTH, WRAP, primary
from widgets.style import CSS, FIGURE_MIN_WIDTH, drop_grid, text_panel


def esc(text: str) -> str:
    """Text for HTML's text (quotes left as they are: no attribute takes it)."""
    return html.escape(text, quote=False)


RIGHT_COLOUR, OTHER_COLOUR = "#2e7d32", "#4e79a7"


def choice_labels(question: dict) -> list[str]:
    return [f"{letter(k)}. {c}" for k, c in enumerate(question["choices"])]


def question_html(question: dict, heading: str, more: str = "") -> str:
    """The question as the lesson panel shows one: its title, its setting, what to predict."""
    parts = [f'<p class="lesson-head"><b>{esc(heading)}</b>: {esc(question["title"])}</p>']
    for key in ("context", "change"):
        if question[key]:
            text = question[key]
            text = text[:1].upper() + text[1:]
            parts.append(f"<p>{esc(text)}{'' if text.endswith('.') else '.'}</p>")
    parts.append(f'<p class="lesson-ask">{esc(question["prompt"])}</p>')
    return f'<div class="lesson class-question">{"".join(parts)}{more}</div>'


def distribution_html(question: dict, counts: list[int], revealed: bool, own: int | None = None) -> str:
    """The class's answers as a table in words: each choice, how many picked it, their share; once revealed,
    the right ones marked, and (on a student's page) the student's own."""
    shares = share(counts)
    rows = []
    for k, choice in enumerate(question["choices"]):
        marks = []
        if revealed and k in question["right"]:
            marks.append('<span class="right-mark">right answer</span>')
        if own == k:
            marks.append('<span class="own-mark">your answer</span>')
        right = ' class="right"' if revealed and k in question["right"] else ""
        rows.append(
            f'<tr{right}><th scope="row">{letter(k)}. {esc(choice)}</th>'
            f"<td>{counts[k]}</td><td>{shares[k]} %</td><td>{' '.join(marks)}</td></tr>"
        )
    total = sum(counts)
    caption = f"The class's answers: {total} answer{'s' if total != 1 else ''}"
    return (
        f'<table class="class-answers"><caption>{caption}</caption>'
        '<thead><tr><th scope="col">answer</th><th scope="col">students</th><th scope="col">share</th>'
        f'<th scope="col">marked</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def revealed_html(question: dict, counts: list[int], own: int | None) -> str:
    right = ", ".join(letter(k) for k in question["right"])
    if own is None:
        verdict = "You did not answer."
        kind = "shown"
    elif own in question["right"]:
        verdict, kind = f"You said {letter(own)}: right.", "right"
    else:
        verdict, kind = f"You said {letter(own)}; the right answer is {right}.", "wrong"
    return (
        f'<div class="lesson"><p class="lesson-feedback {kind}"><b>{esc(verdict)}</b> '
        f"{esc(question['answer'])}</p>{distribution_html(question, counts, True, own)}</div>"
    )


CLASS_QUESTION_CSS = (Path(__file__).resolve().parents[1] / "static" / "class_question.css").read_text()


def sheet() -> InlineStyleSheet:
    return InlineStyleSheet(css=CSS + LESSON_CSS + CLASS_QUESTION_CSS)


class QuestionCard:
    """A student's card: the open question, the answer, the reveal. `answered(question_id, choice)` is called
    with each answer the student gives (choice None when refused)."""

    def __init__(self, answered=lambda question_id, choice: None):
        self.answered = answered
        texts = sheet()
        self.text = text_panel("", texts, name="class-question", **WIDTH)
        self.choices = RadioGroup(labels=["-"], active=None, name="class-answer", margin=(0, 5, 4, 12))
        self.status = text_panel("", texts, name="class-answer-status", **WIDTH)
        self.layout = column(
            self.text,
            self.choices,
            self.status,
            name="class-question-card",
            visible=False,
            styles=PANEL,
            **WIDTH,
        )
        self.message: dict | None = None  # the question message on show
        self.own: int | None = None  # the student's answer to it
        self._writing = False
        self.choices.on_change("active", self._picked)

    @property
    def question_id(self) -> str | None:
        m = self.message
        return m["question"]["id"] if m and m.get("question") else None

    def show(self, message: dict | None, own: int | None = None) -> None:
        """Show a question message (None or closed: nothing); `own`, the student's answer to it (kept when
        the same question comes again)."""
        if message is None or message["state"] == CLOSED:
            self.message, self.own = message, None
            set_changed(self.layout, visible=False)
            return
        question = message["question"]
        if question["id"] != self.question_id:
            self.own = own
        self.message = message
        self._writing = True
        try:
            set_changed(self.text, text=question_html(question, "Your teacher asks the class"))
            set_changed(self.choices, labels=choice_labels(question), active=self.own)
            set_changed(self.choices, disabled=message["state"] == REVEALED)
        finally:
            self._writing = False
        if message["state"] == REVEALED:
            set_changed(self.status, text=revealed_html(question, message["counts"], self.own))
        else:
            set_changed(self.status, text=self._said())
        set_changed(self.layout, visible=True)

    def _said(self, refused: str = "") -> str:
        if refused:
            return f'<p class="alert" role="alert">{esc(refused)}</p>'
        if self.own is None:
            return "<p>Pick an answer: you can change it until your teacher shows the answer.</p>"
        return (
            f"<p>Your answer, {letter(self.own)}, is in. You can change it until your teacher shows the "
            "answer; no one else sees it.</p>"
        )

    def _picked(self, attr, old, new) -> None:
        if self._writing:
            return
        m = self.message
        try:
            if m is None or m["state"] != OPEN:
                raise ValueError("This question is not open for answers any more.")
            choice = None if new is None else answer_index(m["question"], new)
        except ValueError as exc:
            self._writing = True
            try:
                self.choices.active = self.own  # the answer stays what it was
            finally:
                self._writing = False
            self.status.text = self._said(str(exc))
            return
        self.own = choice
        self.answered(m["question"]["id"], choice)
        self.status.text = self._said()


def bank_options() -> list[tuple[str, str]]:
    return [(TOP_KEY, "Which key will the query's row weigh most in the head I am about to send?")] + [
        (name, f"{k}. {q.title}") for k, (name, q) in enumerate(QUESTIONS.items(), start=1)
    ]


class QuestionDesk:
    """The teacher's part: pick a question, ask it, watch the answers come in, reveal, close."""

    def __init__(self, bus, state):
        self.bus, self.state = bus, state
        buttons = InlineStyleSheet(css=PRIMARY_CSS)
        self.pick = Select(
            title="Question for the class",
            value=TOP_KEY,
            options=bank_options(),
            name="class-ask-pick",
            width=300,
        )
        self.ask_button = primary("Ask the class", "class-ask", buttons)
        self.reveal_button = Button(label="Reveal the answer", name="class-reveal", disabled=True)
        self.close_button = Button(label="Close the question", name="class-close", disabled=True)
        self.ask_button.on_click(lambda event: self.ask())
        self.reveal_button.on_click(lambda event: self.reveal())
        self.close_button.on_click(lambda event: self.close())
        texts = sheet()
        self.asked = text_panel("", texts, name="class-asked", **WIDTH)
        # what could not be done, and why (no room while empty)
        self.alert = text_panel("", texts, name="class-ask-alert", margin=(0, 5, 0, 5), **WIDTH)
        self.count = text_panel("", texts, name="class-answered", **WIDTH)
        self.table = text_panel("", texts, name="class-answers-table", **WIDTH)
        self.source = ColumnDataSource({"choice": [], "students": [], "colour": []}, name="class-answers")
        self.chart = figure(
            y_range=FactorRange(),
            sizing_mode="stretch_width",
            min_width=FIGURE_MIN_WIDTH,
            max_width=460,
            height=170,
            toolbar_location=None,
            tools="",
            name="class-answers-chart",
            title="Answers so far",
        )
        self.chart.hbar(y="choice", right="students", height=0.7, source=self.source, color="colour")
        self.chart.x_range.start = 0
        self.chart.xaxis.axis_label = "students"
        self.chart.xaxis.ticker = AdaptiveTicker(min_interval=1)  # whole students
        self.chart.y_range.factors = []
        self.chart.x_range.range_padding = 0.05
        drop_grid(self.chart)
        self.results = column(self.count, self.chart, self.table, visible=False, **WIDTH)
        self.layout = column(
            self.pick,
            # two rows, not one of three: a phone's width takes two buttons side by side, and a Bokeh row
            # is as wide as its buttons
            row(self.ask_button, self.reveal_button, styles=WRAP),
            row(self.close_button, styles=WRAP),
            self.alert,
            self.asked,
            self.results,
            name="class-question-desk",
            styles=PANEL,
            **WIDTH,
        )
        self.shown: tuple | None = None
        self.refresh({"students": 0, "tally": None})

    # -- the teacher's buttons -----------------------------------------------------------------------------

    def _link_down(self) -> bool:
        """Whether the link between the processes is down (then nothing is done, and the desk says so)."""
        down = not self.bus.link_up
        set_changed(
            self.alert,
            text='<p class="alert" role="alert">Not done: the link between the server processes is down. Try '
            "again once it is back.</p>"
            if down
            else "",
        )
        return down

    def ask(self) -> None:
        if self._link_down():
            return
        name = self.pick.value
        if name == TOP_KEY:
            question = ask_top_key(self.state.head, self.state.labels, self.state.query)
        elif name in QUESTIONS:
            question = ask(name)
        else:
            self.alert.text = '<p class="alert" role="alert">Pick a question of the list first.</p>'
            return
        self.bus.publish_question(question_message(OPEN, question))

    def reveal(self) -> None:
        m = self.bus.question
        if m is None or m["state"] != OPEN or self._link_down():
            return
        counts = self.bus.class_view().get("tally") or [0] * len(m["question"]["choices"])
        self.bus.publish_question(question_message(REVEALED, m["question"], counts))

    def close(self) -> None:
        if self.bus.question is not None and self.bus.question["state"] != CLOSED and not self._link_down():
            self.bus.publish_question(question_message(CLOSED, None))

    # -- kept current by the class view's refresh (widgets/class_view.py) ----------------------------------

    def refresh(self, view: dict) -> None:
        m = self.bus.question
        state = m["state"] if m else CLOSED
        question = m["question"] if m and state != CLOSED else None
        counts = (m["counts"] if state == REVEALED else view.get("tally")) if question else None
        key = (state, question and question["id"], tuple(counts or ()), view["students"])
        if key == self.shown:
            return
        self.shown = key
        set_changed(self.reveal_button, disabled=state != OPEN)
        set_changed(self.close_button, disabled=state == CLOSED)
        if question is None:
            set_changed(
                self.asked,
                text="<p>No question open. Pick one and ask: every student's page shows it "
                "and takes one answer; you see the counts, never who answered what.</p>",
            )
            set_changed(self.results, visible=False)
            return
        revealed = state == REVEALED
        choices = "".join(f"<li>{esc(c)}</li>" for c in choice_labels(question))
        answer = f'<p class="lesson-feedback shown">{esc(question["answer"])}</p>' if revealed else ""
        heading = "Shown to the class" if revealed else "Asked"
        set_changed(self.asked, text=question_html(question, heading, f"<ul>{choices}</ul>{answer}"))
        counts = counts or [0] * len(question["choices"])
        answered = sum(counts)
        waiting = "" if revealed else " (answers can change until you reveal)"
        set_changed(
            self.count, text=f"<p><b>{answered}</b> of {view['students']} students answered{waiting}.</p>"
        )
        letters = [letter(k) for k in range(len(question["choices"]))]
        if list(self.chart.y_range.factors) != letters[::-1]:
            self.chart.y_range.factors = letters[::-1]  # A at the top
        colours = [
            RIGHT_COLOUR if revealed and k in question["right"] else OTHER_COLOUR for k in range(len(letters))
        ]
        data = {"choice": letters, "students": counts, "colour": colours}
        if data != self.source.data:
            self.source.data = data
        set_changed(self.chart.title, text="The class's answers" if revealed else "Answers so far")
        set_changed(self.table, text=distribution_html(question, counts, revealed))
        set_changed(self.results, visible=True)
