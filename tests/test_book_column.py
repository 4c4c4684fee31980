"""The explorer where most readers meet it: inside a book's page, and on a phone.

A small MkDocs site in the Material theme (as many books are built: a content column between the
navigation and the table of contents, under a header that sticks to the top of the window) gets the
export three ways: the `--fragment` block pasted into a page, the exported file in an <iframe> of
another, and the fragment beside a figure made with an older BokehJS (3.4.3, from PyPI,
tests/old_bokehjs.py), once before it and once after it. In Chromium, with every request that is not to
the local site blocked: the widget stays inside the column, the weights heatmap and the blend are on
screen together with the slider being dragged, a keyboard move gives the core's weights, and the older
figure still renders with its own BokehJS.

Then the exported file and the served page alone at 390, 760 and 1400 px: nothing passes the right edge,
no horizontal scroll, and no figure title or blend label is cut (their rendered widths are measured).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from playwright.sync_api import expect

from app.export import export
from app.fragment import fragment_html, page_in, with_height_reports
from core.presets import PRESETS
from tests.conftest import CONSOLE_PROBLEMS, free_port
from tests.old_bokehjs import VERSION as OLD_VERSION
from tests.old_bokehjs import old_bokehjs
from widgets.state import HeadState

WIDTHS = (390, 760, 1400)
NO_SIDE_SCROLL = "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
HEADER_PX = 64  # at most: Material's header, which sticks to the top of the window (48 px here)
PHONE_HEIGHT, DESKTOP_HEIGHT = 844, 900

# A figure made with the older BokehJS, as a chapter might carry one (its own API, its own version).
OLD_FIGURE = """<div id="{id}" class="old-figure"></div>
<script src="{js}/bokeh.min.js"></script>
<script src="{js}/bokeh-api.min.js"></script>
<script>
(function () {{
  const p = Bokeh.Plotting.figure({{title: "A figure of the chapter's own", width: 420, height: 260,
                                   tools: "hover"}});
  p.scatter({{x: [1, 2, 3, 4], y: [3, 1, 4, 2], size: 12}});
  Bokeh.Plotting.show(p, "#{id}").then(() => {{ window.oldFigureShown = (window.oldFigureShown || 0) + 1; }});
}})();
</script>
"""


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def page_md(title: str, body: str) -> str:
    return f"# {title}\n\nThe chapter's text before the widget.\n\n{body}\n\nThe chapter's text after it.\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory, built_export):
    """A built MkDocs site served on loopback; yields its base URL."""
    root = tmp_path_factory.mktemp("book")
    docs = root / "docs"
    (docs / "js").mkdir(parents=True)
    for f in old_bokehjs().iterdir():
        shutil.copy(f, docs / "js" / f.name)
    shutil.copyfile(built_export / "head.html", docs / "explorer.html")
    fragment = (built_export / "fragment.html").read_text()
    old = partial(OLD_FIGURE.format, js="../js")
    pages = {
        "index.md": page_md("Chapter 3", "Pages: pasted, iframe, old-before, old-after."),
        "pasted.md": page_md("Pasted", fragment),
        "iframe.md": page_md(
            "In an iframe",
            '<iframe src="../explorer.html" title="One attention head" '
            'style="width:100%;height:1400px;border:0"></iframe>',
        ),
        "old-before.md": page_md("Another Bokeh first", old(id="old") + "\n\n" + fragment),
        "old-after.md": page_md("Another Bokeh after", fragment + "\n\n" + old(id="old")),
    }
    for name, text in pages.items():
        (docs / name).write_text(text)
    (root / "mkdocs.yml").write_text(
        # font: false: the theme would otherwise fetch its fonts from Google (and the test blocks the network)
        "site_name: A transformer book\ntheme:\n  name: material\n  font: false\nnav:\n"
        + "".join(f"  - {name[:-3]}: {name}\n" for name in pages)
    )
    build = [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(root / "mkdocs.yml")]
    subprocess.run(build, check=True)
    port = free_port()
    httpd = ThreadingHTTPServer(("127.0.0.1", port), partial(Quiet, directory=str(root / "site")))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def local_only(context, base: str) -> list[str]:
    """Abort every request that does not go to `base` (or is inline); return the list of those aborted."""
    blocked: list[str] = []

    def route(r):
        url = r.request.url
        if url.startswith((base, "data:", "about:", "blob:")):
            r.continue_()
        else:
            blocked.append(url)
            r.abort()

    context.route("**/*", route)
    return blocked


def page_at(context, width: int, height: int):
    """A page of the test's own, `width` × `height`, in the worker's warm context (tests/conftest.py)."""
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    return page


def explorer_frame(page):
    """The frame the explorer runs in, once its chapter numbers are on screen."""
    page.wait_for_function(
        "() => [...document.querySelectorAll('iframe')].some(f => f.contentWindow.Bokeh"
        " && f.contentWindow.Bokeh.documents.length > 0)",
        timeout=30000,
    )
    frame = next(f for f in page.frames if f != page.main_frame)
    frame.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('steps').text.includes('0.13, 0.56, 0.14, 0.18')"
    )
    # and the parts added after the first one (the scores, the projections: the export's later roots) drawn
    frame.wait_for_function(
        "() => ['scores', 'qkv'].every((n) => { const m = Bokeh.documents[0].get_model_by_name(n);"
        " try { return !!m && !!Bokeh.index.get_one(m); } catch (e) { return false; } })"
    )
    return frame


def view_box(frame, name: str) -> dict:
    """A Bokeh model's box in the page's viewport (the frame's position added)."""
    offset = frame.frame_element().bounding_box()
    box = frame.evaluate(
        "(name) => { const m = Bokeh.documents[0].get_model_by_name(name);"
        " const r = Bokeh.index.get_one(m).el.getBoundingClientRect();"
        " return {x: r.x, y: r.y, width: r.width, height: r.height}; }",
        name,
    )
    return {**box, "x": box["x"] + offset["x"], "y": box["y"] + offset["y"]}


def inside(inner: dict, outer: dict, slack: float = 1.0) -> bool:
    return (
        inner["x"] >= outer["x"] - slack
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
    )


def on_screen(box: dict, height: int) -> bool:
    return box["y"] >= HEADER_PX - 1 and box["y"] + box["height"] <= height + 1


def drag_and_check(page, frame, height: int, t: int = 3, c: int = 0) -> None:
    """Scroll the page so the weights sit at the top, then: the weights, the blend and slider (t, c) are all
    on screen; a keyboard move there gives the core's weights."""
    weights = view_box(frame, "weights")
    page.evaluate("(y) => window.scrollBy(0, y)", weights["y"] - HEADER_PX)
    page.wait_for_timeout(100)
    boxes = {name: view_box(frame, name) for name in ("weights", "blend", f"x-{t}-{c}")}
    assert all(on_screen(b, height) for b in boxes.values()), boxes
    handle = frame.locator(".x-slider").nth(t * 3 + c).locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    state = HeadState()
    name = f"x-{t}-{c}"
    frame.wait_for_function(f"() => Bokeh.documents[0].get_model_by_name({name!r}).value !== {state.X[t][c]}")
    assert state.set_x(t, c, frame.evaluate(f"() => Bokeh.documents[0].get_model_by_name({name!r}).value"))
    expected = np.where(state.head.future, np.nan, state.head.weights).ravel()
    # the glue's callbacks run asynchronously: poll until the weights are the core's (BokehJS holds a
    # source's columns in a plain object or a Map: the binding writes a Map when it changes some of them)
    frame.wait_for_function(
        "(expected) => { const doc = Bokeh.documents[0];"
        " const data = doc.get_model_by_name('weights-cells').data;"
        " const v = Array.from(data instanceof Map ? data.get('value') : data.value);"
        " return v.length === expected.length && v.every((x, k) => expected[k] === null"
        " ? (x === null || Number.isNaN(x)) : Math.abs(x - expected[k]) < 1e-9); }",
        arg=[None if np.isnan(v) else float(v) for v in expected],
        timeout=10000,
    )
    # the move did not scroll the figures away from the slider
    boxes = {name: view_box(frame, name) for name in ("weights", "blend", name)}
    assert all(on_screen(b, height) for b in boxes.values()), boxes


def column_box(page) -> dict:
    return page.locator("article.md-content__inner").bounding_box()


def test_fragment_pasted_in_a_book_column(site, context, artifacts):
    """The theme's content column is ~820 px wide in a 1280 px window and ~690 px in a 1000 px one; the
    window is narrowed with the page open, so the frame follows a change of width too."""
    page = page_at(context, 1280, DESKTOP_HEIGHT)
    blocked = local_only(context, site)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{site}/pasted/")
    frame = explorer_frame(page)
    for window in (1280, 1000):
        page.set_viewport_size({"width": window, "height": DESKTOP_HEIGHT})
        column = column_box(page)
        assert 600 <= column["width"] <= 950, column
        # the frame is as tall as its content (nothing scrolls inside it) and fits the column
        page.wait_for_function(
            "() => { const f = document.querySelector('.attention-head-embed iframe');"
            " const d = f.contentDocument.documentElement;"
            " return d.scrollHeight <= d.clientHeight + 1 && f.clientHeight !== 1500; }"
        )
        assert inside(frame.frame_element().bounding_box(), column), window
        assert frame.evaluate(NO_SIDE_SCROLL)
        for name in ("weights", "blend", "steps", "scores", "qkv"):
            assert inside(view_box(frame, name), column), (window, name)
        page.evaluate("() => window.scrollTo(0, 0)")
    drag_and_check(page, frame, DESKTOP_HEIGHT)
    page.screenshot(path=str(artifacts / "book-pasted-1000.png"))
    assert errors == [] and blocked == [], (errors, blocked)


def test_exported_file_in_an_iframe_of_a_book_column(site, context, artifacts):
    page = page_at(context, 1280, DESKTOP_HEIGHT)
    blocked = local_only(context, site)
    page.goto(f"{site}/iframe/")
    frame = explorer_frame(page)
    column = column_box(page)
    assert inside(frame.frame_element().bounding_box(), column)
    assert frame.evaluate(NO_SIDE_SCROLL)
    page.screenshot(path=str(artifacts / "book-iframe.png"))
    drag_and_check(page, frame, DESKTOP_HEIGHT)
    assert blocked == [], blocked


@pytest.mark.parametrize("where", ["old-before", "old-after"])
def test_fragment_beside_an_older_bokehjs(site, context, artifacts, where):
    page = page_at(context, 1280, DESKTOP_HEIGHT)
    blocked = local_only(context, site)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.goto(f"{site}/{where}/")
    frame = explorer_frame(page)
    page.wait_for_function("() => window.oldFigureShown === 1", timeout=20000)
    # the page's own Bokeh is still the older one, and it drew its figure
    # (with --stock-bokeh both say "-other" after their version: tests/conftest.py)
    assert page.evaluate("() => Bokeh.version").removesuffix("-other") == OLD_VERSION
    assert frame.evaluate("() => Bokeh.version").removesuffix("-other") != OLD_VERSION
    old = page.locator("#old canvas").first.bounding_box()
    assert old and old["width"] > 300 and old["height"] > 200
    drag_and_check(page, frame, DESKTOP_HEIGHT)
    page.locator("#old").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / f"book-{where}.png"))
    assert errors == [] and blocked == [], (errors, blocked)


