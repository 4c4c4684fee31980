"""Accessibility in Chromium: axe-core finds nothing, the keyboard reaches everything, names and tables.

axe-core comes from npm (tests/node, installed by setup.sh) and is injected into the page. The export is
opened from file://, the served page from `panel serve`; in both, static/a11y.js names the controls and
builds the figures' tables, and the numbers read from the accessibility tree are the Python core's.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from core.presets import CHAPTER, PRESETS
from tests.conftest import CONSOLE_PROBLEMS, ROOT, serve
from widgets import cost_page, cost_viewdata, saturation_page, saturation_viewdata, tiles_viewdata
from widgets.a11y import SERIES_COLUMNS, figure_tables, series_table
from widgets.cost_state import CostSettings
from widgets.lab_data import load_lab, token_labels
from widgets.saturation_state import SaturationSettings
from widgets.state import HeadState
from widgets.viewdata import view_data

AXE_JS = ROOT / "tests" / "node" / "node_modules" / "axe-core" / "axe.min.js"
FIGURES = ("weights", "blend", "scores", "scaled", "qkv")
READY = (
    "() => window.A11y && A11y.following && window.Bokeh && Bokeh.documents.length > 0"
    " && document.querySelectorAll('details.figure-table').length >= 5"
)
# Every element the Tab key should stop at, in the order of the DOM with shadow roots walked where they
# are (the order the Tab key follows), kept for DESCRIBE_FOCUS: in the whole page, or (OPEN_TAB) in the
# focused tab and its panel.
OPEN_TAB = "the focused tab and its panel"
TAB_STOPS = """(within) => {
  const found = [];
  const stop = (el) => {
    const nested = el.parentElement && el.parentElement.closest("button");  // a link inside a button
    if (el.tabIndex >= 0 && !el.disabled && !nested && !el.closest("[inert]")
        && el.checkVisibility({checkVisibilityCSS: true})) found.push(el);
  };
  const walk = (root) => root.querySelectorAll("*").forEach((el) => {
    stop(el);
    if (el.shadowRoot) walk(el.shadowRoot);
  });
  if (within) {
    let tab = document.activeElement;
    while (tab.shadowRoot && tab.shadowRoot.activeElement) tab = tab.shadowRoot.activeElement;
    const panel = tab.getRootNode().getElementById(tab.getAttribute("aria-controls"));
    found.push(tab);
    stop(panel);
    walk(panel);
    if (panel.shadowRoot) walk(panel.shadowRoot);
  } else walk(document);
  window.__tabStops = found;
  return found.length;
}"""
# The element that has the focus (inside shadow roots too): its place among TAB_STOPS (-1: not one of them),
# what a screen reader would say first, and whether a focus ring shows (an outline or a box shadow).
DESCRIBE_FOCUS = """() => {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  if (!el || el === document.body) return null;
  const text = (n) => n.shadowRoot ? text(n.shadowRoot) : [...n.childNodes].map((c) =>
    c.nodeType === 3 ? c.textContent : (c.nodeType === 1 && c.tagName !== "STYLE") ? text(c) : "").join("");
  const label = el.labels && el.labels.length ? el.labels[0].textContent : "";
  const s = getComputedStyle(el);
  return {
    stop: (window.__tabStops || []).indexOf(el),
    name: (el.getAttribute("aria-label") || label || text(el) || el.tagName)
      .replace(/\\s+/g, " ").trim().slice(0, 80),
    ring: (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2) || s.boxShadow !== "none",
  };
}"""
FOCUSED = "() => { const f = (" + DESCRIBE_FOCUS + ")(); return f && f.name; }"


def keyboard_walk(page, tab=None) -> list[str]:
    """Press Tab from the page's start until the focus comes back round, or from `tab` (a tab's locator)
    until it leaves that tab's panel; return the names of the stops. Fails unless every control is
    reached, in the DOM's order, each with a visible focus ring, and the focus comes back (no trap)."""
    within = None
    seen: list[dict] = []
    if tab is not None:
        tab.focus()
        within = OPEN_TAB
    count = page.evaluate(TAB_STOPS, within)
    if tab is not None:
        seen.append(page.evaluate(DESCRIBE_FOCUS))
    for _ in range(count + 20):
        page.keyboard.press("Tab")
        now = page.evaluate(DESCRIBE_FOCUS)
        if now is None:
            continue
        if seen and now["stop"] == seen[0]["stop"] or within and now["stop"] < 0:
            break
        seen.append(now)
    else:
        pytest.fail(f"Tab never came round or left the panel: reached {[s['name'] for s in seen]}")
    first = min(range(len(seen)), key=lambda k: seen[k]["stop"])
    seen = seen[first:] + seen[:first]  # round the page from its first stop
    names = [s["name"] for s in seen]
    stops = [s["stop"] for s in seen]
    assert -1 not in stops, f"the focus went somewhere Tab should not stop: {names}"
    missed = count - len(set(stops))
    assert sorted(stops) == list(range(count)), f"Tab missed {missed} control(s); reached {names}"
    assert stops == sorted(stops), f"not in the page's order: {names}"
    assert [s["name"] for s in seen if not s["ring"]] == [], "no visible focus ring"
    return names


