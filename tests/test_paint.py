"""What BokehJS paints per move: a matrix too big for numbers is one picture (its cells kept, unpainted, for
the hover), tick labels are only as close as they can be read, and static/bokeh_seam.js's fixes are in
force (widgets/matrix_plot.py, static/bokeh_seam.js; bench/RESULTS-export.md, "Per-move paint")."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.test_export import open_page
from tests.test_export_offscreen import exported  # noqa: F401  (the module's export, made once)
from widgets.matrix_plot import MatrixPlot
from widgets.state import HeadState
from widgets.viewdata import BLEND_NAMED_TOP, matrix_cells, view_data

TOKENS = [f"t{k}" for k in range(16)]  # cells too small for numbers: a picture
X = np.round(np.random.default_rng(5).uniform(-1, 1, size=(len(TOKENS), 3)), 2)


def test_a_big_matrix_is_painted_as_a_picture_and_a_small_one_as_cells():
    small = HeadState()
    big = HeadState(tokens=TOKENS, X=X, query=len(TOKENS) - 1)
    for state, picture in ((small, False), (big, True)):
        view = view_data(state.head, state.query, state.labels)
        plot = MatrixPlot(
            "Weights",
            {"weights": view["cells"]["weights"]},
            (0, 1),
            state.labels,
            state.labels,
            kind="weights",
            layout=view["layout"]["weights"],
            name="weights",
            picture=True,
        )
        assert plot.picture_r.visible is picture and plot.numbers.visible is not picture
        assert plot.cells.glyph.fill_alpha == (0 if picture else 1)  # the cells stay for the hover
        image = plot.picture.data["image"][0]
        expected = np.where(state.head.future, np.nan, state.head.weights)
        assert np.allclose(image, expected, equal_nan=True)
    # Q, K and V share one figure: cells, not a picture
    qkv = {n: matrix_cells(getattr(big.head, n), big.labels, ["0", "1"]) for n in ("Q", "K", "V")}
    layout = view_data(big.head, big.query, big.labels)["layout"]["qkv"]
    plot = MatrixPlot("QKV", qkv, (-1, 1), big.labels, ["0", "1"], kind="scores", layout=layout, name="qkv",
                      picture=True)
    assert plot.picture is None


PICTURE_AND_CELLS = """() => {
  const doc = Bokeh.documents[0];
  const col = (s, k) => (s.data instanceof Map ? s.data.get(k) : s.data[k]);
  const picture = doc.get_model_by_name('weights-picture');
  const cells = doc.get_model_by_name('weights-cells');
  const r = doc.all_models && [...doc.all_models].find(m => m.data_source === picture);
  const plain = (xs) => Array.from(xs).map(v => Number.isNaN(v) ? null : v);
  return {visible: r.visible, image: plain(col(picture, 'image')[0]), value: plain(col(cells, 'value'))};
}"""


def settled(page, done, timeout_s: float = 10.0) -> dict:
    """PICTURE_AND_CELLS once `done` holds for it (the page writes a move in its next frame; under load
    that can be late), or its last reading after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        shown = page.evaluate(PICTURE_AND_CELLS)
        if done(shown) or time.monotonic() > deadline:
            return shown
        page.wait_for_timeout(50)


def test_export_paints_a_long_head_as_a_picture_that_follows_the_moves(
    exported, context, page, stock_bokeh  # noqa: F811
):
    net = open_page(context, page, (exported / "head.html").as_uri())
    picture = not stock_bokeh  # with static/bokeh_seam.js off the cells paint the colours (matrix_picture.js)
    if picture:
        got = page.evaluate(
            """() => ({
              patches: BokehSeam.patches,
              sliders: (() => {
                const view = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('x-3-0'));
                return getComputedStyle(view.shadow_el.querySelector('.noUi-origin')).willChange;
              })(),
            })"""
        )
        assert all(got["patches"][name] for name in ("colorBarImages", "tickLabelExtents", "emptyRects"))
        assert got["sliders"] == "auto"  # sliderLayers
    shown = page.evaluate(PICTURE_AND_CELLS)
    assert shown["visible"] is False  # four tokens: numbers in the cells
    params = {"preset": "custom", "tokens": ",".join(TOKENS), "X": ";".join(",".join(map(str, r)) for r in X)}
    page.evaluate("(params) => HeadExplorerPage.pages[0].dispatch({do: 'link', params})", params)
    for v in (0.5, -0.25):  # a move of the last token's first component, as its slider makes it
        move = {"do": "x", "token": len(TOKENS) - 1, "component": 0, "value": v}
        page.evaluate("(move) => HeadExplorerPage.pages[0].dispatch(move)", move)
        moved = X.copy()
        moved[len(TOKENS) - 1, 0] = v
        head = HeadState(tokens=TOKENS, X=moved, query=len(TOKENS) - 1).head
        expected = np.where(head.future, np.nan, head.weights).ravel()
        shown = settled(page, lambda s, want=expected: s["visible"] is picture and np.allclose(
            np.array(s["value"], dtype=float), want, equal_nan=True, atol=1e-9))
        assert shown["visible"] is picture
        if picture:
            assert np.allclose(np.array(shown["image"], dtype=float), expected, equal_nan=True, atol=1e-9)
        assert np.allclose(np.array(shown["value"], dtype=float), expected, equal_nan=True, atol=1e-9)
    # back to four tokens: cells with numbers again, the picture hidden
    page.evaluate("() => HeadExplorerPage.pages[0].dispatch({do: 'preset', name: 'chapter'})")
    assert settled(page, lambda s: len(s["value"]) == 16)["visible"] is False
    net.check()


