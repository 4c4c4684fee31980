"""Lessons: a walk through the six steps, and a bank of questions that ask for a prediction first.

Pure functions of heads and token labels, as core/notes.py: every number a sentence quotes, and every
answer counted right, is computed from a head, never typed. static/lessons.js is the port (the same
sentences, character for character); tests/test_lessons.py holds the two equal and checks every answer
against numpy.

The walk
    walk_step(head, i, labels, k) -> WalkStep   step k (1 to 6) for query i: its sentence, whether it
                                                does anything for this query (and which query it
                                                would), and the cells of each matrix it concerns.

The bank (for the page's questions and for a class answering together)
    QUESTIONS                      every question by name, in the bank's order (`exercise=NAME` links)
    pose(name) -> Posed            a question put on its own heads: its prompt, kind and choices, what
                                   counts as right (from the head after the change)
    pose_top_key(head, labels, i)  "which key will row i weigh most?" for any head (the one about to be
                                   sent, say); the page shows nothing of it before the answer
    judge(posed, prediction)       True when the prediction is right
    check(posed, prediction)       '' or why the prediction cannot be used ("pick one of the answers")
    feedback(posed, prediction)    the prediction beside the head's numbers (prediction None: revealed
                                   without one)

A prediction is the index of a choice, or a number for the kind "estimate".
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from core.attention import Head
from core.options import SWITCHES
from core.presets import (
    CHAPTER,
    COLD,
    EXERCISE_1,
    EXERCISE_3_SCALED,
    EXERCISE_3_UNSCALED,
    HOT,
    NO_MASK,
    NO_SCALING,
    NO_SOFTMAX,
    SOFT,
    SOFT_TRACE,
    TIED_QK,
    TIRED,
    TIRED_TRACE,
    TOP_1,
    Preset,
)
from core.trace import fmt, fmt_vector, trace

STEPS = 6
# Two weights count as one tie within this (the bank's ties are exact: two tokens with one vector).
TIE = 1e-9
# "Stays the same": the weight moves by less than the page's last shown digit.
SAME_AS_SHOWN = 0.005
# An estimate counts as right within this of the head's number.
ESTIMATE_TOLERANCE = 0.1
# Where an output lands, in the blend plot: on a value point, inside the values' hull, outside it.
ON_A_VALUE, INSIDE, OUTSIDE = 0, 1, 2
# An estimate's slider: low, high, step, and where it starts (the middle, not the weight before the change).
ESTIMATE_SLIDER = (0.0, 1.0, 0.01, 0.5)
# How close (relative to the values' spread) an output must be to a value to count as on it.
NEAR = 1e-9


# --- small helpers, each ported as it is --------------------------------------------


def short(x: float) -> str:
    """A setting as a person writes it: fmt's two decimals without trailing zeros (4, 0.4, 0.05)."""
    text = fmt(x)
    if "." in text and "e" not in text:
        text = text.rstrip("0").rstrip(".")
    return text


def quoted(labels, j: int) -> str:
    return f"'{labels[j]}'"


def top_keys(head: Head, i: int) -> list[int]:
    """The keys row i weighs most: one, or several tied."""
    w = head.weights[i]
    m = float(w.max())
    return [j for j in range(head.T) if float(w[j]) >= m - TIE]


def names(labels, keys, i: int | None = None) -> str:
    """'a', 'b' and 'c' (a key equal to i is "itself")."""
    said = ["itself" if j == i else quoted(labels, j) for j in keys]
    if len(said) <= 1:
        return "".join(said)
    return ", ".join(said[:-1]) + " and " + said[-1]


# --- the walk -----------------------------------------------------------------------


@dataclass(frozen=True)
class WalkStep:
    number: int
    name: str  # as core.trace names it: project, scores, scale, mask, softmax (or its stand-in), blend
    lead: str  # what the step does, in words, with the head's numbers
    lines: tuple[str, ...]  # the step's arithmetic, as the steps panel prints it
    idle: bool  # the step changes nothing for this query
    offer: int | None  # a query for which it does (when idle), else None
    cells: dict[str, list[tuple[int, int]]]  # matrix name (as in view data) → its (row, column) cells
    blend: bool  # the weighted lines to the output point


