"""What the lesson shows, as plain data: the panel's text, the cells each figure spotlights, the blend's
glow, and which of the lesson's controls are on show. Pure, like widgets/viewdata.py (which adds it to the
view data); static/lessons.js `view` builds the same dict (tests/test_actions.py holds them equal).
"""

from __future__ import annotations

import html
from typing import NamedTuple

from core.attention import Head
from core.lessons import QUESTIONS, STEPS, feedback, pose, walk_step
from core.presets import PRESETS

# The matrices whose cells the walk spotlights (as widgets/viewdata.py names them).
MATRICES = ("weights", "scores", "scaled", "Q", "K", "V")
# How much wider than its link the glow under a weighted line is, in pixels.
GLOW = 7.0


class Lesson(NamedTuple):
    """The lesson's part of a state (widgets/lesson_state.py), as a key for caches."""

    walk: int = 0
    question: str = ""
    prediction: float | int | None = None
    revealed: bool = False
    right: int = 0
    answered: int = 0


NO_LESSON = Lesson()


def lesson_of(state) -> Lesson:
    return Lesson(state.walk, state.question, state.prediction, state.revealed, state.right, state.answered)


def spotlight(cells, rows: int, cols: int) -> dict:
    """Rectangles over every cell of a rows × cols matrix not in `cells`, which they dim: runs of a row,
    the same runs of neighbouring rows joined into one ({} columns when no cell is spotlit)."""
    out = {"x": [], "y": [], "width": [], "height": []}
    if not cells:
        return out
    lit = set(cells)
    runs = []
    for r in range(rows):
        line, start = [], None
        for c in range(cols + 1):
            dark = c < cols and (r, c) not in lit
            if dark and start is None:
                start = c
            elif not dark and start is not None:
                line.append((start, c))
                start = None
        runs.append(line)
    r = 0
    while r < rows:
        end = r + 1
        while end < rows and runs[end] == runs[r]:
            end += 1
        for a, b in runs[r]:
            out["x"].append((a + b - 1) / 2)
            out["y"].append((r + end - 1) / 2)
            out["width"].append(float(b - a))
            out["height"].append(float(end - r))
        r = end
    return out


def _said(text: str) -> str:
    return html.escape(text)


def walk_html(step, labels, i: int) -> tuple[str, str]:
    """The walk's part of the panel, and what a screen reader is told."""
    head = f"Step {step.number} of {STEPS}"
    lines = "<br>".join(_said(line) for line in step.lines)
    text = (
        f'<p class="lesson-head"><b>{head}</b> · {_said(step.name)} for \'{_said(labels[i])}\'</p>'
        f'<p class="lesson-lead">{_said(step.lead)}</p><p class="lesson-lines">{lines}</p>'
    )
    return text, f"{head}, {step.name}. {step.lead}"


def question_html(lesson: Lesson, notes) -> tuple[str, str, str]:
    """The question's part of the panel (above its answers), the answer's (below them: the feedback and the
    note that explains it, once revealed), and what a screen reader is told."""
    posed = pose(lesson.question)
    number = list(QUESTIONS).index(lesson.question) + 1
    asked = (
        f'<p class="lesson-head"><b>Predict, then check</b> · {_said(posed.title)} '
        f"(question {number} of {len(QUESTIONS)})</p>"
        + (f"<p>{_said(posed.context)}</p>" if posed.context else "")
        + (f"<p><b>The change:</b> {_said(posed.change)}.</p>" if posed.change else "")
        + f'<p class="lesson-ask">{_said(posed.prompt)}</p>'
    )
    if not lesson.revealed:
        return asked, "", posed.prompt
    said = feedback(posed, lesson.prediction)
    mark = "shown" if lesson.prediction is None else "right" if said.startswith("Right") else "wrong"
    after = QUESTIONS[lesson.question].after.name
    note = notes(after) if after in PRESETS else ""
    answer = f'<p class="lesson-feedback {mark}">{_said(said)}</p>{note}'
    return asked, answer, said


INTRO = (
    '<p class="lesson-intro">Walk through the six steps for the chosen query, or pick a question: predict '
    "what a change will do, then see it happen.</p>"
)


def lesson_view(head: Head, i: int, labels, lesson: Lesson, blend: dict, notes) -> dict:
    """The lesson's view data for query i of `head`; `blend` is the blend plot's view data, `notes(preset
    name)` a preset's note as HTML (the explanation shown with the answer). Its panel's three texts: the
    question (or, with nothing open, what the panel is for), the answer with the count of predictions
    right, the walk's step."""
    labels = tuple(str(x) for x in labels)
    T, d = head.T, head.d
    shape = {"weights": (T, T), "scores": (T, T), "scaled": (T, T), "Q": (T, d), "K": (T, d), "V": (T, d)}
    spot = {name: spotlight((), *shape[name]) for name in MATRICES}
    glow = {"x0": [], "y0": [], "x1": [], "y1": [], "width": []}
    ring = {"x": [], "y": []}
    asked, answer, walk, said = "", "", "", []
    offer, kind, choices = "", "", []
    if lesson.question:
        asked, answer, say = question_html(lesson, notes)
        said.append(say)
        posed = pose(lesson.question)
        kind, choices = posed.kind, list(posed.choices)
    if lesson.walk:
        step = walk_step(head, i, labels, lesson.walk)
        for name, cells in step.cells.items():
            spot[name] = spotlight(cells, *shape[name])
        if step.blend:
            glow, ring = _glow(blend)
        if step.offer is not None:
            offer = f"Show this step for '{labels[step.offer]}'"
        walk, say = walk_html(step, labels, i)
        said.append(say)
    if not asked and not walk:
        asked = INTRO
    if lesson.answered:
        answer += (
            f'<p class="lesson-score">{lesson.right} of {lesson.answered} prediction'
            f"{'s' if lesson.answered != 1 else ''} right on this page</p>"
        )
    return {
        "question": _panel(asked),
        "answer": _panel(answer),
        "walk": _panel(walk),
        "say": " ".join(said),
        "spotlight": spot,
        "glow": glow,
        "ring": ring,
        "controls": {
            "walk": bool(lesson.walk),
            "prev": lesson.walk > 1,  # the walk's Previous and Next step have somewhere to go
            "next": 0 < lesson.walk < STEPS,
            "offer": offer,
            "question": lesson.question,
            "kind": kind,
            "choices": choices,
            "revealed": lesson.revealed,
        },
    }


def _panel(text: str) -> str:
    return f'<div class="lesson">{text}</div>' if text else ""


def _glow(blend: dict) -> tuple[dict, dict]:
    """Under each weighted line from the output to a value (`blend`: the blend plot's view data), a wider
    glow, and a ring round the output."""
    links, weights = blend["links"], blend["values"]["weight"]
    keep = [j for j, w in enumerate(weights) if w != 0]
    glow = {name: [links[name][j] for j in keep] for name in ("x0", "y0", "x1", "y1")}
    glow["width"] = [links["width"][j] + GLOW for j in keep]
    return glow, {"x": list(blend["output"]["x"]), "y": list(blend["output"]["y"])}
