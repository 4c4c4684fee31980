"""HeadState and HeadExplorer without a browser or a server.

HeadState: the chapter's example on start, one recompute per change, every
refused value leaves the last good state on show.  HeadExplorer: every change
lands in the SAME Bokeh models (no figure is rebuilt), the sources hold exactly
`view_data` of the new state, and a preset with a different T reshapes in place.
"""

from __future__ import annotations

import math
import re

import numpy as np
import panel as pn  # noqa: F401  (HeadExplorer is a Panel Viewer; import Panel as the app does)
import pytest
from bokeh.models import Model

from core.attention import NORMALISERS, attend
from core.presets import PRESETS
from core.trace import fmt_vector
from widgets.explorer import HeadExplorer
from widgets.figure_text import PHONE_COLUMN
from widgets.matrix_plot import side_by_side
from widgets.page import SQUARE
from widgets.state import INPUTS, MAX_LABEL, HeadState
from widgets.viewdata import view_data

CHAPTER = PRESETS["chapter"]


def plain(markup: str) -> str:
    """The text of the steps table without its tags."""
    return re.sub(r"<[^>]+>", "", markup)


def snapshot(state: HeadState) -> dict:
    """Every input, the query and the head, copied so later changes cannot alias them."""
    out = {}
    for name in (*INPUTS, "query", "preset"):
        v = getattr(state, name)
        out[name] = np.array(v, copy=True) if isinstance(v, np.ndarray) else list(v) if isinstance(
            v, list) else v
    out["head"] = state.head
    return out


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        if isinstance(a[name], np.ndarray):
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        else:
            assert a[name] == b[name] if name != "head" else a[name] is b[name], name


def core_head(state: HeadState, **changes):
    v = {name: getattr(state, name) for name in INPUTS}
    v.update(changes)
    return attend(
        v["X"], v["W_Q"], v["W_K"], v["W_V"], scaling=v["scaling"], causal=v["causal"],
        tied_qk=v["tied_qk"], normaliser=v["normaliser"], x_scale=v["x_scale"],
    )


class HeadCounter:
    """Counts how many times a watcher on `head` fires (i.e. how many recomputes were published)."""

    def __init__(self, state: HeadState):
        self.calls = 0
        state.param.watch(self, ["head"])

    def __call__(self, *events):
        self.calls += 1


# -- HeadState ---------------------------------------------------------------


def test_starts_on_the_chapters_example():
    s = HeadState()
    assert s.labels == CHAPTER.tokens
    assert s.query == 3 and s.labels[s.query] == "it"
    np.testing.assert_array_equal(s.X, np.array(CHAPTER.X))
    assert fmt_vector(s.head.weights[3]) == "[0.13, 0.56, 0.14, 0.18]"
    assert fmt_vector(s.head.output[3]) == "[0.23, 0.68]"
    assert s.message == "" and s.preset == "chapter"


def test_set_x_changes_exactly_what_the_core_says():
    s = HeadState()
    X = np.array(CHAPTER.X)
    X[3, 0] = 0.25
    expected = attend(X, CHAPTER.W_Q, CHAPTER.W_K, CHAPTER.W_V)
    assert s.set_x(3, 0, 0.25) is True
    np.testing.assert_array_equal(s.X, X)
    for name in ("Q", "K", "V", "scores", "scaled", "masked", "weights", "output"):
        np.testing.assert_array_equal(getattr(s.head, name), getattr(expected, name), err_msg=name)
    assert s.preset == "" and s.message == ""
    # only that entry moved
    changed = np.argwhere(s.X != np.array(CHAPTER.X))
    assert changed.tolist() == [[3, 0]]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e308, "abc", None])
def test_a_bad_slider_value_changes_nothing_and_says_why(bad):
    s = HeadState()
    s.set_x(1, 2, 0.5)  # a good edit first, so "unchanged" is not just "the default"
    before = snapshot(s)
    counter = HeadCounter(s)
    assert s.set_x(3, 0, bad) is False
    assert_same(before | {"message": ""}, snapshot(s) | {"message": ""})
    assert counter.calls == 0
    assert s.message and "it[0]" in s.message


@pytest.mark.parametrize(
    "changes",
    [
        {"x_scale": math.nan},
        {"x_scale": "abc"},
        {"x_scale": None},
        {"x_scale": 1e308},
        {"X": np.full((4, 3), np.nan)},
        {"X": np.ones((4, 2))},  # wrong width for W_Q
        {"X": np.ones((3, 3))},  # 3 rows, 4 labels
        {"normaliser": "sigmoid"},
        {"query": 4},
        {"query": -1},
        {"tokens": ["a", "b", "c"]},
    ],
    ids=lambda c: next(iter(c)) + "=" + repr(next(iter(c.values())))[:12],
)
def test_apply_refuses_bad_inputs_and_keeps_the_last_good_state(changes):
    s = HeadState()
    before = snapshot(s)
    counter = HeadCounter(s)
    assert s.apply(**changes) is False
    assert s.message
    assert_same(before | {"message": ""}, snapshot(s) | {"message": ""})
    assert counter.calls == 0