def walk_step(head: Head, i: int, labels, k: int) -> WalkStep:
    """Step k (1 to 6) of the walk for query i, on whatever head is given."""
    labels = tuple(str(x) for x in labels)
    t = trace(head, i, labels)
    step = t.steps[k - 1]
    T, d, me = head.T, head.d, labels[i]
    row = [(i, j) for j in range(T)]
    idle, offer, blend = False, None, False
    if k == 1:
        lead = (
            f"Every token's vector is multiplied by W_Q, W_K and W_V: a query (what it looks for), a key "
            f"(what it offers) and a value (what it hands over). '{me}' looks for q_{me} = "
            f"{fmt_vector(head.Q[i])}."
        )
        cells = {"Q": [(i, c) for c in range(d)], "K": _all(T, d), "V": _all(T, d)}
    elif k == 2:
        s = head.scores[i]
        j = int(np.argmax(s))
        lead = (
            f"The query of '{me}' is dotted with every key, one score per token. The largest, "
            f"{fmt(s[j])}, is on {quoted(labels, j)}: its key points most the way the query does."
        )
        cells = {"scores": row}
    elif k == 3:
        tau = head.temperature
        divides = head.scaling and d > 1
        if not divides and tau == 1:
            idle = True
            why = "÷√d is switched off" if not head.scaling else "d = 1, so √d = 1"
            lead = f"{why}: the scores go on as they are."
        else:
            parts = [f"√{d} = {fmt(math.sqrt(d), 3)}"] if divides else []
            if tau != 1:
                parts.append(f"the temperature τ = {short(tau)}")
            divisor = (math.sqrt(d) if divides else 1.0) * tau
            gaps = "shrink" if divisor > 1 else "grow" if divisor < 1 else "stay as they were"
            lead = f"Every score is divided by {' and by '.join(parts)}: the order stays, the gaps {gaps}."
        cells = {"scaled": row}
    elif k == 4:
        later = [j for j in range(T) if head.future[i, j]]
        if not head.causal:
            idle = True
            lead = f"The mask is off: '{me}' keeps every key, the later ones too."
            cells = {"scaled": row}
        elif later:
            lead = (
                f"{names(labels, later)} come{'s' if len(later) == 1 else ''} after '{me}': "
                f"{'its score becomes' if len(later) == 1 else 'their scores become'} −∞, so "
                f"{'it gets' if len(later) == 1 else 'they get'} no weight at all."
            )
            cells = {"scaled": [(i, j) for j in later]}
        else:
            idle = True
            lead = f"No token comes after '{me}', so the mask changes nothing in its row."
            if T > 1:
                offer = 0
                # (not "it": a token is often called 'it')
                lead += f" The mask matters most for '{labels[0]}': it hides {T - 1} later token" + (
                    "s." if T > 2 else "."
                )
            cells = {}
    elif k == 5:
        w = head.weights[i]
        j = int(np.argmax(w))
        if head.normaliser == "raw":
            lead = (
                f"No softmax: the scores themselves are the weights. Those of '{me}' add up to "
                f"{fmt(t.checks.row_sum)}, not 1, and may be negative."
            )
        elif head.normaliser == "top1":
            lead = f"Top-1: all the weight of '{me}' goes to its largest score, on {quoted(labels, j)}."
        else:
            lead = (
                f"The softmax makes each score positive (exp) and divides by their sum, so the weights of "
                f"'{me}' add up to 1. The most, {fmt(w[j])}, goes to {quoted(labels, j)}."
            )
        cells = {"weights": row}
    else:
        w = head.weights[i]
        j = int(np.argmax(w))
        lead = (
            f"The output of '{me}' is every value times its weight, added up: {fmt_vector(head.output[i])}, "
            f"pulled most towards the value of {quoted(labels, j)}, {fmt_vector(head.V[j])}."
        )
        cells = {"weights": row}
        blend = True
    return WalkStep(k, step.name, lead, tuple(step.lines), idle, offer, cells, blend)


