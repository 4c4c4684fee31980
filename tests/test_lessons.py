"""The lessons (core/lessons.py): every question of the bank against an independent computation, wrong
predictions called wrong, the walk on any head, and the JavaScript port (static/lessons.js) equal to it.

The oracle computes each head again with plain numpy (not core.attention's steps) and decides what is right
from those numbers alone; the feedback's text plays no part in it.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from core.lessons import (
    INSIDE,
    ON_A_VALUE,
    OUTSIDE,
    QUESTIONS,
    SAME_AS_SHOWN,
    STEPS,
    check,
    feedback,
    judge,
    pose,
    pose_top_key,
    walk_step,
)
from core.presets import CHAPTER, PRESETS, Preset
from tests.node_batch import NODE, run_node
from tests.test_parity import mismatches, random_case
from widgets.logic_config import logic_config

DRIVER = Path(__file__).resolve().parent / "lessons_driver.js"


# --- an independent head: plain numpy, no code of core/attention.py --------------------------


def reference_weights(p: Preset) -> np.ndarray:
    o = p.options
    X = np.array(p.X) * o.x_scale
    W_Q, W_K = np.array(p.W_Q), np.array(p.W_Q if o.tied_qk else p.W_K)
    S = (X @ W_Q) @ (X @ W_K).T
    if o.scaling:
        S = S / math.sqrt(W_Q.shape[1])
    S = S / o.temperature
    T = len(X)
    future = np.triu(np.ones((T, T), dtype=bool), 1) if o.causal else np.zeros((T, T), dtype=bool)
    if o.normaliser == "raw":
        return np.where(future, 0.0, S)
    S = np.where(future, -np.inf, S)
    if o.normaliser == "top1":
        return np.eye(T)[S.argmax(axis=1)]
    e = np.exp(S - S.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def reference_output(p: Preset) -> np.ndarray:
    V = np.array(p.X) * p.options.x_scale @ np.array(p.W_V)
    return reference_weights(p) @ V


def reference_where(p: Preset, i: int) -> int:
    """On a value, inside the values' hull (in a triangle or on a segment of value points), or outside."""
    V = (np.array(p.X) * p.options.x_scale @ np.array(p.W_V))[:, :2]
    o = reference_output(p)[i, :2]
    if np.any(np.all(np.abs(V - o) < 1e-9, axis=1)):
        return ON_A_VALUE
    for a, b, c in itertools.combinations(range(len(V)), 3):
        M = np.column_stack([V[b] - V[a], V[c] - V[a]])
        if abs(np.linalg.det(M)) < 1e-12:
            continue
        s, t = np.linalg.solve(M, o - V[a])
        if s >= -1e-9 and t >= -1e-9 and s + t <= 1 + 1e-9:
            return INSIDE
    for a, b in itertools.combinations(range(len(V)), 2):
        d = V[b] - V[a]
        s = float(np.dot(o - V[a], d) / max(np.dot(d, d), 1e-300))
        if -1e-9 <= s <= 1 + 1e-9 and np.allclose(V[a] + s * d, o, atol=1e-9):
            return INSIDE
    return OUTSIDE


def as_preset(case: dict) -> Preset:
    """A test case of tests/test_parity.py as a Preset."""
    matrices = (tuple(map(tuple, case[n])) for n in ("X", "W_Q", "W_K", "W_V"))
    labels = tuple(case["labels"])
    return Preset("case", "case", labels, *matrices, labels[0]).with_options(**case["options"])


