"""The export writes a figure (and the editor's W grids) only while it is on screen: the ones out of sight
catch up when they scroll into view, or when the moves stop. Either way every figure ends on the core's
numbers (static/explorer_page.js, "what is on screen")."""

from __future__ import annotations

import pytest

from tests.test_export import assert_figures_match, figure_mismatches, open_page, wait_for_steps
from widgets.state import HeadState

PARTS = "HeadExplorerPage.pages[0].parts"
STALE = f"() => Object.fromEntries(Object.entries({PARTS}).map(([k, p]) => [k, p.stale]))"
MOVE = "(v) => { Bokeh.documents[0].get_model_by_name('x-3-0').value = v; }"


def scroll_to(target, figure: str) -> None:
    """Scroll the named part (a figure, or 'editor') into the middle of the window."""
    target.evaluate(
        "(name) => Bokeh.index.find_one(HeadExplorerPage.pages[0].parts[name].model).el"
        ".scrollIntoView({block: 'center'})",
        figure,
    )


@pytest.fixture(scope="module")
def exported(export_copy):
    return export_copy


@pytest.fixture
def short_page(exported, context, page):
    """The export in a window 700 px high: the weights and the blend are in sight, the scores and the
    projections below them are not (nor the editor)."""
    page.set_viewport_size({"width": 1400, "height": 700})
    net = open_page(context, page, (exported / "head.html").as_uri())
    page.wait_for_function(f"() => {PARTS} && !{PARTS}.qkv.visible")
    yield page
    net.check()


def test_figures_out_of_sight_catch_up_when_scrolled_into_view(short_page):
    page = short_page
    page.evaluate("() => { HeadExplorerPage.pages[0].settleAfter = 1e9; }")  # only scrolling brings them up
    state = HeadState()
    for v in (0.5, 0.7):
        page.evaluate(MOVE, v)
        assert state.apply(X=_moved(state, v))
    wait_for_steps(page, state)
    stale = page.evaluate(STALE)
    assert stale["weights"] is None and stale["blend"] is None
    assert stale["scores"] == stale["scaled"] == stale["qkv"] == "update"
    behind = " ".join(figure_mismatches(page, state))
    assert "scores-cells" in behind and "weights-cells" not in behind, behind  # really left behind
    for name in ("scores", "scaled", "qkv"):
        scroll_to(page, name)
        page.wait_for_function(f"() => HeadExplorerPage.pages[0].parts.{name}.stale === null")
    assert_figures_match(page, state, wait=2.0)


def test_parts_out_of_sight_catch_up_when_the_moves_stop(short_page):
    page = short_page
    state = HeadState()
    page.evaluate(MOVE, 0.5)
    assert state.apply(X=_moved(state, 0.5))
    assert_figures_match(page, state)  # within the settle time, with nothing scrolled
    # A new shape while the editor is out of sight: its W grids are made anew once the moves stop.
    page.locator(".bk-Select select").first.select_option(label="… because it was tired")
    assert state.load("tired")
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    page.wait_for_function("() => HeadExplorerPage.pages[0].parts.editor.stale === null")
    boxes = page.evaluate("() => HeadExplorerPage.pages[0].grids.W_Q.map(line => line.map(box => box.value))")
    assert boxes == state.W_Q.tolist()


def _moved(state: HeadState, v: float):
    X = [list(row) for row in state.X]
    X[3][0] = v
    return X


@pytest.mark.seam
def test_css_variable_reads_are_kept_for_the_task(short_page):
    """static/bokeh_seam.js's second fix (cssReads) is in force: a figure's visuals read each CSS variable
    once a task. Fails if a Bokeh upgrade renames what it patches."""
    reads = short_page.evaluate(
        """() => {
          const real = window.getComputedStyle;
          let n = 0;
          window.getComputedStyle = (...a) => { n += 1; return real(...a); };
          try {
            const view = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('weights'));
            const axis = [...view.renderer_views.values()].find(v => v.visuals && v.visuals.major_label_text);
            for (let k = 0; k < 5; k++) axis.visuals.major_label_text.get_text_color();
          } finally {
            window.getComputedStyle = real;
          }
          return {cached: BokehSeam.patches.cssReads === true, n};
        }"""
    )
    assert reads == {"cached": True, "n": 1}