TAB_STRIP = """() => {
  const tabs = [], find = (root) => root.querySelectorAll("*").forEach((el) => {
    if (el.getAttribute("role") === "tab") tabs.push(el);
    if (el.shadowRoot) find(el.shadowRoot);
  });
  find(document);
  return tabs.map((tab) => {
    const panel = tab.getRootNode().getElementById(tab.getAttribute("aria-controls"));
    return {name: tab.textContent.trim(), selected: tab.getAttribute("aria-selected"), tabindex: tab.tabIndex,
            list: tab.parentElement.getAttribute("role"),
            panel: panel && panel.getAttribute("role"),
            labelled: panel && panel.getAttribute("aria-labelledby") === tab.id};
  });
}"""


def check_tab_pattern(page, titles: list[str]) -> None:
    """The "Going further" tabs follow the WAI-ARIA tabs pattern: roles, each tab tied to its panel, only
    the selected tab in the Tab order; the arrows (round the strip), Home and End move the focus along it,
    and Enter opens the focused tab."""
    strip = page.evaluate(TAB_STRIP)
    assert [t["name"] for t in strip] == titles
    assert all(t["list"] == "tablist" and t["panel"] == "tabpanel" and t["labelled"] for t in strip), strip
    others = [("false", -1)] * (len(titles) - 1)
    assert [(t["selected"], t["tabindex"]) for t in strip] == [("true", 0), *others]
    page.get_by_role("tab", name=titles[0]).focus()
    for key, want in (("ArrowRight", 1), ("ArrowLeft", 0), ("ArrowLeft", -1), ("Home", 0), ("End", -1)):
        page.keyboard.press(key)
        assert page.evaluate(FOCUSED) == titles[want], key
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    tab = page.get_by_role("tab", name=titles[1])
    expect(tab).to_have_attribute("aria-selected", "true", timeout=10_000)
    expect(tab).to_have_attribute("tabindex", "0")
    assert page.evaluate(FOCUSED) == titles[1]  # still on the tab it opened (Panel rebuilds the strip)
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    expect(page.get_by_role("tab", name=titles[0])).to_have_attribute("aria-selected", "true", timeout=10_000)


EXPLORER_TABS = (  # a field of each
    ("Why ÷√d", "seed"), ("Long-context cost", "T exactly"), ("In tiles", "tile size (keys)"),
)  # fmt: skip


def open_by_keyboard(page, title: str, field: str):
    """Open a tab as a keyboard user would (its Enter), wait for its explorer, return the tab."""
    tab = page.get_by_role("tab", name=title)
    tab.focus()
    page.keyboard.press("Enter")
    expect(tab).to_have_attribute("aria-selected", "true", timeout=10_000)
    # The tab's explorer is built when first opened: wait for one of its parts, then until its panel's
    # Tab stops stay the same for a moment (under load Panel may still be rebuilding the strip and panel).
    page.get_by_label(field, exact=True).wait_for(timeout=20_000)
    last = None
    for _ in range(50):
        page.wait_for_timeout(300)
        tab.focus()
        now = page.evaluate(TAB_STOPS, OPEN_TAB)
        if now == last and now > 1:
            break
        last = now
    return tab