BLEND_NAMES = """() => {
  const doc = Bokeh.documents[0];
  const values = doc.get_model_by_name('blend-values');
  const col = (s, k) => Array.from(s.data instanceof Map ? s.data.get(k) : s.data[k]);
  const text = [...doc.all_models].find(m => m.data_source === values && m.glyph.type === 'Text');
  return {painted: text.glyph.text.field, named: col(values, 'named'), label: col(values, 'label')};
}"""


def test_export_blend_at_64_tokens_names_the_query_and_its_largest_weights(
    exported, context, page, artifacts  # noqa: F811
):
    """Past 12 tokens the export's blend writes only the names widgets.viewdata.named_values picks (and
    the view data finds room for)."""
    T = 64
    X64 = np.round(np.random.default_rng(3).uniform(-1, 1, size=(T, 3)), 2)
    tokens = [f"t{k}" for k in range(T)]
    net = open_page(context, page, (exported / "head.html").as_uri())
    X_param = ";".join(",".join(map(str, r)) for r in X64)
    params = {"preset": "custom", "tokens": ",".join(tokens), "X": X_param, "query": "t63"}
    page.evaluate("(params) => HeadExplorerPage.pages[0].dispatch({do: 'link', params})", params)
    state = HeadState(tokens=tokens, X=X64, query=T - 1)
    expected = view_data(state.head, state.query, state.labels)["blend"]["values"]["named"]
    page.wait_for_function(f"() => ({BLEND_NAMES})().label.length === {T}")
    shown = page.evaluate(BLEND_NAMES)
    assert shown["painted"] == "named" and shown["named"] == expected
    named = [name for name in expected if name]
    assert "t63" in named and 2 <= len(named) <= BLEND_NAMED_TOP + 1, named
    blend = page.evaluate("() => Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('blend')).el"
                          ".getBoundingClientRect().toJSON()")
    page.screenshot(path=str(artifacts / "blend-64.png"), clip=blend)
    net.check()


# Every plot view of the page, with its axes' views and its glyph renderers' views.
PLOT_VIEWS_JS = """
  const plots = [];
  const walk = (view) => {
    if (view.canvas_view && view.renderer_views) plots.push(view);
    for (const child of view.children_views()) walk(child);
  };
  for (const root of Bokeh.index.roots) walk(root);
  const axes = (plot) => [...plot.renderer_views.values()].filter((v) => '_axis_picture' in v);
"""