def oracle(name: str) -> dict:
    """What is right for question `name`, from the reference heads before and after its change."""
    q = QUESTIONS[name]
    before, after = reference_weights(q.before), reference_weights(q.after)
    i = q.after.tokens.index(q.after.query)
    if q.kind == "key":
        return {"right": set(np.flatnonzero(after[i] >= after[i].max() - 1e-9))}
    if q.kind in ("direction", "estimate"):
        k = q.after.tokens.index(q.key)
        w0, w1 = before[i, k], after[i, k]
        if q.kind == "estimate":
            return {"value": w1}
        return {"right": {2 if abs(w1 - w0) < SAME_AS_SHOWN else 0 if w1 > w0 else 1}}
    if q.kind == "where":
        return {"right": {reference_where(q.after, i)}}
    changed = [r for r in range(len(after)) if not np.allclose(before[r], after[r], rtol=0, atol=1e-12)]
    t = next(t for t, (a, b) in enumerate(zip(q.before.X, q.after.X)) if a != b)
    sets = [list(range(len(after))), list(range(t, len(after))), [t], []]
    return {"right": {k for k, rows in enumerate(sets) if rows == changed}}


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_the_answer_marked_right_is_what_the_head_computes(name):
    posed, want = pose(name), oracle(name)
    if posed.kind == "estimate":
        assert posed.value == pytest.approx(want["value"], abs=1e-9)
        for p in (want["value"], want["value"] - 0.05, min(1.0, want["value"] + 0.05)):
            assert judge(posed, p), p
        for p in (want["value"] - 0.2, want["value"] - 0.5):
            if 0 <= p <= 1:
                assert not judge(posed, p) and feedback(posed, p).startswith("You said"), p
        return
    assert want["right"], "the oracle found no right answer among the choices"
    assert set(posed.right) == want["right"]
    for k in range(len(posed.choices)):
        assert judge(posed, k) == (k in want["right"]), (k, posed.choices[k])
        said = feedback(posed, k)
        assert said.startswith("Right:") == (k in want["right"]), said
        if k not in want["right"]:
            assert said.startswith("You said")


# What the chapter and README say each question shows, pinned (the oracle above is the general check).
ANSWERS = {
    "exercise-1": {"sat", "it"},
    "tied-qk": {"cat"},
    "no-mask": {"sat"},
    "tired": {"cat"},
    "soft": {"mat"},
    "tired-trace": {"cat"},
    "soft-trace": {"mat"},
    "no-scaling": {"goes up"},
    "exercise-3-scaled": {"stays the same"},
    "temperature-high": {"goes down"},
    "no-softmax": {"outside the values' hull"},
    "top-1": {"exactly on one of the values"},
    "future-rows": {"the row of 'sat' and the rows after it"},
}


def test_the_bank_covers_every_exercise_and_switch_with_the_answers_the_chapter_gives():
    assert set(PRESETS) - set(QUESTIONS) == {"chapter"}  # every preset but the worked example is a question
    assert "future-rows" in QUESTIONS
    kinds = {q.kind for q in QUESTIONS.values()}
    assert kinds == {"key", "direction", "estimate", "where", "rows"}
    for name, want in ANSWERS.items():
        posed = pose(name)
        assert {posed.choices[k] for k in posed.right} == want, name
    for name in ("exercise-3-unscaled", "temperature-low"):
        posed = pose(name)
        assert posed.value == pytest.approx(reference_weights(QUESTIONS[name].after)[3, 1])
    change = "x_it goes from [0.20, 0.30, 0.00] to [0.00, 0.00, 1.00], the vector of 'sat'"
    assert pose("exercise-1").change == change
    assert feedback(pose("exercise-1"), 1) == (
        "You said 'cat'; 'it' now splits 0.40 / 0.40 between 'sat' and itself "
        "(before the change: 'cat', 0.56). 'cat' gets 0.10."
    )


def test_a_prediction_the_question_cannot_take_is_refused_and_not_counted_right():
    for name in QUESTIONS:
        posed = pose(name)
        bad = [None, "cat", True, -1, 1.5, math.nan, math.inf, 7e9, len(posed.choices)]
        if posed.kind == "estimate":
            bad = [None, "0.5", True, -0.1, 1.5, math.nan]
        for p in bad:
            assert check(posed, p) and not judge(posed, p), (name, p)
            assert feedback(posed, p).startswith("The answer:")


def test_which_key_on_any_head_is_right_about_that_head():
    rng = np.random.default_rng(3)
    for k in range(60):
        case = random_case(rng, k)
        p = as_preset(case)
        labels = [f"t{j}" for j in range(len(case["X"]))]
        head = p.head()
        i = case["i"]
        posed = pose_top_key(head, labels, i)
        w = reference_weights(p)[i]
        scale = max(1.0, float(np.abs(w).max()))
        near_top = set(np.flatnonzero(w >= w.max() - 1e-6 * scale))  # the reference sums in another order
        exact_top = set(np.flatnonzero(w >= w.max() - 1e-12 * scale))
        assert exact_top <= set(posed.right) <= near_top, (k, posed.right, exact_top, near_top)
        assert judge(posed, posed.right[0]) and feedback(posed, posed.right[0]).startswith("Right:")
        wrong = [j for j in range(head.T) if j not in posed.right]
        for j in wrong[:3]:
            assert not judge(posed, j) and feedback(posed, j).startswith(f"You said '{labels[j]}'")