def walk_explorer_tabs(page) -> None:
    """Each further explorer's tab opened by keyboard, then its panel walked with Tab."""
    for title, field in EXPLORER_TABS:
        seen = keyboard_walk(page, open_by_keyboard(page, title, field))
        assert seen[0] == title and field in seen and seen[-1].endswith("as a table"), seen


def axe_violations(page, within: str | None = None) -> list[str]:
    """axe-core's violations in the page, or only in the elements matching the CSS selector `within`."""
    if not AXE_JS.exists():
        pytest.fail("axe-core is missing: run `bash setup.sh` (it runs npm ci in tests/node)")
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    found = page.evaluate(
        "async (within) => (await axe.run(within ? {include: [within]} : document,"
        " {resultTypes: ['violations']})).violations"
        ".map(v => `${v.id} (${v.impact}): ${v.nodes.length} × ${v.nodes[0].target.join(' ')}`)",
        within,
    )
    return found


def chapter_tables(x_it_0: float = 0.2) -> dict:
    s = HeadState()
    if x_it_0 != 0.2:
        s.set_x(3, 0, x_it_0)
    return figure_tables(view_data(s.head, s.query, s.labels, s.dims))


def table_rows(page, figure: str) -> list[list[str]]:
    """The figure's table as the page shows it: header row, then one list per token (shadow roots too:
    the export's further explorers live in a Div's)."""
    return page.locator(f'details[data-figure="{figure}"] tr').evaluate_all(
        "trs => trs.map(tr => [...tr.children].map(c => c.textContent))"
    )


def expect_table(page, figure: str, table: dict) -> None:
    want = [["", *table["columns"]], *([r, *cells] for r, cells in zip(table["rows"], table["body"]))]
    for _ in range(100):
        if table_rows(page, figure) == want:
            return
        page.wait_for_timeout(100)
    assert table_rows(page, figure) == want


@pytest.fixture(scope="module")
def export_url(export_copy):
    return (export_copy / "head.html").as_uri()


def open_page(page, url: str):
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(url)
    page.wait_for_function(READY, timeout=60_000)
    # every part of the export made (its later roots come in idle moments), so the Tab stops are all there
    page.wait_for_function(
        "() => !window.HeadExplorerPage || HeadExplorerPage.pages.every((p) => p.complete !== false)",
        timeout=30_000,
    )
    for header in page.locator(".card-header").all():  # named by its title, which is drawn a little later
        header.filter(has_text=re.compile(r"\S")).wait_for(timeout=30_000)
    return errors


def further_tables() -> dict:
    """The further explorers' figures' tables on their defaults."""
    sat, cost = SaturationSettings(), CostSettings()
    curve = saturation_viewdata.view_data(sat.curve, sat.point, sat.worked)["curve"]
    sources = {name: curve for name in SERIES_COLUMNS}
    sources["cost-figure"] = cost_viewdata.view_data(cost.cost, cost.gpu_gb, cost.tile)["lines"]
    head = HeadState()  # the tiles tab opens on the head above, no tile done yet
    sources["tiles-figure"] = tiles_viewdata.view_data(head.head, head.query, head.labels, 2, 0)["scores"]
    return {name: series_table(sources[name], columns) for name, columns in SERIES_COLUMNS.items()}


TAB_FIGURES = {
    "Why ÷√d": ("saturation-spread", "saturation-weight", "saturation-gradient", "saturation-entropy"),
    "Long-context cost": ("cost-figure",),
    "In tiles": ("tiles-figure",),
}
# No horizontal page scroll at 200 % zoom of a 1280 px window (WCAG 1.4.10).
ZOOMED = {"width": 640, "height": 800}
PAGE_WIDER_THAN_VIEW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


def open_tables(page, tab: str) -> None:
    """Open the tab's figures' tables and check them against Python's."""
    tables = further_tables()
    for figure in TAB_FIGURES[tab]:
        page.locator(f'details[data-figure="{figure}"] > summary').click()
        expect_table(page, figure, tables[figure])