# Every figure title (and subtitle) measured in the font it is drawn in, against the room it has from the
# frame's left edge (where Bokeh starts it) to the canvas' right edge (where Bokeh clips it); and every
# label in the blend, from its point to the frame edge it faces away from.
CUT_TEXT = """() => {
  const ctx = document.createElement("canvas").getContext("2d");
  const width = (text, style, size, font) => {
    ctx.font = `${style} ${size} ${font}`;
    return ctx.measureText(text).width;
  };
  const column = (data, name) => Array.from(data instanceof Map ? data.get(name) : data[name]);
  const cut = [];
  let titles = 0;
  for (const m of Bokeh.documents[0].all_models) {
    if (!m.above) continue;
    const view = Bokeh.index.get_one(m);
    if (!view || !view.frame) continue;
    const room = view.el.getBoundingClientRect().width - view.frame.bbox.left;
    const own = m.title && m.title.text ? [m.title] : [];
    for (const t of [...own, ...m.above.filter(a => a.type === "Title")]) {
      titles += 1;
      const w = width(t.text, t.text_font_style, t.text_font_size, t.text_font);
      if (w > room) cut.push(`${m.name}: "${t.text}" needs ${Math.ceil(w)} px, has ${Math.floor(room)}`);
    }
    if (m.name === "blend") {
      const values = Bokeh.documents[0].get_model_by_name("blend-values").data;
      const xs = column(values, "x"), labels = column(values, "label");
      const {left, right} = view.frame.bbox, mid = (m.x_range.start + m.x_range.end) / 2;
      xs.forEach((x, k) => {
        const sx = view.frame.x_scale.compute(x), w = width(labels[k], "normal", "12px", "helvetica");
        const ok = x > mid ? sx - 8 - w >= left : sx + 8 + w <= right;
        if (!ok) cut.push(`blend label ${labels[k]}`);
      });
    }
  }
  return {titles, cut};
}"""