def test_the_walk_says_each_step_with_the_heads_numbers_and_offers_a_query_where_a_step_is_idle():
    head, labels = CHAPTER.head(), CHAPTER.tokens
    it = walk_step(head, 3, labels, 2)
    assert "2.40" in it.lead and "'cat'" in it.lead and it.cells == {"scores": [(3, j) for j in range(4)]}
    mask = walk_step(head, 3, labels, 4)
    assert mask.idle and mask.offer == 0 and "'The'" in mask.lead and mask.cells == {}
    for_the = walk_step(head, 0, labels, 4)
    assert not for_the.idle and for_the.cells == {"scaled": [(0, 1), (0, 2), (0, 3)]}
    blend = walk_step(head, 3, labels, 6)
    assert blend.blend and "[0.23, 0.68]" in blend.lead and blend.lines[-1] == "= [0.23, 0.68]"
    unmasked = CHAPTER.with_options(causal=False, scaling=False).head()
    assert walk_step(unmasked, 0, labels, 4).idle and walk_step(unmasked, 0, labels, 4).offer is None
    assert walk_step(unmasked, 0, labels, 3).idle
    rng = np.random.default_rng(5)
    for k in range(40):  # any head: every step of every query says something, about that query
        case = random_case(rng, k)
        p = as_preset(case)
        labels = [f"t{j}" for j in range(len(case["X"]))]
        for step in range(1, STEPS + 1):
            s = walk_step(p.head(), case["i"], labels, step)
            assert s.lead and s.number == step and (s.offer is None or s.idle)


def test_the_walks_previous_and_next_step_are_off_where_they_have_nowhere_to_go():
    from widgets.lesson_data import lesson_of
    from widgets.lesson_view import LessonPanel
    from widgets.state import HeadState
    from widgets.viewdata import view_data

    s = HeadState()
    panel = LessonPanel()
    seen = {}
    for step in range(STEPS + 1):
        s.act({"do": "walk-to", "step": step})
        view = view_data(s.head, s.query, s.labels, s.dims, lesson=lesson_of(s))["lesson"]
        panel.show(view)
        c = view["controls"]
        seen[step] = (c["prev"], c["next"], panel.walk_prev.disabled, panel.walk_next.disabled)
    assert seen[0][:2] == (False, False)  # no walk: its row is hidden
    assert seen[1] == (False, True, True, False)
    assert all(seen[k] == (True, True, False, False) for k in range(2, STEPS))
    assert seen[STEPS] == (True, False, False, True)


# --- the port ------------------------------------------------------------------------------------

PREDICTIONS = [None, -1, 0.5, 1.0, 0.0, 0.93, 2.5, "x", True, 99]


def posed_as_dict(posed) -> dict:
    return {
        k: getattr(posed, k)
        for k in ("name", "title", "kind", "labels", "query", "key", "context", "change", "prompt", "choices",
                  "estimate", "right", "value")
    }


def said(posed) -> list[dict]:
    return [
        {"check": check(posed, p), "judge": judge(posed, p), "feedback": feedback(posed, p)}
        for p in PREDICTIONS + list(range(len(posed.choices)))
    ]


def step_as_dict(s) -> dict:
    cells = {k: [list(c) for c in v] for k, v in s.cells.items()}
    return {"number": s.number, "name": s.name, "lead": s.lead, "lines": list(s.lines), "idle": s.idle,
            "offer": s.offer, "cells": cells, "blend": s.blend}


@pytest.mark.skipif(NODE is None, reason="node is not installed, so the JS port cannot be run")
def test_javascript_poses_judges_and_walks_as_python_does():
    rng = np.random.default_rng(11)
    walks = [random_case(rng, k) for k in range(80)] + [
        dict(X=p.X, W_Q=p.W_Q, W_K=p.W_K, W_V=p.W_V, options=p.options.as_dict(), labels=list(p.tokens), i=0)
        for p in PRESETS.values()
    ]
    heads = [random_case(rng, k) for k in range(80)]
    batch = {"config": logic_config(), "walks": walks, "predictions": PREDICTIONS, "heads": heads}
    js = run_node(DRIVER, batch)
    found = []
    for name in QUESTIONS:
        posed = pose(name)
        found += mismatches({"posed": posed_as_dict(posed), "said": said(posed)}, js["bank"][name], name)
    for k, case in enumerate(heads):
        p = as_preset(case)
        posed = pose_top_key(p.head(), case["labels"], case["i"])
        found += mismatches({"posed": posed_as_dict(posed), "said": said(posed)}, js["top"][k], f"top {k}")
    for k, case in enumerate(walks):
        p = as_preset(case)
        py = [[step_as_dict(walk_step(p.head(), i, case["labels"], s)) for s in range(1, STEPS + 1)]
              for i in range(len(case["labels"]))]
        found += mismatches(py, js["walks"][k], f"walk {k}")
    assert not found, "\n".join(found[:20])