@pytest.mark.seam
def test_a_move_draws_kept_axes_and_rewrites_only_the_steps_texts(exported, context, page):  # noqa: F811
    """bokeh_seam.js axisPictures and the binding's steps panel (static/explorer_page.js
    writeMarkup): a move draws each axis from its kept picture, and the page looks the same as when every
    axis is drawn afresh; the steps panel keeps its nodes and shows the model's text."""
    net = open_page(context, page, (exported / "head.html").as_uri())
    assert page.evaluate("() => BokehSeam.patches.axisPictures") is True
    # every part made (the later roots come in idle moments), so the screenshots below see one page
    page.wait_for_function("() => HeadExplorerPage.pages[0].complete !== false", timeout=30_000)
    page.evaluate(
        """() => {
          const view = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('steps'));
          window.__stepsTable = view.markup_el.querySelector('table');
        }"""
    )
    page.evaluate("() => { Bokeh.documents[0].get_model_by_name('x-3-0').value = 0.45; }")
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('steps').text.includes('0.45')")
    page.wait_for_function(  # the figures repainted: every axis holds its picture
        "() => {" + PLOT_VIEWS_JS + """
          return plots.every((p) => axes(p).every((a) => a._axis_picture !== null));
        }"""
    )
    steps = page.evaluate(
        """() => {
          const div = Bokeh.documents[0].get_model_by_name('steps');
          const el = Bokeh.index.find_one(div).markup_el;
          const fresh = document.createElement('template');
          fresh.innerHTML = div.text;
          return {same: el.querySelector('table') === window.__stepsTable,
                  shown: el.textContent, model: fresh.content.textContent};
        }"""
    )
    assert steps["same"] and steps["shown"] == steps["model"]
    kept = page.evaluate(
        "() => {" + PLOT_VIEWS_JS + """
          return {plots: plots.length, axes: plots.map((p) => axes(p).length).reduce((a, b) => a + b, 0),
                  kept: plots.map((p) => axes(p).filter((a) => a._axis_picture !== null).length)
                    .reduce((a, b) => a + b, 0)};
        }"""
    )
    assert kept["plots"] >= 5 and kept["kept"] == kept["axes"], kept
    shown = page.screenshot()
    page.evaluate(  # every axis drawn afresh: the page looks the same
        "async () => {" + PLOT_VIEWS_JS + """
          for (const p of plots) { for (const a of axes(p)) a._axis_picture = null; p.request_paint(); }
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        }"""
    )
    page.wait_for_timeout(300)
    assert page.screenshot() == shown
    hatched = page.evaluate(  # a hatched axis is drawn as BokehJS draws it, then kept again once plain
        "async () => {" + PLOT_VIEWS_JS + """
          const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
          const axis = axes(plots[0])[0];
          axis.model.background_hatch_pattern = '/';
          await frames();
          const whileHatched = axis._axis_picture;
          axis.model.background_hatch_pattern = null;
          window.__plainAgain = axis;
          return whileHatched;
        }"""
    )
    assert hatched is None
    # kept again at its next paint (which a busy machine may put off for some frames)
    page.wait_for_function("() => window.__plainAgain._axis_picture !== null", timeout=10_000)
    net.check()


@pytest.mark.seam
def test_glyph_copies_are_made_when_a_paint_needs_them(exported, context, page):  # noqa: F811
    """bokeh_seam.js glyphCopies: after a move only the glyph itself has the new data; the copies get it when
    a paint draws one (here a selection) or once the moves stop."""
    net = open_page(context, page, (exported / "head.html").as_uri())
    copies = """(view) => {
      const glyph = view.glyph, sel = view.selection_glyph;
      return {stale: !!view._copies_stale, text: Array.from(sel.text || []),
              want: Array.from(glyph.text || [])};
    }"""
    numbers = (  # the view of the weights' number labels
        "Bokeh.index.find_one([...Bokeh.documents[0].all_models].find((m) => m.type === 'GlyphRenderer'"
        " && m.data_source === Bokeh.documents[0].get_model_by_name('weights-cells')"
        " && m.glyph.type === 'Text'))"
    )
    page.evaluate("() => { Bokeh.documents[0].get_model_by_name('x-3-0').value = 0.45; }")
    page.wait_for_function(f"() => {numbers}._copies_stale === true")
    page.evaluate(f"() => {{ {numbers}.model.data_source.selected.indices = [0]; }}")
    page.wait_for_function(f"() => {numbers}._copies_stale === false")
    now = page.evaluate(f"() => ({copies})({numbers})")
    assert now["text"] == now["want"] and len(now["want"]) == 16
    page.evaluate(f"() => {{ {numbers}.model.data_source.selected.indices = []; }}")
    page.evaluate("() => { Bokeh.documents[0].get_model_by_name('x-3-0').value = 0.1; }")
    page.wait_for_function(f"() => {numbers}._copies_stale === true")
    page.wait_for_function(f"() => {numbers}._copies_stale === false")  # the moves stopped
    later = page.evaluate(f"() => ({copies})({numbers})")
    assert later["text"] == later["want"] and later["text"] != now["text"]
    net.check()