def check_fits(page, width: int, height: int) -> None:
    """Nothing past the right edge, no sideways scroll, no cut title or blend label; the weights, the blend
    and it[0]'s slider on screen together once the weights are scrolled to the top."""
    assert page.evaluate(NO_SIDE_SCROLL), width
    edges = page.evaluate(
        "() => [...document.querySelectorAll('section')].map(s => s.getBoundingClientRect().right)"
    )
    assert edges and max(edges) <= width + 1, (width, edges)
    found = page.evaluate(CUT_TEXT)
    assert found["titles"] >= 5 and found["cut"] == [], (width, found)
    top = page.evaluate("() => Bokeh.index.get_one(Bokeh.documents[0].get_model_by_name('weights')).el"
                        ".getBoundingClientRect().top")
    page.evaluate("(y) => window.scrollBy(0, y)", top - 4)
    page.wait_for_timeout(100)
    for name in ("weights", "blend", "x-3-0"):
        box = page.evaluate(
            "(n) => { const r = Bokeh.index.get_one(Bokeh.documents[0].get_model_by_name(n)).el"
            ".getBoundingClientRect(); return [r.top, r.bottom, r.right]; }", name
        )
        assert box[0] >= -1 and box[1] <= height + 1 and box[2] <= width + 1, (width, name, box)