def lab_is_named_and_tabled(page) -> None:
    """The training lab (static/lab.js, in both pages): its controls are named, each heatmap is a named table
    whose headers are the probe's tokens, the query's row and masked cells said in words; then a two-layer
    run is picked, so the layer-0 table is checked too."""
    run = page.get_by_role("combobox", name="Run", exact=True)
    assert run.count() == 1
    assert page.get_by_role("slider", name="Snapshot", exact=True).count() == 1
    assert page.get_by_role("combobox", name="Query token", exact=True).count() == 1
    assert page.get_by_role("combobox", name="Seed", exact=True).count() == 1
    run.select_option("positional-lookup")
    tokens = token_labels(load_lab()["runs"]["positional-lookup"]["seeds"][0]["probe"])
    for name in ("The learned head's weights on the probe", "Layer 0's weights on the probe"):
        table = page.get_by_role("table", name=name, exact=True)
        headers = table.get_by_role("columnheader").all_inner_texts()
        assert headers[1:] == tokens, name
        assert table.get_by_role("rowheader").all_inner_texts()[0] == tokens[0], name
        assert 'cell "masked"' in table.aria_snapshot(), name
    weights = page.get_by_role("table", name="The learned head's weights on the probe", exact=True)
    assert "(the query)" in weights.aria_snapshot()
    w_q = page.get_by_role("table", name="Learned W_Q (rows: stream, columns: head)", exact=True)
    assert w_q.count() == 1


def test_export_has_no_axe_violations_and_names_every_slider(page, export_url, artifacts):
    errors = open_page(page, export_url)
    for label, vector in zip(CHAPTER.tokens, CHAPTER.X):
        for c, v in enumerate(vector):
            slider = page.get_by_role("slider", name=f"{label}, component {c}", exact=True)
            assert slider.get_attribute("aria-valuetext") == f"{v:.2f}"
    assert page.get_by_role("button", name=re.compile("^Save: Weights")).count() == 1
    for summary in page.locator("details.figure-table > summary").all():
        summary.click()
    # the editor, the τ slider and the training lab are on the page from the start
    assert page.get_by_role("textbox", name="W_V row 2 column 1", exact=True).count() == 1
    assert page.get_by_role("slider", name="Softmax temperature τ (scores ÷ τ)", exact=True).count() == 1
    assert page.get_by_role("region", name="Training lab", exact=True).count() == 1
    assert axe_violations(page) == []  # the whole page, its tables open
    lab_is_named_and_tabled(page)
    assert axe_violations(page, "#training-lab") == []  # the lab on a two-layer run
    for tab, field in (("Why ÷√d", "seed"), ("Long-context cost", "T exactly")):
        page.get_by_role("tab", name=tab).click()
        # Its Bokeh document is embedded when the tab first opens: wait for one of its fields.
        page.get_by_label(field, exact=True).wait_for(timeout=20_000)
        page.wait_for_timeout(300)
        open_tables(page, tab)
        assert axe_violations(page, ".area-more") == [], tab
    tables = chapter_tables()
    for figure in FIGURES:
        expect_table(page, figure, tables[figure])
    tree = page.locator('details[data-figure="weights"]').aria_snapshot()
    assert 'rowheader "it (the query)"' in tree and 'cell "0.56"' in tree and 'cell "masked"' in tree
    blend = page.locator('details[data-figure="blend"]').aria_snapshot()
    assert tables["blend"]["note"] in blend
    page.screenshot(path=str(artifacts / "a11y-export-tables.png"), full_page=True)
    assert errors == []