def test_a_good_change_clears_the_message():
    s = HeadState()
    s.set_x(0, 0, math.nan)
    assert s.message
    assert s.set_x(0, 0, 0.5)
    assert s.message == ""


def test_apply_of_several_inputs_recomputes_once():
    s = HeadState()
    counter = HeadCounter(s)
    X = np.array(CHAPTER.X) * 0.5
    assert s.apply(X=X, scaling=False, causal=False, normaliser="top1", x_scale=2.0, query=1)
    assert counter.calls == 1
    np.testing.assert_array_equal(s.head.weights, core_head(s).weights)
    assert (s.scaling, s.causal, s.normaliser, s.x_scale, s.query) == (False, False, "top1", 2.0, 1)


def test_unknown_input_is_a_programming_error():
    with pytest.raises(TypeError):
        HeadState().apply(W_O=np.eye(2))


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_loads(name):
    s = HeadState()
    s.set_x(0, 0, 1.5)
    counter = HeadCounter(s)
    p = PRESETS[name]
    assert s.load(name) is True
    assert counter.calls == 1
    assert s.preset == name and s.message == ""
    assert s.labels == p.tokens and s.labels[s.query] == p.query
    np.testing.assert_array_equal(s.head.weights, p.head().weights)


def test_unknown_preset_is_refused():
    s = HeadState()
    before = snapshot(s)
    assert s.load("no-such-preset") is False
    assert "no-such-preset" in s.message
    assert_same(before | {"message": ""}, snapshot(s) | {"message": ""})


def test_removing_tokens_clamps_the_query():
    s = HeadState()
    assert s.query == 3
    assert s.apply(tokens=["The", "cat"], X=np.array(CHAPTER.X)[:2])
    assert s.query == 1 and s.head.T == 2 and s.message == ""
    assert s.apply(tokens=["The"], X=np.array(CHAPTER.X)[:1])
    assert s.query == 0


def test_reset_returns_to_the_chapter():
    s = HeadState()
    s.apply(scaling=False, query=0)
    s.set_x(2, 1, -1.0)
    assert s.reset()
    assert s.preset == "chapter" and s.query == 3 and s.scaling
    assert fmt_vector(s.head.weights[3]) == "[0.13, 0.56, 0.14, 0.18]"


@pytest.mark.parametrize(
    "tokens",
    [["The", "cat", "The", "it"], ["The", "", "sat", "it"], ["The", "   ", "sat", "it"], [], "Thecatsatit",
     ["The", "cat", "sat", "x" * (MAX_LABEL + 1)]],
    ids=["duplicate", "empty", "blank", "none", "string", "too-long"],
)
def test_bad_labels_are_refused(tokens):
    s = HeadState()
    before = snapshot(s)
    assert s.apply(tokens=tokens) is False
    assert s.message
    assert_same(before | {"message": ""}, snapshot(s) | {"message": ""})


def test_renaming_a_token_is_accepted():
    s = HeadState()
    assert s.apply(tokens=["A", "cat", "sat", "it"])
    assert s.labels[0] == "A"


# -- HeadExplorer --------------------------------------------------------------


def all_sources(page):
    return [
        *(p.source for p in page.plots.values()),
        *(p.outline for p in page.plots.values()),
        page.blend.values, page.blend.hull, page.blend.output, page.blend.links,
    ]


def same_columns(data, expected: dict) -> None:
    """Column dicts equal, NaN (a masked cell) equal to NaN."""
    assert set(data) == set(expected)
    np.testing.assert_equal(dict(data), expected)


def assert_page_shows(explorer: HeadExplorer) -> None:
    """Every source and text panel holds view_data of the explorer's current state."""
    s, page = explorer.state, explorer.page
    data = view_data(s.head, s.query, s.labels, s.dims, s.moved, s.before)
    for name, plot in page.plots.items():
        blocks = {b: data["cells"][b] for b in plot.names}
        n_cols = int(max(blocks[plot.names[0]]["x"])) + 1
        same_columns(plot.source.data, side_by_side(blocks, n_cols, plot.GAP))
        for block in plot.names:  # Q, K and V share one colour range
            assert (plot.mapper.low, plot.mapper.high) == tuple(data["limits"][block]), block
        if name in SQUARE:
            same_columns(plot.outline.data, data["outline"])
    b = page.blend
    same_columns(b.values.data, data["blend"]["values"])
    same_columns(b.hull.data, data["blend"]["hull"])
    same_columns(b.output.data, data["blend"]["output"])
    same_columns(b.links.data, data["blend"]["links"])
    assert page.steps.text == data["steps"] + data["checks"]
    same_columns(page.row_marks.unchanged.data, data["moved"]["unchanged"])
    same_columns(page.row_marks.changed.data, data["moved"]["changed"])