@pytest.fixture(scope="module")
def exported_file(export_copy):
    return export_copy / "head.html"


@pytest.fixture
def served(served_app):
    return served_app


@pytest.mark.parametrize("kind", ["exported", "served"])
def test_alone_at_phone_tablet_and_desktop_widths(context, artifacts, request, kind):
    """Opened on a phone (390 px), then the window widened to 760 and 1400 px."""
    if kind == "exported":
        url = request.getfixturevalue("exported_file").as_uri()
    else:
        url = request.getfixturevalue("served")
    page = page_at(context, WIDTHS[0], PHONE_HEIGHT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_function(
        "() => window.Bokeh && Bokeh.documents.length > 0"
        " && Bokeh.documents[0].get_model_by_name('steps').text.includes('0.13, 0.56, 0.14, 0.18')",
        timeout=30000,
    )
    for width in WIDTHS:
        height = PHONE_HEIGHT if width < 500 else DESKTOP_HEIGHT
        page.set_viewport_size({"width": width, "height": height})
        page.evaluate("() => window.scrollTo(0, 0)")
        page.wait_for_timeout(400)  # BokehJS lays the roots out again
        page.screenshot(path=str(artifacts / f"alone-{kind}-{width}.png"), full_page=True)
        check_fits(page, width, height)
    assert errors == [], errors


def test_fragment_carries_the_page_intact():
    """The page travels as a JSON string inside a <script>: nothing in it can end that script early, and
    it arrives unchanged (plus the script that reports its height)."""
    page = '<html><body><script>let a = "</script>"; // <!-- <script></script></script>\n</body></html>'
    block = fragment_html(page)
    start = block.index('<script type="application/json"')
    script = block[block.index(">", start) + 1 : block.index("</script>", start)]  # up to its first end
    assert script.startswith('"<html>') and script.endswith('<\\/html>"') and "<!--" not in script
    assert page_in(block) == with_height_reports(page)
    assert page_in(block).startswith(page[: page.index("</body>")])


def test_many_tokens_on_a_phone(context, tmp_path, artifacts):
    """Ten tokens at 390 px: the heatmaps narrow their cells only as far as a number still fits
    (widgets/matrix_plot.py MIN_CELL_W), then their area scrolls; the page itself never scrolls sideways
    and no title is cut."""
    path = export(tmp_path / "tired.html", "tired")
    page = page_at(context, 390, PHONE_HEIGHT)
    page.goto(path.as_uri())
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0"
                           " && Bokeh.documents[0].get_model_by_name('weights-cells')")
    page.wait_for_timeout(500)
    assert page.evaluate(NO_SIDE_SCROLL)
    assert page.evaluate(CUT_TEXT)["cut"] == []
    # each cell is at least as wide as the widest number drawn in it
    cell, number = page.evaluate(
        "() => { const doc = Bokeh.documents[0], m = doc.get_model_by_name('weights');"
        " const cell = Bokeh.index.get_one(m).frame.bbox.width / (m.x_range.end - m.x_range.start);"
        " const ctx = document.createElement('canvas').getContext('2d'); ctx.font = '11px helvetica';"
        " const data = doc.get_model_by_name('weights-cells').data;"
        " const texts = Array.from(data instanceof Map ? data.get('text') : data.text);"
        " return [cell, Math.max(...texts.map(t => ctx.measureText(t).width))]; }"
    )
    assert number > 10 and cell >= number + 2, (cell, number)
    page.screenshot(path=str(artifacts / "alone-exported-390-ten-tokens.png"), full_page=True)