@pytest.mark.seam
def test_colour_bars_hear_of_a_mappers_range_only_when_it_changes(exported, context, page):  # noqa: F811
    """bokeh_seam.js mapperMetrics: mapping a column tells the mapper's colour bars of its range only when the
    range differs; a move (the weights' range is fixed) tells them nothing; a new `high` is heard, shown."""
    net = open_page(context, page, (exported / "head.html").as_uri())
    counts = page.evaluate(
        """() => {
          const Mapper = Bokeh.Models.get('LinearColorMapper');
          const mapper = new Mapper({palette: ['#000000', '#808080', '#ffffff']});  // range from the data
          let told = 0;
          mapper.metrics_change.connect(() => { told += 1; });
          const counts = [];
          for (const data of [[0, 1], [0, 1, 0.5], [0, 2], [0, 2]]) {
            const colours = mapper.rgba_mapper.v_compute(data);
            counts.push([told, Array.from(colours).length]);
          }
          return counts;
        }"""
    )
    assert [c[0] for c in counts] == [1, 1, 2, 2] and counts[2][1] == 8, counts
    heard = page.evaluate(
        """async () => {
          const doc = Bokeh.documents[0];
          const bar = [...doc.all_models].find((m) => m.type === 'ColorBar'
            && m.color_mapper.palette.length > 1 && [...doc.all_models].some((r) => r.type === 'GlyphRenderer'
              && r.data_source === doc.get_model_by_name('weights-cells')
              && r.glyph.fill_color && r.glyph.fill_color.transform === m.color_mapper));
          const mapper = bar.color_mapper;
          let told = 0;
          mapper.metrics_change.connect(() => { told += 1; });
          const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
          doc.get_model_by_name('x-3-0').value = 0.45;
          await frames();
          const afterMove = told;
          mapper.high = mapper.high + 0.5;
          await frames();
          const view = Bokeh.index.find_one(bar);
          return {afterMove, afterHigh: told, end: view._major_range.end, high: mapper.high};
        }"""
    )
    assert heard["afterMove"] == 0 and heard["afterHigh"] >= 1 and heard["end"] == heard["high"], heard
    net.check()


@pytest.mark.seam
def test_kept_text_sizes_are_the_texts_measured_sizes(exported, context, page):  # noqa: F811
    """bokeh_seam.js textSizes: a text box's size is kept per font and text; after a move each number's box
    has its text's measured width, and another font or text is measured anew."""
    net = open_page(context, page, (exported / "head.html").as_uri())
    page.evaluate("() => { Bokeh.documents[0].get_model_by_name('x-3-0').value = 0.45; }")
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('steps').text.includes('0.45')")
    got = page.evaluate(
        """async () => {
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
          const doc = Bokeh.documents[0];
          const renderer = [...doc.all_models].find((m) => m.type === 'GlyphRenderer'
            && m.data_source === doc.get_model_by_name('weights-cells') && m.glyph.type === 'Text');
          const glyph = Bokeh.index.find_one(renderer).glyph;
          const ctx = document.createElement('canvas').getContext('2d');
          const widths = glyph.labels.map((label) => {
            ctx.font = label.font;
            return [label.text, label.size().width, ctx.measureText(label.text).width];
          });
          const TextBox = Bokeh.require('core/graphics').TextBox;
          const box = new TextBox({text: '0.123'});
          box.font = 'normal 11px helvetica';
          const small = box.size().width;
          box.font = 'normal 22px helvetica';
          const big = box.size().width;
          box.text = '0.1';
          const shorter = box.size().width;
          return {patched: BokehSeam.patches.textSizes === true, widths, small, big, shorter};
        }"""
    )
    assert got["patched"] and len(got["widths"]) == 16, got
    assert all(abs(w - m) < 1e-9 for _text, w, m in got["widths"]), got["widths"]
    assert got["big"] > 1.5 * got["small"] and got["shorter"] < got["big"], got
    net.check()


@pytest.mark.seam
def test_a_slider_writes_its_new_value_into_the_title_shown(exported, context, page):  # noqa: F811
    """bokeh_seam.js sliderTitles: a move writes the slider's value into the title's nodes shown; a new title
    (other nodes) replaces them, and the title reads as BokehJS writes it."""
    net = open_page(context, page, (exported / "head.html").as_uri())
    got = page.evaluate(
        """async () => {
          const slider = Bokeh.documents[0].get_model_by_name('x-3-0');
          const view = Bokeh.index.find_one(slider);
          const title = () => view.title_el;
          const before = title().querySelector('span');
          slider.value = 0.45;
          await new Promise((r) => requestAnimationFrame(r));
          const moved = {same: title().querySelector('span') === before, text: title().textContent,
                         value: view.pretty(0.45)};
          slider.title = 'other';
          await new Promise((r) => requestAnimationFrame(r));
          const retitled = title().textContent;
          slider.show_value = false;
          slider.title = '';
          await new Promise((r) => requestAnimationFrame(r));
          return {moved, retitled, hidden: title().style.display, empty: title().childNodes.length};
        }"""
    )
    moved = got["moved"]
    assert moved["same"] and moved["text"] == f"it[0]: {moved['value']}", got
    assert got["retitled"] == f"other: {moved['value']}", got
    assert got["hidden"] == "none" and got["empty"] == 0, got
    net.check()
