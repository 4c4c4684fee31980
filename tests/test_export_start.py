"""What the export does first and what it leaves for a moment later (static/explorer_page.js embed and
buildSlidersSoon): the roots below the weights and the blend get their views once the rest is ready, and
a new shape's sliders are made in a task after the figures' frame. Both must end complete on their own,
and nothing the reader does in between may be lost or misread."""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

from app.export import LATER
from core.presets import PRESETS
from tests.test_export import assert_figures_match, open_page, wait_for_steps
from widgets.state import HeadState

# Idle callbacks held until the test lets them run: the roots embed adds later wait for them.
HOLD_IDLE = "window.__held = []; window.requestIdleCallback = (cb) => { window.__held.push(cb); return 0; };"
RELEASE = "() => { const held = window.__held.splice(0); held.forEach((cb) => cb()); return held.length; }"
PAGE = "HeadExplorerPage.pages[0]"
# The roots that have views (not the controls' names, widgets/a11y.py), each with the area it is in.
ROOTS = """() => Bokeh.documents[0].roots().filter((root) => root.name !== 'a11y-names').map((root) => {
  const view = Bokeh.index.find_one(root);
  const area = view && view.el.closest('section');
  return [root.name, area ? area.className : null];
})"""


@pytest.fixture(scope="module")
def exported(export_copy):
    return export_copy / "head.html"


@pytest.mark.seam
def test_roots_added_later_come_on_their_own_and_keep_a_move_made_before(exported, context, page):
    page.add_init_script(HOLD_IDLE)
    net = open_page(context, page, exported.as_uri())
    page.wait_for_function(f"() => window.HeadExplorerPage && {PAGE} && {PAGE}.ready")
    assert page.evaluate(f"() => {PAGE}.complete") is False
    names = page.evaluate("() => Bokeh.documents[0].roots().map((root) => root.name)")
    assert names == ["a11y-names", "top", "readout"]  # the rest waits outside the document
    # A move before they come: the weights follow at once, the waiting figures get it too.
    state = HeadState()
    page.evaluate("() => { Bokeh.documents[0].get_model_by_name('x-3-0').value = 0.5; }")
    X = np.array(state.X)
    X[3, 0] = 0.5
    assert state.apply(X=X)
    wait_for_steps(page, state)
    while not page.evaluate(f"() => {PAGE}.complete"):  # each root waits for an idle moment of its own
        page.wait_for_function("() => window.__held.length > 0 || HeadExplorerPage.pages[0].complete")
        page.evaluate(RELEASE)
    # Every root in its place on the page (app/export.py AREAS), added in the order of LATER.
    roots = page.evaluate(ROOTS)
    assert [name for name, _ in roots] == ["top", "readout", *LATER]
    areas = ["top", "readout", "readout", "controls", "bottom", "bottom", "more"]  # the lesson's in "readout"
    assert all(area and area.split()[0] == f"area-{where}" for where, (_, area) in zip(areas, roots)), roots
    assert_figures_match(page, state)  # the scores, the scaled scores and the projections included
    boxes = page.evaluate(f"() => {PAGE}.grids.W_Q.map((line) => line.map((box) => box.value))")
    assert boxes == state.W_Q.tolist()
    expect(page.locator(".bk-NumericInput input")).to_have_count(1 + 3 * 3 * 2)  # X multiplier, W grids
    net.check()


def test_a_new_shapes_sliders_follow_the_figures(exported, context, page):
    net = open_page(context, page, exported.as_uri())
    page.wait_for_function(f"() => {PAGE} && {PAGE}.complete")
    # In one task: "tired", a drag of an old slider (its token is not there any more), then the chapter
    # and "tired" again. The figures show "tired" from the first frame; the old slider's move is not taken.
    page.evaluate(
        "() => { const doc = Bokeh.documents[0], picker = doc.get_model_by_name('preset');"
        " const old = doc.get_model_by_name('x-3-0');"
        " picker.value = 'tired'; old.value = 0.9; picker.value = 'chapter'; picker.value = 'tired'; }"
    )
    state = HeadState()
    assert state.load("tired")
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    expect(page.locator(".x-slider:visible")).to_have_count(10 * 4)
    values = page.evaluate(f"() => {PAGE}.sliders.map((line) => line.map((s) => s.value))")
    assert values == np.array(PRESETS["tired"].X).tolist()
    assert page.evaluate(f"() => {PAGE}.state.X") == np.array(PRESETS["tired"].X).tolist()
    # The new sliders are listened to.
    handle = page.locator(".x-slider").nth(7 * 4).locator(".noUi-handle")  # "it"[0]
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function(f"() => {PAGE}.state.X[7][0] !== {PRESETS['tired'].X[7][0]}")
    net.check()


@pytest.mark.seam
def test_the_first_part_is_made_and_bound_while_the_rest_of_the_page_is_parsed(exported, context, page):
    """The embed runs where its script is, not at DOMContentLoaded (static/export_embed.js, after the
    roots), with static/bokeh_seam.js installed first (it comes after BokehJS, so at once), and binds as
    soon as the first part's views are made; the page is bound once."""
    page.add_init_script(
        "document.addEventListener('DOMContentLoaded', () => { window.__dcl = performance.now(); });"
    )
    net = open_page(context, page, exported.as_uri())
    page.wait_for_function(f"() => {PAGE} && {PAGE}.complete")
    marks = page.evaluate(
        "() => Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, m.startTime]))"
    )
    assert marks["head-embed-views"] <= marks["head-bind-start"] < page.evaluate("() => window.__dcl")
    assert marks["bokeh-seam-installed"] < marks["head-embed-json"]  # before the first views
    assert page.evaluate("() => HeadExplorerPage.pages.length") == 1
    net.check()


# Listens for the document's document_ready as soon as BokehJS has the document (before the later roots).
READY_WATCH = """(function watch() {
  const doc = window.Bokeh && Bokeh.documents && Bokeh.documents[0];
  if (!doc) return requestAnimationFrame(watch);
  window.__ready = 0;
  doc.on_event('document_ready', () => {
    window.__ready += 1;
    const page = HeadExplorerPage.pages[0]; // (a page made at once, on BokehJS as it is, may bind after)
    window.__readyComplete = page === undefined || page.complete;
  });
})();"""


def test_the_document_becomes_idle_once_the_whole_page_is_made(exported, context, page):
    """Issue 26: tools that wait for Bokeh's idle state (screenshot and PDF exporters, link checkers, a
    document_ready callback) go on: the document is idle, and says so once, when every root is made."""
    page.add_init_script(READY_WATCH)
    net = open_page(context, page, exported.as_uri())
    page.wait_for_function(f"() => {PAGE} && {PAGE}.complete")
    page.wait_for_function("() => Bokeh.documents[0].is_idle && window.__ready === 1", timeout=10000)
    assert page.evaluate("() => window.__readyComplete") is True  # not before the later roots
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.__ready") == 1
    net.check()