def _all(rows: int, cols: int) -> list[tuple[int, int]]:
    return [(r, c) for r in range(rows) for c in range(cols)]


# --- the bank ---------------------------------------------------------------------------

KINDS = ("key", "direction", "estimate", "where", "rows")
DIRECTIONS = ("goes up", "goes down", "stays the same")
WENT = ("went up", "went down", "stayed the same")
WHERE = ("exactly on one of the values", "inside the values' hull", "outside the values' hull")


@dataclass(frozen=True)
class Question:
    """A change to a head, and what to predict about it.

    `before` is the head the page shows while the student predicts, `after` the head once the change is
    made (a preset of core/presets.py, so the page shows its note then). The query is `after.query`;
    `key` names the key whose weight "direction" and "estimate" ask about. `context` is a sentence of
    setting, without numbers of the head's.
    """

    name: str
    title: str
    kind: str
    before: Preset
    after: Preset
    key: str | None = None
    context: str = ""


def _moved(p: Preset, token: str, x) -> Preset:
    X = list(p.X)
    X[p.tokens.index(token)] = tuple(float(v) for v in x)
    return replace(p, name="", X=tuple(X))


def _untraced(p: Preset) -> Preset:
    """A thought-experiment sentence with 'it' as the chapter has it: a pronoun and nothing else."""
    it = p.tokens.index("it")
    return _moved(p, "it", [0.0] * (len(p.X[it]) - 1) + [p.X[it][-1]])


def _blank_last(p: Preset) -> Preset:
    """A sentence whose last word has no features yet (its query is 0: it reads every word alike)."""
    return _moved(p, p.tokens[-1], [0.0] * len(p.X[-1]))


QUESTIONS: dict[str, Question] = {
    q.name: q
    for q in (
        Question(
            "exercise-1",
            EXERCISE_1.title,
            "key",
            CHAPTER,
            EXERCISE_1,
            context="Exercise 1 of the chapter: 'it' is made to look exactly like 'sat'.",
        ),
        Question(
            "exercise-3-unscaled",
            EXERCISE_3_UNSCALED.title,
            "estimate",
            CHAPTER,
            EXERCISE_3_UNSCALED,
            key="cat",
            context="Exercise 3 of the chapter, first half: every token vector four times as long, no ÷√d.",
        ),
        Question(
            "exercise-3-scaled",
            EXERCISE_3_SCALED.title,
            "direction",
            EXERCISE_3_UNSCALED,
            EXERCISE_3_SCALED,
            key="cat",
            context="Exercise 3, second half: the same X × 4, with ÷√d switched back on.",
        ),
        Question(
            "no-scaling",
            NO_SCALING.title,
            "direction",
            CHAPTER,
            NO_SCALING,
            key="cat",
            context="What breaks: the scores go into the softmax without the division by √d.",
        ),
        Question(
            "tied-qk",
            TIED_QK.title,
            "key",
            CHAPTER,
            replace(TIED_QK, query="it"),
            context="What breaks: one matrix for queries and keys, so each token's key is its own query.",
        ),
        Question(
            "no-softmax",
            NO_SOFTMAX.title,
            "where",
            replace(NO_SOFTMAX, name="", options=NO_SOFTMAX.options.replace(normaliser="softmax")),
            NO_SOFTMAX,
            context="What breaks: the raw scores are used as weights. 'dog' has the vector of 'cat', 'not' "
            "minus it.",
        ),
        Question(
            "no-mask",
            NO_MASK.title,
            "key",
            replace(CHAPTER, query="The"),
            NO_MASK,
            context="What breaks: the causal mask comes off, so a token may read the ones after it.",
        ),
        Question(
            "future-rows",
            "Rows cannot see the future",
            "rows",
            CHAPTER,
            _moved(CHAPTER, "sat", (0.0, 1.0, 1.0)),
            context="With the mask on, 'sat' is made more noun-like. Think of every row of the weights.",
        ),
        Question(
            "top-1",
            TOP_1.title,
            "where",
            CHAPTER,
            TOP_1,
            context="What breaks: instead of blending, each row takes the value of its largest score alone.",
        ),
        Question(
            "temperature-low",
            COLD.title,
            "estimate",
            CHAPTER,
            COLD,
            key="cat",
            context="The scores are divided by a temperature τ below 1 before the softmax.",
        ),
        Question(
            "temperature-high",
            HOT.title,
            "direction",
            CHAPTER,
            HOT,
            key="cat",
            context="The scores are divided by a temperature τ above 1 before the softmax.",
        ),
        Question(
            "tired",
            TIRED.title,
            "key",
            _blank_last(TIRED),
            TIRED,
            context="'… because it was tired', with the mask on: the adjective comes last and reads back. "
            "x's features: animate, soft, noun, pronoun. The last word is given its own: 'tired' is animate.",
        ),
        Question(
            "soft",
            SOFT.title,
            "key",
            _blank_last(SOFT),
            SOFT,
            context="'… because it was soft', with the mask on: the adjective comes last and reads back. "
            "x's features: animate, soft, noun, pronoun. The last word is given its own: 'soft' is soft.",
        ),
        Question(
            "tired-trace",
            TIRED_TRACE.title,
            "key",
            _untraced(TIRED_TRACE),
            TIRED_TRACE,
            context="A thought experiment, the mask off as an encoder reads: an earlier layer has moved a "
            "trace of 'tired' (animate) into 'it'. x's features: animate, soft, noun, pronoun.",
        ),
        Question(
            "soft-trace",
            SOFT_TRACE.title,
            "key",
            _untraced(SOFT_TRACE),
            SOFT_TRACE,
            context="A thought experiment, the mask off as an encoder reads: an earlier layer has moved a "
            "trace of 'soft' into 'it'. x's features: animate, soft, noun, pronoun.",
        ),
    )
}