def test_keyboard_alone_reaches_every_control_and_moves_a_weight(page, export_url, artifacts):
    errors = open_page(page, export_url)
    page.locator('details[data-figure="weights"] > summary').focus()  # a first Tab lands in the page
    page.keyboard.press("Enter")  # opened from the keyboard
    page.evaluate("() => document.activeElement.blur()")
    seen = keyboard_walk(page)
    want = [
        "Preset",
        "Query token (the row being read)",
        *(f"{t}, component {c}" for t in CHAPTER.tokens for c in range(3)),
        "Divide scores by √d",
        "Causal mask (hide later tokens)",
        "Tie keys to queries (W_K = W_Q)",
        "softmax",
        "raw scores",
        "top-1",
        "Multiply X by (every token vector is scaled by this number)",
        "Softmax temperature τ (scores ÷ τ)",
        "Reset to the chapter's example",
        "What each switch shows",
        *(f"Save: {t}" for t in ("Weights", "The blend", "Scores Q·Kᵀ", "Scores after", "Q = X·W_Q")),
        "The weights as a table",
        "Q, K and V as a table",
        "Download every matrix (JSON)",
        "Token labels, separated by commas",
        "Add a token",
        "Remove the query token",
        "Token width C",
        "Head width d",
        *(f"{w} row {r} column {c}" for w in ("W_Q", "W_K", "W_V") for r in range(3) for c in range(2)),
        "Going further",  # the selected tab only: the arrow keys move along the strip
        "Run",
        "Snapshot",
        "Training lab: the steps for the chosen query",
    ]
    missing = [w for w in want if not any(s.startswith(w) for s in seen)]
    assert missing == [], f"not reached by Tab: {missing}; reached {seen}"
    assert seen.index("The, component 0") < seen.index("it, component 2")  # controls in reading order
    check_tab_pattern(page, ["Going further", *(title for title, _ in EXPLORER_TABS)])
    walk_explorer_tabs(page)

    page.get_by_role("slider", name="it, component 0", exact=True).focus()
    ring = page.evaluate(
        "() => { let el = document.activeElement; while (el.shadowRoot && el.shadowRoot.activeElement)"
        " el = el.shadowRoot.activeElement; const s = getComputedStyle(el);"
        " return [s.outlineStyle, s.outlineWidth, s.boxShadow]; }"
    )
    assert ring[0] != "none" or ring[2] != "none", ring  # a visible focus ring
    page.keyboard.press("ArrowRight")
    slider = page.get_by_role("slider", name="it, component 0", exact=True)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('x-3-0').value > 0.2", timeout=10_000)
    assert slider.get_attribute("aria-valuetext") == "0.25"  # announced as it changes
    moved = chapter_tables(0.25)["weights"]
    expect_table(page, "weights", moved)  # the open table followed
    said = ", ".join(f"{c} {v}" for c, v in zip(moved["columns"], moved["body"][3]))
    status = page.get_by_role("status")  # what a screen reader hears once the slider rests
    status.filter(has_text=f"Weights of it: {said}").wait_for(timeout=10_000)
    page.screenshot(path=str(artifacts / "a11y-keyboard-focus.png"))
    assert errors == []


def open_editor_by_keyboard(page) -> None:
    """The served page's head editor is built when its card is first opened: open it with Enter."""
    card = page.get_by_role("button", name="Edit the head")
    assert card.get_attribute("aria-expanded") == "false"
    card.focus()
    page.keyboard.press("Enter")
    page.get_by_role("textbox", name="W_V row 2 column 1", exact=True).wait_for(timeout=20_000)
    expect(card).to_have_attribute("aria-expanded", "true", timeout=10_000)
    page.wait_for_timeout(300)  # the card's re-render settles before a keyboard walk


def test_served_page_and_its_tabs_have_no_axe_violations_and_go_by_keyboard(page, served_app):
    errors = open_page(page, served_app)
    assert axe_violations(page) == []  # the editor's card closed, as the page opens
    seen = keyboard_walk(page)
    assert seen.index("it, component 2") < seen.index("Edit the head") < seen.index("Going further")
    open_editor_by_keyboard(page)
    assert axe_violations(page) == []  # and open
    assert page.get_by_role("textbox", name="W_Q row 1 column 0", exact=True).count() == 1
    assert page.get_by_role("button", name="Increase Head width d", exact=True).count() == 1
    seen = keyboard_walk(page)
    assert seen.index("it, component 2") < seen.index("Edit the head") < seen.index("W_V row 2 column 1")
    check_tab_pattern(page, ["Going further", *(title for title, _ in EXPLORER_TABS), "Training lab"])
    for title, field in EXPLORER_TABS:
        tab = open_by_keyboard(page, title, field)
        seen = keyboard_walk(page, tab)
        assert seen[0] == title and field in seen and seen[-1].endswith("as a table"), seen
        open_tables(page, title)
        assert axe_violations(page, ".area-more") == [], title
    lab = "Training lab: the steps for the chosen query"  # a scrolling panel
    page.get_by_role("tab", name="Training lab").focus()
    page.keyboard.press("Enter")
    page.get_by_role("region", name=lab, exact=True).wait_for(timeout=20_000)
    page.wait_for_timeout(500)
    lab_is_named_and_tabled(page)
    assert axe_violations(page, ".area-more") == [], "Training lab"
    assert errors == []


