"""Issue 31 in Chromium, in both pages: attention in tiles reaches the head's own output and follows the
head on screen; a drag of the last token's slider with the mask on leaves every earlier row of the
weights unchanged, and marked so (with the mask off, the rows that changed are marked).

One served app and one exported file for the module; the expected numbers come from Python's view data.
Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import pytest

from core.presets import CHAPTER
from tests.test_explorer_parity import assert_same
from tests.test_export import Offline
from widgets.state import HeadState
from widgets.tiles_viewdata import view_data as tiles_view_data
from widgets.viewdata import view_data

# The models of every Bokeh document of the page (the export's tabs are documents of their own).
FIND = "const find = (name) => Bokeh.documents.map((d) => d.get_model_by_name(name)).find((m) => m);"
COLUMNS = (
    "(name) => { " + FIND + " const d = find(name).data;"
    " const e = d instanceof Map ? [...d.entries()] : Object.entries(d);"
    " return Object.fromEntries(e.map(([k, v]) => [k, Array.from(v)])); }"
)
TEXT = "(name) => { " + FIND + " const m = find(name); return m ? m.text : null; }"
MOVE = "([name, value]) => { " + FIND + " find(name).value = value; }"


@pytest.fixture(scope="module")
def exported(export_copy):
    return export_copy / "head.html"


def open_export(page, exported):
    page.set_viewport_size({"width": 1300, "height": 1000})
    page.goto(exported.as_uri())
    page.wait_for_function("() => window.HeadExplorerPage && HeadExplorerPage.pages.some((p) => p.ready)")


def open_served(page, url):
    page.set_viewport_size({"width": 1300, "height": 1000})
    page.goto(url)
    drawing = "() => { " + FIND + " const c = find('head-channel'); return c && c.drawn_by === 'page'; }"
    page.wait_for_function(drawing, timeout=30_000)  # the page draws its own moves


def columns(page, name: str) -> dict:
    return page.evaluate(COLUMNS, name)


def wait_text(page, name: str, part: str) -> str:
    page.wait_for_function(
        "([name, part]) => { " + FIND + " const m = find(name); return !!m && m.text.includes(part); }",
        arg=[name, part],
        timeout=20_000,
    )
    return page.evaluate(TEXT, name)


def weights_rows(page) -> list[list[float]]:
    values = columns(page, "weights-cells")["value"]
    n = round(len(values) ** 0.5)
    return [values[k * n : (k + 1) * n] for k in range(n)]


def moved(x30: float, causal: bool = True) -> HeadState:
    """The head after it[0] moved to x30 (from the chapter's 0.2, or from where it was)."""
    s = HeadState()
    if not causal:
        s.apply(causal=False)
    s.set_x(3, 0, x30)
    return s


# --- attention in tiles ---------------------------------------------------------------------------------


def tiles_reach_the_heads_output_and_follow_it(page, artifacts, name: str) -> None:
    page.get_by_role("tab", name="In tiles").click()
    wait_text(page, "tiles-readout", "No tile yet")
    for _ in range(2):  # the chapter's four tokens in tiles of two
        page.get_by_role("button", name="Next tile").click()
    text = wait_text(page, "tiles-readout", "within 1e-12 ✓")
    s = HeadState()
    assert "The last tile gives the head&#x27;s own output, [0.23, 0.68]" in text
    assert page.get_by_role("button", name="Next tile").is_disabled()
    want = tiles_view_data(s.head, s.query, s.labels, 2, 2)
    assert_same(want["weights"], columns(page, "tiles-weights"), "tiles-weights")
    assert_same(want["weights"]["value"], list(CHAPTER.head().weights[3]), "the head's weights")
    page.screenshot(path=str(artifacts / f"tiles-{name}.png"), full_page=False)

    page.evaluate(MOVE, ["x-3-0", 0.5])  # a move of the head above: the tiles follow it
    after = moved(0.5)
    want = tiles_view_data(after.head, after.query, after.labels, 2, 2)
    text = wait_text(page, "tiles-readout", want["readout"][-200:].split("<p>")[-1][:40])
    assert page.evaluate(TEXT, "tiles-readout") == want["readout"]
    assert "within 1e-12 ✓" in text
    assert_same(want["scores"], columns(page, "tiles-scores"), "tiles-scores after the move")


def test_export_tiles_reach_the_heads_output_and_follow_its_moves(page, exported, context, artifacts):
    net = Offline(context, page)
    open_export(page, exported)
    tiles_reach_the_heads_output_and_follow_it(page, artifacts, "export")
    net.check()


def test_served_tiles_reach_the_heads_output_and_follow_its_moves(page, served_app, artifacts):
    open_served(page, served_app)
    tiles_reach_the_heads_output_and_follow_it(page, artifacts, "served")


# --- rows that cannot see the future ---------------------------------------------------------------------


def a_drag_of_the_last_token_leaves_the_earlier_rows(page, artifacts, name: str, unmask) -> None:
    before = weights_rows(page)
    for value in (0.3, 0.4, 0.55):  # a drag: one value after another
        page.evaluate(MOVE, ["x-3-0", value])
        s = moved(value)
        want = view_data(s.head, s.query, s.labels, s.dims, s.moved, s.before)
        page.wait_for_function(
            "([y]) => { " + FIND + " const d = find('weights-changed').data;"
            " const v = d instanceof Map ? d.get('y') : d.y; return v.length === 1 && v[0] === y; }",
            arg=[3.0],
        )
        assert_same(want["moved"]["unchanged"], columns(page, "weights-unchanged"), f"unchanged at {value}")
        assert columns(page, "weights-unchanged")["height"] == [3 - 0.16]  # every earlier row: The, cat, sat
        rows = weights_rows(page)
        assert rows[:3] == before[:3]  # their weights, to the last bit
        assert rows[3] != before[3]
    page.wait_for_function(
        "() => { " + FIND + " const t = find('steps').text;"
        " return t.includes('did not change, to the last bit (dashed)')"
        " && t.includes('no token before &#x27;it&#x27; can see it'); }"
    )
    page.locator(".bk-Figure").first.screenshot(path=str(artifacts / f"rows-unchanged-{name}.png"))

    unmask()  # the mask off: the same drag changes every row, and says so
    page.wait_for_function("() => { " + FIND + " return find('steps').text.includes('no key is masked'); }")
    page.evaluate(MOVE, ["x-3-0", 0.2])
    page.wait_for_function(
        "() => { " + FIND + " const d = find('weights-changed').data;"
        " const h = d instanceof Map ? d.get('height') : d.height; return h.length === 1 && h[0] > 3.8; }"
    )
    assert columns(page, "weights-unchanged")["x"] == []
    # the steps' note is its own message (the served page's figures may come before it)
    page.wait_for_function(
        "() => { " + FIND + " return find('steps').text"
        ".includes('tokens before &#x27;it&#x27; read it too'); }"
    )
    page.locator(".bk-Figure").first.screenshot(path=str(artifacts / f"rows-changed-{name}.png"))


def test_export_a_drag_with_the_mask_on_leaves_every_earlier_row_unchanged(page, exported, artifacts):
    open_export(page, exported)

    def unmask():
        off = "() => HeadExplorerPage.pages[0].dispatch({do: 'option', name: 'causal', value: false})"
        page.evaluate(off)

    a_drag_of_the_last_token_leaves_the_earlier_rows(page, artifacts, "export", unmask)


def test_served_a_drag_with_the_mask_on_leaves_every_earlier_row_unchanged(page, served_app, artifacts):
    open_served(page, served_app)

    def unmask():
        page.get_by_label("Causal mask (hide later tokens)").click()

    a_drag_of_the_last_token_leaves_the_earlier_rows(page, artifacts, "served", unmask)