def models(explorer: HeadExplorer) -> dict:
    page = explorer.page
    out = {f"{k}-figure": p.figure for k, p in page.plots.items()}
    out |= {f"{k}-source": p.source for k, p in page.plots.items()}
    out |= {f"{k}-x_range": p.figure.x_range for k, p in page.plots.items()}
    out |= {f"{k}-mapper": p.mapper for k, p in page.plots.items()}
    out |= {
        "blend": page.blend.figure, "blend-values": page.blend.values, "blend-links": page.blend.links,
        "blend-x_range": page.blend.figure.x_range, "steps": page.steps,
        "layout": page.layout, "slider-column": page.controls.tokens.layout,
        "query": page.controls.query, "preset": page.controls.preset, "causal": page.controls.causal,
    }
    return out


def test_explorer_starts_on_the_chapters_view():
    e = HeadExplorer()
    assert_page_shows(e)
    assert "weights = [0.13, 0.56, 0.14, 0.18]" in plain(e.page.steps.text)
    assert "= [0.23, 0.68]" in plain(e.page.steps.text)
    assert e.updates == 0


@pytest.mark.parametrize("preset", ["chapter", "exercise-1"])
def test_the_page_passes_bokehs_integrity_checks(preset):
    """The served app skips Bokeh's per-session document checks (app/serving.py); they run here once."""
    from bokeh.core.validation.check import check_integrity
    from bokeh.document import Document

    e = HeadExplorer()
    e.state.load(preset)
    doc = Document()
    for part in e.areas().values():
        doc.add_root(part.get_root(doc))
    issues = check_integrity([m for root in doc.roots for m in root.references()])
    assert issues.error == [] and issues.warning == [], issues


def test_each_change_redraws_once_into_the_same_models():
    e = HeadExplorer()
    before = models(e)
    c = e.page.controls
    changes = [
        lambda: e.state.set_x(3, 0, 0.25),
        lambda: setattr(c.tokens.sliders[1][2], "value", 0.75),  # a slider, as the browser would
        lambda: setattr(c.scaling, "active", []),
        lambda: setattr(c.causal, "active", []),
        lambda: setattr(c.tied_qk, "active", [0]),
        lambda: setattr(c.normaliser, "active", NORMALISERS.index("top1")),
        lambda: setattr(c.normaliser, "active", NORMALISERS.index("raw")),
        lambda: setattr(c.x_scale, "value", 3.0),
        lambda: setattr(c.query, "value", "1"),
        lambda: e.state.load("no-mask"),
        lambda: e.state.load("exercise-1"),
        lambda: e.state.reset(),
    ]
    for k in range(3):  # many changes: the same objects every time
        for n, change in enumerate(changes):
            count = e.updates
            change()
            assert e.updates == count + 1, (k, n)
            assert e.state.message == "", (k, n)
            assert_page_shows(e)
    after = models(e)
    for name, model in before.items():
        assert after[name] is model, name
    # the controls show the state after a change that did not come from them
    assert c.tokens.sliders[3][0].value == e.state.X[3, 0]
    assert c.query.value == str(e.state.query) and c.preset.value == "chapter"


def test_a_slider_moves_the_state_and_the_page_to_the_cores_numbers():
    e = HeadExplorer()
    e.page.controls.tokens.sliders[3][0].value = 0.25
    X = np.array(CHAPTER.X)
    X[3, 0] = 0.25
    expected = attend(X, CHAPTER.W_Q, CHAPTER.W_K, CHAPTER.W_V)
    np.testing.assert_array_equal(e.state.head.weights, expected.weights)
    assert f"weights = {fmt_vector(expected.weights[3])}" in plain(e.page.steps.text)
    assert_page_shows(e)


def test_a_refused_change_does_not_redraw_and_shows_a_message():
    e = HeadExplorer()
    before = dict(e.page.plots["weights"].source.data)
    e.page.controls.tokens.sliders[3][0].value = math.nan
    assert e.updates == 0
    assert "alert" in e.page.controls.message.text and e.state.message
    same_columns(e.page.plots["weights"].source.data, before)
    e.page.controls.tokens.sliders[3][0].value = 0.1
    assert e.page.controls.message.text == ""