@dataclass(frozen=True)
class Posed:
    """A question put on its heads: what the page shows, and what counts as right."""

    name: str
    title: str
    kind: str
    labels: tuple[str, ...]
    query: int
    key: int | None
    before: Head
    after: Head
    context: str
    change: str  # what changes, worked out from the two setups ('' when nothing does)
    prompt: str  # the question, with the numbers of the head before the change
    choices: tuple[str, ...]  # () for an estimate
    estimate: tuple[float, float, float, float] | None  # ESTIMATE_SLIDER for an estimate
    right: tuple[int, ...]  # the choices that are right (from the head after the change)
    value: float | None  # an estimate's right value


def describe_change(before: Preset, after: Preset) -> str:
    """What differs between two setups, in words: token vectors, matrices, switches ('' for none)."""
    parts = []
    if before.tokens != after.tokens:
        parts.append("the tokens become " + ", ".join(f"'{t}'" for t in after.tokens))
    else:
        for t, (b, a) in enumerate(zip(before.X, after.X)):
            if tuple(b) != tuple(a):
                same = [u for u in range(len(after.X)) if u != t and tuple(after.X[u]) == tuple(a)]
                parts.append(
                    f"x_{after.tokens[t]} goes from {fmt_vector(b)} to {fmt_vector(a)}"
                    + (f", the vector of '{after.tokens[same[0]]}'" if same else "")
                )
    for name in ("W_Q", "W_K", "W_V"):
        if getattr(before, name) != getattr(after, name):
            parts.append(f"{name} changes")
    for s in SWITCHES:
        b, a = getattr(before.options, s.name), getattr(after.options, s.name)
        if b == a:
            continue
        if s.kind == "toggle":
            text = "on" if a else "off"
        elif s.kind == "choice":
            text = s.choice_labels[s.choices.index(a)]
        else:
            text = short(a)
        parts.append(f"{s.label}: {text}")
    return "; ".join(parts)


def convex_hull(xs, ys) -> tuple[list[float], list[float]]:
    """The corners of the points' convex hull, anticlockwise (Andrew's monotone chain); collinear points
    are dropped, duplicates too. (The blend plot draws it: widgets/viewdata.py.)"""
    pts = sorted(set(zip((float(v) for v in xs), (float(v) for v in ys))))
    if len(pts) <= 2:
        return [p[0] for p in pts], [p[1] for p in pts]

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list = []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    upper: list = []
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    hull = lower[:-1] + upper[:-1]
    return [p[0] for p in hull], [p[1] for p in hull]