@pytest.fixture(scope="module")
def teacher_page_url(tmp_path_factory):
    """The teacher's page, served alone and without the key check (tests/test_class.py tests the key)."""
    log = tmp_path_factory.mktemp("teacher") / "panel.log"
    with serve("app/teacher.py", log=log) as base:
        yield f"{base}/teacher"
    assert "Traceback" not in log.read_text()


def test_teacher_page_has_no_axe_violations(page, teacher_page_url, artifacts):
    errors = open_page(page, teacher_page_url)
    send = page.get_by_role("button", name="Send this head to every student", exact=True)
    assert send.count() == 1
    assert page.get_by_role("slider", name="it, component 0", exact=True).count() == 1
    page.locator('details[data-figure="class-chart"] > summary').click()  # the class chart's text alternative
    page.locator('details[data-figure="class-chart"]').get_by_text("No student's row yet.").wait_for()
    assert axe_violations(page) == []
    seen = keyboard_walk(page)
    # the desk comes first: the send, the question for the class (Reveal and Close wait for a question)
    assert seen[:4] == [
        "Send this head to every student",
        "Question for the class",
        "Ask the class",
        "The class as a table",
    ]
    for width in (ZOOMED["width"], 390):  # 200 % zoom, a phone: the class under the code, all on screen
        page.set_viewport_size({"width": width, "height": ZOOMED["height"]})
        page.wait_for_timeout(400)
        assert page.evaluate(PAGE_WIDER_THAN_VIEW) <= 0, width
        assert page.evaluate(PARTS_CUT, ["class-chart"]) == {"seen": ["class-chart"], "cut": []}, width
    page.set_viewport_size({"width": 1400, "height": 1000})
    send.focus()
    page.screenshot(path=str(artifacts / "a11y-teacher-focus.png"))
    assert errors == []


def test_served_names_and_tables_follow_the_server(page, served_app):
    open_page(page, served_app)
    page.locator('details[data-figure="weights"] > summary').click()
    expect_table(page, "weights", chapter_tables()["weights"])
    slider = page.get_by_role("slider", name="it, component 0", exact=True)
    slider.focus()
    page.keyboard.press("ArrowRight")
    expect_table(page, "weights", chapter_tables(0.25)["weights"])  # numbers from the server, in the table
    open_editor_by_keyboard(page)
    labels = page.get_by_role("textbox", name="Token labels, separated by commas")
    labels.fill("A, cat, sat, it")
    labels.press("Enter")
    page.get_by_role("slider", name="A, component 2", exact=True).wait_for(timeout=10_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('details[data-figure=weights] th')]"
        ".some(t => t.textContent === 'A')",
        timeout=10_000,
    )


def test_export_renames_sliders_for_a_preset_with_other_tokens(page, export_url):
    """The export's glue hands new token labels and widths to static/a11y.js, which renames the controls."""
    errors = open_page(page, export_url)
    other = PRESETS["tired"]  # other tokens, and C = 4
    assert other.tokens[-1] == "tired" and len(other.X[0]) == 4
    page.evaluate("() => { Bokeh.documents[0].get_model_by_name('preset').value = 'tired'; }")
    page.get_by_role("slider", name="tired, component 3", exact=True).wait_for(timeout=10_000)
    assert page.get_by_role("slider", name="it, component 0", exact=True).count() == 1  # "it" is token 7 now
    # the editor's new W grids follow the figures (at once when in sight, else within ~200 ms)
    page.get_by_role("textbox", name="W_Q row 3 column 1", exact=True).wait_for(timeout=10_000)
    assert errors == []


def test_sliders_report_their_exact_value(page, export_url):
    """Issue 26: noUiSlider says aria-valuenow 0.3 for 0.25; the handle reports the exact value, at the
    slider's step (0.45 for a value two roundings off it), as the page's links write it."""
    errors = open_page(page, export_url)
    handle = page.get_by_role("slider", name="it, component 0", exact=True)
    for value, said in ((0.25, "0.25"), (0.1 * 3 + 0.15, "0.45"), (-1.35, "-1.35")):
        page.evaluate(f"() => {{ Bokeh.documents[0].get_model_by_name('x-3-0').value = {value!r}; }}")
        expect(handle).to_have_attribute("aria-valuenow", said)
    assert handle.get_attribute("aria-valuemin") == "-2" and handle.get_attribute("aria-valuemax") == "2"
    assert errors == []


