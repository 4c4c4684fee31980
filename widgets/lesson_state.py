"""The lesson's part of a HeadState: the walk through the six steps, the open question, the page's count.

`HeadState` inherits `Lessons`, so a walk step or a question is one more change of the same state (one
computation, one redraw, one message) and `HeadState.act` takes the lesson's actions as data, as
static/explorer.js `apply` does (static/lessons.js holds the port; tests/test_actions.py the parity):

    {"do": "walk-open"}  {"do": "walk-next"}  {"do": "walk-prev"}  {"do": "walk-to", "step"}  (0 leaves)
    {"do": "walk-leave"} (the query goes back to the one the walk began with)
    {"do": "walk-offer"} (the query for which the step on show does something)
    {"do": "ask", "name"} ('' closes the question)  {"do": "predict", "value"}  {"do": "reveal"}
    {"do": "next-question"}  {"do": "close-question"}

Asking a question loads the head before its change (the question's `before`); a prediction, or Reveal,
loads the head after it (`after`, a preset whose note then shows) and counts the prediction. Once the
answer is on show, any other change of the head closes the question (its feedback would no longer be
about the head on screen). An action that does not apply (Next with no walk open) changes nothing.
"""

from __future__ import annotations

import param

from core.lessons import QUESTIONS, STEPS, check, judge, pose, walk_step
from core.presets import PRESETS, Preset

LESSON_PARAMS = ("walk", "walk_from", "question", "prediction", "revealed", "right", "answered")
LESSON_ACTIONS = (
    "walk-open",
    "walk-next",
    "walk-prev",
    "walk-to",
    "walk-leave",
    "walk-offer",
    "ask",
    "predict",
    "reveal",
    "next-question",
    "close-question",
)


def setup_changes(setup: Preset) -> dict:
    """A question's head as one change: a preset's name only when it is one of the presets."""
    from widgets.state import preset_changes  # (state imports this module)

    return preset_changes(setup) | {"preset": setup.name if setup.name in PRESETS else ""}


class Lessons(param.Parameterized):
    """The walk, the open question and the count of predictions, as parameters of the head's state."""

    walk = param.Integer(default=0, bounds=(0, STEPS), doc="The walk's step on show (0: no walk)")
    walk_from = param.Integer(default=-1, doc="The query the walk began with (-1: no walk)")
    question = param.String(default="", doc="The open question of core.lessons.QUESTIONS, or ''")
    prediction = param.Parameter(default=None, doc="The prediction made (a choice's index or a number)")
    revealed = param.Boolean(default=False, doc="The answer is on show")
    right = param.Integer(default=0, doc="Predictions right on this page")
    answered = param.Integer(default=0, doc="Predictions made on this page")

    def lesson_act(self, action: dict) -> bool:
        """One of LESSON_ACTIONS; True when it changed something."""
        do = action["do"]
        if do.startswith("walk"):
            return self._walk_act(do, action)
        if do == "ask":
            return self.ask(action["name"])
        if do == "predict":
            return self.predict(action.get("value"))
        if do == "reveal":
            return self.predict(None, reveal=True)
        if do == "next-question":
            names = list(QUESTIONS)
            following = names.index(self.question) + 1 if self.question else 0
            return self.ask(names[following % len(names)])
        if do == "close-question":
            return bool(self.question) and self.apply(question="", prediction=None, revealed=False)
        raise ValueError(f"unknown action {do!r}")

    # -- the walk ----------------------------------------------------------------------

    def _walk_act(self, do: str, action: dict) -> bool:
        if do == "walk-open":
            return not self.walk and self.apply(walk=1, walk_from=self.query)
        if do == "walk-to":
            return self.walk_to(action.get("step"))
        if not self.walk:
            return False
        if do == "walk-next":
            return self.walk < STEPS and self.apply(walk=self.walk + 1)
        if do == "walk-prev":
            return self.walk > 1 and self.apply(walk=self.walk - 1)
        if do == "walk-leave":
            back = self.walk_from if 0 <= self.walk_from < self.head.T else self.query
            return self.apply(walk=0, walk_from=-1, query=back)
        if do == "walk-offer":
            offer = walk_step(self.head, self.query, self.labels, self.walk).offer
            return offer is not None and self.apply(query=offer)
        raise ValueError(f"unknown action {do!r}")

    def walk_to(self, step) -> bool:
        """Open the walk at `step` (1 to STEPS), or leave it (0), as a link's walk=K does."""
        ok = isinstance(step, (int, float)) and not isinstance(step, bool) and step in range(STEPS + 1)
        if not ok:  # (2.0 counts as 2, as it does in JavaScript)
            return self.refuse(f"the walk has steps 1 to {STEPS}, and 0 to leave it")
        step = int(step)
        if step == 0:
            return self._walk_act("walk-leave", {}) if self.walk else False
        return self.apply(walk=step, walk_from=self.walk_from if self.walk else self.query)

    # -- questions -------------------------------------------------------------------------

    def ask(self, name) -> bool:
        """Open question `name` on the head before its change ('' closes the open question)."""
        if name == "":
            return self.lesson_act({"do": "close-question"})
        if name not in QUESTIONS:
            return self.refuse(f"there is no question called {name!r}; try one of {', '.join(QUESTIONS)}")
        before = setup_changes(QUESTIONS[name].before)
        return self.apply(**before, question=name, prediction=None, revealed=False)

    def predict(self, value, reveal: bool = False) -> bool:
        """Make the change of the open question, with the student's prediction (or none: Reveal)."""
        if not self.question or self.revealed:
            return False
        posed = pose(self.question)
        if not reveal:
            why = check(posed, value)
            if why:
                return self.refuse(why)
        counted = {} if reveal else {"answered": self.answered + 1, "right": self.right + judge(posed, value)}
        value = None if reveal else (float(value) if posed.kind == "estimate" else int(value))
        after = setup_changes(QUESTIONS[self.question].after)
        return self.apply(**after, question=self.question, prediction=value, revealed=True, **counted)