def inside_convex(hx, hy, x: float, y: float) -> bool:
    """Whether (x, y) lies in the convex polygon (hx, hy) (anticlockwise, as convex_hull gives it), its
    boundary included, with a tolerance for rounding."""
    n = len(hx)
    scale = max([1.0] + [abs(v) for v in (*hx, *hy, x, y)])
    tol = 1e-9 * scale * scale
    if n == 1:
        return abs(x - hx[0]) <= 1e-9 * scale and abs(y - hy[0]) <= 1e-9 * scale
    if n == 2:
        cross = (hx[1] - hx[0]) * (y - hy[0]) - (hy[1] - hy[0]) * (x - hx[0])
        dot = (x - hx[0]) * (hx[1] - hx[0]) + (y - hy[0]) * (hy[1] - hy[0])
        length2 = (hx[1] - hx[0]) ** 2 + (hy[1] - hy[0]) ** 2
        return abs(cross) <= tol and -tol <= dot <= length2 + tol
    for k in range(n):
        j = (k + 1) % n
        if (hx[j] - hx[k]) * (y - hy[k]) - (hy[j] - hy[k]) * (x - hx[k]) < -tol:
            return False
    return True


def plotted(head: Head, i: int) -> tuple[list[float], list[float], float, float]:
    """The values and row i's output in the blend plot's first two coordinates (y = 0 when d = 1)."""
    xs = [float(v) for v in head.V[:, 0]]
    ys = [float(v) for v in head.V[:, 1]] if head.d > 1 else [0.0] * head.T
    out = head.output[i]
    return xs, ys, float(out[0]), float(out[1]) if head.d > 1 else 0.0


def on_value(head: Head, i: int) -> int | None:
    """The first token whose value row i's output is (in the blend plot's coordinates), else None."""
    xs, ys, ox, oy = plotted(head, i)
    near = NEAR * max([1.0] + [abs(v) for v in xs + ys])
    for j in range(head.T):
        if abs(xs[j] - ox) <= near and abs(ys[j] - oy) <= near:
            return j
    return None


def where(head: Head, i: int) -> int:
    """Where row i's output lands in the blend plot: ON_A_VALUE, INSIDE the values' hull, or OUTSIDE."""
    if on_value(head, i) is not None:
        return ON_A_VALUE
    xs, ys, ox, oy = plotted(head, i)
    hx, hy = convex_hull(xs, ys)
    return INSIDE if inside_convex(hx, hy, ox, oy) else OUTSIDE


def _beyond(head: Head, i: int) -> tuple[int, float, float] | None:
    """A plotted coordinate where row i's output lies beyond every value's: (coordinate, lowest, highest)."""
    xs, ys, ox, oy = plotted(head, i)
    for c, (vs, o) in enumerate(((xs, ox), (ys, oy))[: 2 if head.d > 1 else 1]):
        if o > max(vs) or o < min(vs):
            return c, min(vs), max(vs)
    return None


def changed_rows(before: Head, after: Head) -> list[int]:
    """The rows whose weights differ at all between two heads of the same tokens."""
    return [r for r in range(after.T) if not np.array_equal(before.weights[r], after.weights[r])]


def row_choices(labels, t: int) -> tuple[tuple[str, list[int]], ...]:
    """The answers of a "rows" question about moving token t, each with the rows it says change."""
    T = len(labels)
    me = labels[t]
    return (
        ("every row", list(range(T))),
        (f"the row of '{me}' and the rows after it", list(range(t, T))),
        (f"only the row of '{me}'", [t]),
        ("no row", []),
    )


def _moved_token(before: Preset, after: Preset) -> int | None:
    moved = [t for t, (b, a) in enumerate(zip(before.X, after.X)) if tuple(b) != tuple(a)]
    return moved[0] if len(moved) == 1 and before.tokens == after.tokens else None