def test_a_preset_with_another_T_reshapes_in_place_and_rebuilds_only_the_sliders():
    e = HeadExplorer()
    before = models(e)
    old_sliders = e.page.controls.tokens.flat
    count = e.updates
    e.state.load("tired")
    assert e.updates == count + 1
    p = PRESETS["tired"]
    T, C = len(p.tokens), len(p.X[0])
    after = models(e)
    for name, model in before.items():
        assert after[name] is model, name
    assert_page_shows(e)
    w = e.page.plots["weights"].figure
    assert (w.x_range.start, w.x_range.end) == (-0.5, T - 0.5)
    assert (w.y_range.start, w.y_range.end) == (T - 0.5, -0.5)
    assert list(w.xaxis[0].ticker.ticks) == list(range(T))
    assert w.yaxis[0].major_label_overrides == {i: t for i, t in enumerate(p.tokens)}
    v = e.page.plots["qkv"].figure
    assert (v.y_range.start, v.y_range.end) == (T - 0.5, -0.5)
    # only the slider rows are new: one per token, C sliders each, named and titled
    sliders = e.page.controls.tokens.flat
    assert len(sliders) == T * C
    assert not {id(s) for s in sliders} & {id(s) for s in old_sliders}
    assert [s.name for s in e.page.controls.tokens.sliders[7]] == [f"x-7-{c}" for c in range(C)]
    assert e.page.controls.tokens.sliders[7][0].title == "it[0]"
    assert [label for _, label in e.page.controls.query.options] == list(p.tokens)
    # the new sliders are wired: moving one redraws once
    e.page.controls.tokens.sliders[7][0].value = 0.5
    assert e.updates == count + 2 and e.state.X[7, 0] == 0.5
    assert_page_shows(e)
    # and back to T = 4
    e.state.reset()
    assert_page_shows(e)
    assert (w.x_range.start, w.x_range.end) == (-0.5, 3.5)
    assert len(e.page.controls.tokens.flat) == 12
    for name, model in before.items():
        assert models(e)[name] is model, name


def test_controls_are_bokeh_models_not_panel_widgets():
    """The fast route: Bokeh widgets with Python on_change; Panel's widgets would debounce 50 ms."""
    c = HeadExplorer().page.controls
    for w in (c.query, c.scaling, c.causal, c.tied_qk, c.normaliser, c.x_scale, c.preset, c.reset,
              c.message, *c.tokens.flat):
        assert isinstance(w, Model), w
        assert not isinstance(w, pn.viewable.Viewable), w
    for s in c.tokens.flat:
        assert s._callbacks.get("value"), s.name  # wired with a Python callback


def test_cells_too_small_for_numbers_are_drawn_bare():
    """Cells too small for any number (the weights' at 16 tokens, which fit a phone) draw no numbers and no
    cell outlines, read nothing for them on a move, and say so under the figure; back at a small head both
    return."""
    e = HeadExplorer()
    weights = e.page.plots["weights"]
    assert weights.numbers.visible and weights.cells.glyph.line_color is not None
    assert weights.note.text == ""
    T = 16
    assert e.state.apply(tokens=[f"t{k}" for k in range(T)], X=np.zeros((T, 3)))
    assert not weights.numbers.visible and weights.numbers.data_source is weights.no_numbers
    assert weights.cells.glyph.line_color is None
    assert "as a table" in weights.note.text
    assert e.state.load("chapter")
    assert weights.numbers.visible and weights.numbers.data_source is weights.source
    assert weights.cells.glyph.line_color is not None


def test_a_long_label_widens_the_figures_not_their_cells():
    """Figures are sized by their cells: a long label gets room for its axis instead of squeezing the cells
    (and cutting the title short), but for the weights' narrowest width, which must still fit a phone (its
    height follows that width); column labels too long to lie flat over a cell slant; sliders go two a row
    so that their longer titles do not run together."""
    e = HeadExplorer()
    rows = e.page.controls.tokens.layout
    weights = e.page.plots["weights"].figure
    frame = (weights.frame_width, weights.frame_height)
    assert weights.xaxis[0].major_label_orientation == 0
    assert len(rows.children[0].children) == 3
    assert e.state.set_labels("The, cat, a-long-word, it")
    assert weights.frame_width == frame[0] and weights.frame_height <= frame[1]
    assert weights.min_width <= PHONE_COLUMN
    assert weights.xaxis[0].major_label_orientation != 0
    assert weights.yaxis[0].major_label_overrides[2] == "a-long-wo…"
    assert len(rows.children[0].children) == 2
    assert e.state.set_labels("The, cat, sat, it")
    assert weights.xaxis[0].major_label_orientation == 0
    assert len(rows.children[0].children) == 3