# The further explorers' parts that must fit the window: their layouts, figures, controls and tables.
FURTHER_PARTS = (
    "saturation-explorer", "saturation-d", "saturation-spread", "saturation-weight", "saturation-gradient",
    "saturation-entropy", "saturation-worked",
    *(f"saturation-{name}" for name, _, _ in saturation_page.NUMBER_BOXES),
    "cost-explorer", "cost-figure", "cost-readout", "cost-preset", "cost-T-slider", "cost-gpu",
    *(f"cost-{name}" for name, _, _ in cost_page.NUMBER_BOXES),
    "tiles-explorer", "tiles-figure", "tiles-size", "tiles-next", "tiles-again", "tiles-readout",
    "tiles-table",
)  # fmt: skip
# The visible parts of `names` (in any Bokeh document of the page), and those that run past the window's
# edges or whose title is wider than the figure has room for (Bokeh cuts a title at the canvas's edge).
PARTS_CUT = """(names) => {
  const vw = document.documentElement.clientWidth, cut = [], seen = [];
  const ctx = document.createElement("canvas").getContext("2d");
  for (const doc of Bokeh.documents) for (const name of names) {
    const m = doc.get_model_by_name(name);
    let view = null;
    try { view = m && Bokeh.index.get_one(m); } catch (e) { continue; }  // not on the page (a closed tab)
    if (!view || !view.el.checkVisibility({visibilityProperty: true})) continue;
    seen.push(name);
    const r = view.el.getBoundingClientRect();
    const [left, right] = [Math.round(r.left), Math.round(r.right)];
    if (left < 0 || right > vw) cut.push(`${name}: ${left}–${right} px`);
    if (!view.frame) continue;
    const own = m.title && m.title.text ? [m.title] : [];
    for (const t of [...own, ...(m.above || []).filter((a) => a.type === "Title" && a !== m.title)]) {
      ctx.font = `${t.text_font_style} ${t.text_font_size} ${t.text_font}`;
      const need = ctx.measureText(t.text).width, room = r.width - view.frame.bbox.left;
      if (need > room) cut.push(`${name}: "${t.text}" needs ${Math.ceil(need)} px, has ${Math.floor(room)}`);
    }
  }
  return {seen, cut};
}"""
WIDTHS = (1400, 760, ZOOMED["width"], 390)  # desktop, tablet, 200 % zoom of 1280 px, phone


def fits_at_every_width(page, url: str, artifacts, name: str) -> None:
    """The head explorer and each further explorer at every width: no sideways page scroll (WCAG 1.4.10),
    and the explorers' parts all on screen, titles whole: nothing left to scroll inside a panel."""
    open_page(page, url)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": ZOOMED["height"]})
        page.wait_for_timeout(300)
        assert page.evaluate(PAGE_WIDER_THAN_VIEW) <= 0, f"the head explorer at {width} px"
    for tab, field in EXPLORER_TABS:
        page.get_by_role("tab", name=tab).click()
        page.get_by_label(field, exact=True).wait_for(timeout=20_000)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": ZOOMED["height"]})
            page.wait_for_timeout(400)  # BokehJS lays the roots out again
            assert page.evaluate(PAGE_WIDER_THAN_VIEW) <= 0, f"{tab} at {width} px"
            parts = page.evaluate(PARTS_CUT, FURTHER_PARTS)
            assert set(TAB_FIGURES[tab]) <= set(parts["seen"]), parts  # the tab's figures were measured
            assert parts["cut"] == [], f"{tab} at {width} px"
        page.screenshot(path=str(artifacts / f"a11y-{name}-390-{TAB_FIGURES[tab][0]}.png"), full_page=True)


def test_export_fits_a_phone_and_200_percent_zoom(page, export_url, artifacts):
    fits_at_every_width(page, export_url, artifacts, "export")


def test_served_page_fits_a_phone_and_200_percent_zoom(page, served_app, artifacts):
    fits_at_every_width(page, served_app, artifacts, "served")