@functools.cache
def pose(name: str) -> Posed:
    """Question `name` of the bank on its own heads (worked out once)."""
    q = QUESTIONS[name]
    labels = tuple(q.after.tokens)
    return pose_on(
        q.before.head(),
        q.after.head(),
        labels,
        labels.index(q.after.query),
        kind=q.kind,
        name=q.name,
        title=q.title,
        key=labels.index(q.key) if q.key is not None else None,
        context=q.context,
        change=describe_change(q.before, q.after),
        moved=_moved_token(q.before, q.after),
    )


def pose_top_key(head: Head, labels, i: int, *, name: str = "top-key", title: str = "Which key?") -> Posed:
    """ "Which key will row i weigh most?" on any head: what counts as right is that head's own row i."""
    labels = tuple(str(x) for x in labels)
    return pose_on(head, head, labels, i, kind="key", name=name, title=title)


def pose_on(
    before: Head,
    after: Head,
    labels,
    i: int,
    *,
    kind: str,
    name: str,
    title: str,
    key: int | None = None,
    context: str = "",
    change: str = "",
    moved: int | None = None,
) -> Posed:
    """A question of `kind` about query i, from the head before a change and the head after it."""
    labels = tuple(str(x) for x in labels)
    me = labels[i]
    after_the_change = " after the change" if change else ""
    estimate, value, choices = None, None, ()
    if kind == "key":
        prompt = f"Which key will '{me}' weigh most{after_the_change}?"
        choices = labels
        right = tuple(top_keys(after, i))
    elif kind in ("direction", "estimate"):
        w0, w1 = float(before.weights[i, key]), float(after.weights[i, key])
        now = f"'{me}' puts {fmt(w0)} on {quoted(labels, key)} now."
        if kind == "direction":
            prompt = f"{now} Will that weight go up, go down or stay the same{after_the_change}?"
            choices = DIRECTIONS
            right = (2 if abs(w1 - w0) < SAME_AS_SHOWN else 0 if w1 > w0 else 1,)
        else:
            prompt = f"{now} What will it put there{after_the_change}? Set the slider to your estimate."
            estimate, value, right = ESTIMATE_SLIDER, w1, ()
    elif kind == "where":
        prompt = (
            f"The output of '{me}', {fmt_vector(before.output[i])}, is {WHERE[where(before, i)]} now. Where "
            f"will it land{after_the_change}?"
        )
        choices = WHERE
        right = (where(after, i),)
    elif kind == "rows":
        prompt = f"The mask is {'on' if before.causal else 'off'}. Which rows of the weights will change?"
        sets = row_choices(labels, moved)
        changed = changed_rows(before, after)
        choices = tuple(text for text, _ in sets)
        right = tuple(k for k, (_, rows) in enumerate(sets) if rows == changed)
    else:
        raise ValueError(f"no kind of question called {kind!r}")
    key = moved if kind == "rows" else key
    told = (context, change, prompt, choices, estimate)
    return Posed(name, title, kind, labels, i, key, before, after, *told, right, value)


def check(posed: Posed, prediction) -> str:
    """'' when `prediction` is one the question takes, else why not (in words for the page)."""
    if posed.kind == "estimate":
        low, high = posed.estimate[0], posed.estimate[1]
        ok = isinstance(prediction, (int, float)) and not isinstance(prediction, bool)
        if not ok or not math.isfinite(prediction) or not low <= prediction <= high:
            return f"set the slider to your estimate, from {short(low)} to {short(high)}, then check it"
        return ""
    ok = isinstance(prediction, (int, float)) and not isinstance(prediction, bool)
    if not ok or not math.isfinite(prediction) or prediction != int(prediction):
        ok = False
    if not ok or not 0 <= prediction < len(posed.choices):
        return "pick one of the answers first, or press Reveal to see it without predicting"
    return ""


def judge(posed: Posed, prediction) -> bool:
    """Whether `prediction` is right (a prediction `check` refuses is not)."""
    if check(posed, prediction):
        return False
    if posed.kind == "estimate":
        return abs(prediction - posed.value) <= ESTIMATE_TOLERANCE + TIE
    return int(prediction) in posed.right