def fragment_on_preset(page, name: str):
    """The fragment's frame, once its page shows the preset the chapter page's link names."""
    page.wait_for_function(
        "(name) => { const f = document.querySelector('.attention-head-embed iframe');"
        " const B = f && f.contentWindow.Bokeh; if (!B || !B.documents.length) return false;"
        " const p = B.documents[0].get_model_by_name('preset'); return p && p.value === name; }",
        arg=name,
        timeout=30000,
    )
    return next(f for f in page.frames if f != page.main_frame)


def test_a_link_into_the_chapter_page_opens_that_head_in_the_fragment(site, context):
    """The fragment's page runs in a srcdoc frame: it reads the chapter page's own #link and keeps it current,
    so the book can link to "exercise 1" inside its own page."""
    page = page_at(context, 1280, DESKTOP_HEIGHT)
    blocked = local_only(context, site)
    page.goto(f"{site}/pasted/#preset=exercise-1")
    frame = fragment_on_preset(page, "exercise-1")
    expected = PRESETS["exercise-1"].head().weights[3]
    row = frame.evaluate(
        "() => { const d = Bokeh.documents[0].get_model_by_name('weights-cells').data;"
        " const get = (k) => Array.from(d instanceof Map ? d.get(k) : d[k]);"
        " const rows = get('y'), v = get('value'); return v.filter((_, k) => rows[k] === 3); }"
    )
    assert np.allclose(row, expected, atol=1e-9), (row, expected)
    handle = frame.locator(".x-slider").nth(9).locator(".noUi-handle")  # it[0]
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowUp")  # a keyboard move is a release too: the link follows it
    page.wait_for_function("() => decodeURIComponent(location.hash).includes('X=')", timeout=10000)
    assert "/pasted/" in page.url and blocked == []


def test_going_further_tabs_on_a_phone(context, exported_file):
    """Each "Going further" tab opened at 390 px: its rows wrap, and what still cannot fit (a figure wider
    than the phone) scrolls inside the tab's panel, never the page."""
    page = page_at(context, 390, PHONE_HEIGHT)
    page.goto(exported_file.as_uri())
    # the tabs' root is one the export adds after the first part (app/export.py LATER)
    page.wait_for_function(
        "() => window.HeadExplorerPage && HeadExplorerPage.pages[0] && HeadExplorerPage.pages[0].complete",
        timeout=30000,
    )
    tabs = page.locator(".more-tabs button")
    assert tabs.count() == 4
    for k in range(tabs.count()):
        tabs.nth(k).click()
        page.wait_for_function(f"() => Bokeh.documents.length >= {1 + k}")  # a tab's page is made on opening
        page.wait_for_timeout(300)
        assert page.evaluate(NO_SIDE_SCROLL), tabs.nth(k).inner_text()