def test_links_open_a_question_in_predict_mode_and_the_walk_at_a_step():
    from widgets.state import HeadState
    from widgets.url_state import apply_params, encode

    s = HeadState()
    assert apply_params(s, {"exercise": "exercise-1"}) == []
    assert (s.question, s.revealed, s.preset) == ("exercise-1", False, "chapter")  # the head before
    assert s.head.weights[3].round(2).tolist() == [0.13, 0.56, 0.14, 0.18]
    assert encode(s)["exercise"] == "exercise-1"
    s.act({"do": "predict", "value": 1})  # 'cat'
    assert (s.preset, s.revealed, s.right, s.answered) == ("exercise-1", True, 0, 1)
    assert s.head.weights[3].round(2).tolist() == [0.1, 0.1, 0.4, 0.4] and "exercise" not in encode(s)
    s.set_x(0, 0, 0.5)  # the answer was about the preset: an edit closes the question, the count stays
    assert (s.question, s.answered) == ("", 1)

    s = HeadState()
    apply_params(s, {"preset": "exercise-1"})  # preset= opens the answer directly
    assert (s.preset, s.question) == ("exercise-1", "")
    apply_params(s, {"walk": "6", "query": "cat"})
    assert (s.walk, s.query, encode(s)["walk"]) == (6, 1, "6")
    assert apply_params(s, {"walk": "9", "exercise": "nope"}) == [
        "the link's 'walk' should be a step from 1 to 6, so it was left at its default",
        "the link's 'exercise' names no question ('nope'), so it was left at its default",
    ]


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_every_question_opens_by_its_link_in_predict_mode_and_its_preset_by_link_as_the_answer(name):
    """exercise=NAME: the question open, nothing revealed, the head on screen the one before the change;
    preset=NAME (for the questions that are presets): the head after the change, no question."""
    from widgets.state import HeadState
    from widgets.url_state import apply_params

    posed = pose(name)
    s = HeadState()
    assert apply_params(s, {"exercise": name}) == []
    assert (s.question, s.revealed, s.prediction) == (name, False, None)
    assert np.allclose(s.head.weights, posed.before.weights, equal_nan=True)
    if name in PRESETS:
        s = HeadState()
        assert apply_params(s, {"preset": name}) == []
        assert (s.preset, s.question) == (name, "")
        assert np.allclose(s.head.weights, posed.after.weights, equal_nan=True)


def test_a_press_the_page_draws_sends_no_figure_again_and_one_it_does_not_sends_them():
    """widgets/explorer.py: once the page draws (the channel's drawn_by), a lesson press sends the state, the
    count of presses, the controls and texts, but no figure's source (BokehJS would repaint each, numbers
    equal or not); while the server draws, it sends them."""
    from bokeh.document import Document
    from bokeh.models import ColumnDataSource

    from widgets.channel import PAGE, SERVER
    from widgets.explorer import HeadExplorer

    sent = {}
    for drawn_by in (PAGE, SERVER):
        ex = HeadExplorer()
        doc = Document()
        for root in [*ex.page.roots.values(), ex.channel]:
            doc.add_root(root)
        ex.channel.drawn_by = drawn_by
        ex.state.act({"do": "ask", "name": "exercise-1"})
        events = []
        doc.on_change(lambda event, events=events: events.append(event))
        ex._lesson_press(lambda: {"do": "reveal"})
        assert ex.state.revealed and ex.channel.presses == 1
        sources = [e for e in events if isinstance(getattr(e, "model", None), ColumnDataSource)]
        sent[drawn_by] = {e.attr for e in sources}
    assert sent[PAGE] == set() and sent[SERVER] == {"data"}