def answer(posed: Posed) -> str:
    """The answer in words, with the numbers of the head after the change."""
    before, after, labels, i = posed.before, posed.after, posed.labels, posed.query
    me = labels[i]
    w = after.weights[i]
    if posed.kind == "key":
        tops = top_keys(after, i)
        if len(tops) == 1:
            text = f"'{me}' now weighs {names(labels, tops, i)} most, {fmt(w[tops[0]])}"
        elif len(tops) == 2:
            a, b = tops
            text = (
                f"'{me}' now splits {fmt(w[a])} / {fmt(w[b])} between {names(labels, [a], i)} and "
                f"{names(labels, [b], i)}"
            )
        else:
            text = f"'{me}' now weighs {names(labels, tops, i)} alike, {fmt(w[tops[0]])} each"
        if posed.change:
            was = top_keys(before, i)
            them = "every key" if len(was) == before.T > 2 else names(labels, was, i)
            alike = " alike" if len(was) > 1 else ""
            text += f" (before the change: {them}{alike}, {fmt(before.weights[i, was[0]])})"
        return text
    if posed.kind in ("direction", "estimate"):
        key = quoted(labels, posed.key)
        w0, w1 = fmt(before.weights[i, posed.key]), fmt(w[posed.key])
        if posed.kind == "direction":
            went = posed.right[0]
            if went == 2:
                return f"the weight '{me}' puts on {key} {WENT[went]}: {w0} before, {w1} after"
            return f"the weight '{me}' puts on {key} {WENT[went]}, from {w0} to {w1}"
        return f"'{me}' now puts {w1} on {key} (it was {w0})"
    if posed.kind == "where":
        text = f"the output of '{me}', now {fmt_vector(after.output[i])}, is "
        landed = posed.right[0]
        if landed == ON_A_VALUE:
            return text + f"exactly the value of {quoted(labels, on_value(after, i))}"
        if landed == INSIDE:
            return text + "inside the values' hull, a blend of them"
        beyond = _beyond(after, i)
        return text + "outside the values' hull" + (
            f": its value[{beyond[0]}] is beyond every value's ({fmt(beyond[1])} to {fmt(beyond[2])})"
            if beyond
            else ""
        )
    t = posed.key
    changed = changed_rows(before, after)
    same = [r for r in range(after.T) if r not in changed]
    text = (
        f"rows that changed: {names(labels, changed) or 'none'}; rows exactly as before: "
        f"{names(labels, same) or 'none'}"
    )
    blind = [r for r in same if r < t]
    if before.causal and blind:
        one = len(blind) == 1
        text += (
            f". With the mask on, {names(labels, blind)} cannot see '{labels[t]}': "
            f"{'its score' if one else 'their scores'} on it {'is' if one else 'are'} −∞ before the softmax, "
            f"so nothing about '{labels[t]}' reaches {'it' if one else 'them'}"
        )
    return text


def feedback(posed: Posed, prediction=None) -> str:
    """The prediction beside the head's numbers (None: the answer, revealed without a prediction)."""
    text = answer(posed)
    if prediction is None or check(posed, prediction):
        return f"The answer: {text}."
    if judge(posed, prediction):
        if posed.kind == "estimate":
            return f"Right: {text}; your {fmt(prediction)} is within {fmt(ESTIMATE_TOLERANCE)} of it."
        return f"Right: {text}."
    if posed.kind == "estimate":
        off = abs(prediction - posed.value)
        return (
            f"You said {fmt(prediction)}; {text}. That is {fmt(off)} away; within {fmt(ESTIMATE_TOLERANCE)} "
            "counts as right."
        )
    k = int(prediction)
    said = posed.choices[k]
    if posed.kind == "key":
        return f"You said '{said}'; {text}. '{said}' gets {fmt(posed.after.weights[posed.query, k])}."
    if posed.kind == "direction":
        said = f"it {said}"
    if posed.kind == "where":
        said = f"it lands {said}"
    return f"You said {said}; {text}."