def on_screen_together(boxes: dict, height: int, top: float) -> list[str]:
    """What is off the screen (below a bar `top` px high), or covered: the slider must lie below the blend."""
    off = [n for n, b in boxes.items() if not (b["y"] >= top - 1 and b["y"] + b["height"] <= height + 1)]
    slider = next(b for name, b in boxes.items() if name.startswith("x-"))
    if slider["y"] < boxes["blend"]["y"] + boxes["blend"]["height"] - 1:
        off.append("the slider is under the blend")
    return off


def test_a_phone_reader_sees_what_they_drag_in_a_book_column(site, context, artifacts):
    """Issue 26: at 390 px, "tired" (ten tokens, forty sliders) in the chapter's page: with "it"'s slider near
    the bottom of the screen, the weights and the blend come over the top of what the page shows (below the
    theme's bar) while it is dragged, and the same for a slider that takes the keyboard's focus; the move
    reaches the figures."""
    page = page_at(context, 390, PHONE_HEIGHT)
    blocked = local_only(context, site)
    page.goto(f"{site}/pasted/#preset=tired")
    frame = fragment_on_preset(page, "tired")
    frame.wait_for_function("() => HeadExplorerPage.pages[0].complete && Bokeh.documents[0]"
                            ".get_model_by_name('x-9-3') !== null")
    it = "x-7-0"
    box = view_box(frame, it)
    page.evaluate("(y) => window.scrollBy(0, y)", box["y"] + box["height"] - (PHONE_HEIGHT - 30))
    page.wait_for_timeout(300)
    handle = frame.locator(".x-slider").nth(7 * 4).locator(".noUi-handle")
    hb = handle.bounding_box()
    page.mouse.move(hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2)
    page.mouse.down()
    page.mouse.move(hb["x"] + hb["width"] / 2 + 25, hb["y"] + hb["height"] / 2, steps=4)
    page.wait_for_timeout(200)
    boxes = {name: view_box(frame, name) for name in ("weights", "blend", it)}
    page.screenshot(path=str(artifacts / "book-phone-drag-tired.png"))
    bar = page.evaluate("() => document.querySelector('.md-header').getBoundingClientRect().bottom")
    assert 0 < bar <= HEADER_PX
    assert on_screen_together(boxes, PHONE_HEIGHT, bar) == [], boxes
    page.mouse.up()
    frame.wait_for_function(f"() => HeadExplorerPage.pages[0].state.X[7][0] !== {PRESETS['tired'].X[7][0]}")
    # the keyboard: Tab to a slider further down (the last token's); the figures come with it, and the slider
    # is not under them
    for _ in range(2 * 4):
        page.keyboard.press("Tab")
    expect(frame.get_by_role("slider", name="tired, component 0", exact=True)).to_be_focused()
    page.wait_for_timeout(300)
    boxes = {name: view_box(frame, name) for name in ("weights", "blend", "x-9-0")}
    assert on_screen_together(boxes, PHONE_HEIGHT, bar) == [], boxes
    assert blocked == []


def test_a_phone_reader_sees_what_they_focus_alone(context, exported_file, artifacts):
    """The exported page on its own at 390 px: the keyboard's focus on "it"'s slider keeps the weights and the
    blend on screen with it."""
    page = page_at(context, 390, PHONE_HEIGHT)
    page.goto(exported_file.as_uri() + "#preset=tired")
    page.wait_for_function("() => { const p = window.HeadExplorerPage && HeadExplorerPage.pages[0];"
                           " return p && p.complete && p.state.preset === 'tired'"
                           " && Bokeh.documents[0].get_model_by_name('x-9-3') !== null; }", timeout=30000)
    page.locator(".x-slider").nth(7 * 4).locator(".noUi-handle").focus()
    page.wait_for_timeout(300)
    rect = ("(n) => { const r = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name(n)).el"
            ".getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; }")
    boxes = {name: page.evaluate(rect, name) for name in ("weights", "blend", "x-7-0")}
    page.screenshot(path=str(artifacts / "alone-phone-focus-tired.png"))
    assert on_screen_together(boxes, PHONE_HEIGHT, 0) == [], boxes
