"""The static export (app/export.py) in Chromium, opened from file:// with the network blocked.

Every number the page shows after a change is held to what the Python core
computes for the same inputs, so the JavaScript port and the glue are
checked together, in the page a reader would download.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode

import numpy as np
import pytest
from playwright.sync_api import expect

from app import export as export_module
from app.export import AREAS, MAX_BYTES, export
from app.fragment import page_in
from core.trace import fmt_vector, trace
from tests.conftest import CONSOLE_PROBLEMS, STYLE_WRITES_DURING_A_MOVE
from widgets.controls import preset_note, slider_label
from widgets.intermediates import as_csv, as_json
from widgets.matrix_plot import side_by_side
from widgets.page import HeadPage
from widgets.state import HeadState
from widgets.url_state import apply_params, encode
from widgets.viewdata import step_line_html, view_data

CHAPTER_WEIGHTS = "weights = [0.13, 0.56, 0.14, 0.18]"
CHAPTER_OUTPUT = "= [0.23, 0.68]"

# The shortest forms that would run script if ever parsed as markup, plus quotes and an ampersand.
HOSTILE = ("<img src=x onerror=f()>", "<svg onload=alert(1)>", "a&amp;b</script>", 'it\'s "q"')
ROOTS = [root for _, _, roots in AREAS for root in roots]
ROOT = Path(__file__).resolve().parents[1]


def test_the_export_refuses_without_its_scripts(monkeypatch, tmp_path):
    """A script the page needs is missing: the export says which and writes nothing (these tests then fail
    rather than skip)."""
    monkeypatch.setattr(export_module, "ATTENTION_JS", tmp_path / "attention.js")
    with pytest.raises(SystemExit, match="attention.js is missing"):
        export(tmp_path / "head.html")
    assert not (tmp_path / "head.html").exists()


def test_every_static_file_the_code_names_exists():
    """No name of a file that is not there (app/export.py once read a static/export.css "if there is one")."""
    named = set()
    for path in [*ROOT.glob("app/*.py"), *ROOT.glob("widgets/*.py"), *ROOT.glob("core/*.py")]:
        named |= set(re.findall(r'"([\w-]+\.(?:js|css))"', path.read_text()))
    assert {"attention.js", "pyformat.js", "page.css", "checks.js", "lab.js"} <= named
    missing = sorted(name for name in named if not (ROOT / "static" / name).exists())
    assert not missing, missing


@pytest.fixture(scope="module")
def exported(export_copy):
    out = export_copy  # head.html made by app/export.py's command line, and fragment.html (tests/conftest.py)
    (out / "frame.html").write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">'
        "<title>iframe host</title></head><body><h1>The chapter</h1>"
        '<iframe src="head.html" title="explorer" width="1300" height="1500"></iframe></body></html>'
    )
    fragment = (out / "fragment.html").read_text()
    (out / "pasted.html").write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>An empty page</title></head>'
        f"<body><h1>Chapter 3</h1><p>Before the widget.</p>\n{fragment}\n<p>After it.</p></body></html>"
    )
    return out


class Offline:
    """Blocks and counts every request that does not come from a file; records console errors and warnings."""

    def __init__(self, context, page):
        self.blocked: list[str] = []
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        context.route("**/*", self._route)
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("console", lambda m: self.errors.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("dialog", self._dialog)

    def _route(self, route):
        url = route.request.url
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def check(self):
        outside = [u for u in self.requests if not u.startswith(("file:", "data:"))]
        assert self.blocked == [] and outside == [], f"network requests: {self.blocked + outside}"
        assert self.errors == [], self.errors
        assert self.dialogs == [], self.dialogs


def model(target, name: str, prop: str):
    return target.evaluate(f"() => Bokeh.documents[0].get_model_by_name({name!r}).{prop}")


def steps_text(target) -> str:
    return model(target, "steps", "text")


def as_html(line: str) -> str:
    """A step line as the steps panel holds it: escaped, each vector in a no-wrap span."""
    return step_line_html(line)


def weights_line(state: HeadState) -> str:
    t = trace(state.head, state.query, state.labels)
    return as_html(t.steps[4].lines[-1])


def wait_for_steps(target, state: HeadState) -> None:
    """Wait until the page's steps panel shows the core's weights line for `state`."""
    line = json.dumps(weights_line(state))
    target.wait_for_function(
        f"() => Bokeh.documents[0].get_model_by_name('steps').text.includes({line})", timeout=10000
    )


def assert_cells_match(target, state: HeadState, wait: float = 10.0) -> None:
    """The weight cells in the page equal the core's weights to 1e-9 (masked cells are NaN/null).

    Polls for up to `wait` seconds: BokehJS runs CustomJS callbacks asynchronously, and a change
    (the mask, for the last row) need not show in the steps panel that the other waits watch.
    """
    expected = np.where(state.head.future, np.nan, state.head.weights).ravel()
    deadline = time.monotonic() + wait
    while True:
        values = target.evaluate(
            "() => { const d = Bokeh.documents[0].get_model_by_name('weights-cells').data;"
            " return Array.from(d instanceof Map ? d.get('value') : d.value); }"
        )
        got = np.array([np.nan if v is None else v for v in values], dtype=float)
        if got.shape == expected.shape and np.allclose(got, expected, rtol=0, atol=1e-9, equal_nan=True):
            return
        if time.monotonic() > deadline:
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9, equal_nan=True)
        time.sleep(0.05)


def slider_handle(target, t: int, c: int, C: int = 3):
    return target.locator(".x-slider").nth(t * C + c).locator(".noUi-handle")


def toggle_label(target, label: str):
    """The label text of a one-box CheckboxGroup toggle: clicking it toggles the box."""
    return target.locator(".bk-CheckboxGroup", has_text=label).get_by_text(label)


def open_page(context, page, url: str) -> Offline:
    net = Offline(context, page)
    page.goto(url)
    page.wait_for_selector(f"text={CHAPTER_WEIGHTS}", timeout=20000)
    page.wait_for_selector(f"text={CHAPTER_OUTPUT}")
    return net


def test_file_is_self_contained_and_small(exported):
    text = (exported / "head.html").read_text()
    assert (exported / "head.html").stat().st_size <= MAX_BYTES
    assert (exported / "fragment.html").stat().st_size <= MAX_BYTES
    assert '<link rel="icon" href="data:,">' in text
    for pattern in (r"<script[^>]+src=", r"<link[^>]+stylesheet", r"@import", r"cdn\.bokeh\.org"):
        assert not re.search(pattern, text), pattern
    assert "AttentionHead" in text and "HeadLogic" in text and "HeadExplorerPage" in text
    assert "__" + "SLANT" not in text  # no placeholder left from the old string-substituted glue
    for name, _, _ in AREAS:  # the grid areas of the served page
        assert text.count(f'<section class="area-{name}"') == 1, name
        assert f'<section class="area-{name}"' in page_in((exported / "fragment.html").read_text()), name
    assert "<header><h1>One attention head</h1>" in text
    assert "grid-template-areas" in text


def test_page_is_laid_out_in_separate_roots(exported, context, page):
    """One root per part, each in its grid area; the steps sit right of the controls, below the top row."""
    net = open_page(context, page, (exported / "head.html").as_uri())
    # the lower roots are read in idle moments after the first part (app/export.py LATER): wait for them
    page.wait_for_function("() => HeadExplorerPage.pages[0] && HeadExplorerPage.pages[0].complete")
    names = page.evaluate("() => Bokeh.documents[0].roots().map(r => r.name)")
    # "more": app/export_explorers.py; "a11y-names": the controls' names, a model of its own (no view)
    assert sorted(names) == sorted([*ROOTS, "more", "a11y-names"])
    box = {name: page.locator(f"section.area-{name}").bounding_box() for name, _, _ in AREAS}
    assert all(b and b["width"] > 0 and b["height"] > 0 for b in box.values()), box
    assert box["top"]["x"] >= box["controls"]["x"] + box["controls"]["width"] - 1
    assert box["readout"]["y"] >= box["top"]["y"] + box["top"]["height"] - 1
    assert box["bottom"]["y"] >= box["readout"]["y"] + box["readout"]["height"] - 1
    header = page.locator("main.explorer > header")
    assert header.locator("h1").inner_text() == "One attention head"
    net.check()


@pytest.mark.seam
def test_a_move_rewrites_no_style_sheet_with_its_own_text(exported, context, page):
    """The export carries static/bokeh_seam.js too (see tests/test_served_app.py)."""
    net = open_page(context, page, (exported / "head.html").as_uri())
    for _ in range(3):
        counts = page.evaluate(STYLE_WRITES_DURING_A_MOVE, "x-3-0")
        assert counts["unchanged"] == 0, counts
    net.check()


def test_offline_page_follows_the_core(exported, context, page, artifacts):
    net = open_page(context, page, (exported / "head.html").as_uri())
    page.screenshot(path=str(artifacts / "export-initial.png"), full_page=True)
    state = HeadState()
    assert weights_line(state) in steps_text(page)
    assert_cells_match(page, state)

    # Keyboard on it[0]'s slider handle: one step right.
    handle = slider_handle(page, 3, 0)
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('x-3-0').value !== 0.2")
    value = model(page, "x-3-0", "value")
    assert value == pytest.approx(0.25)
    assert state.set_x(3, 0, value)
    wait_for_steps(page, state)
    assert_cells_match(page, state)
    assert model(page, "preset", "value") == "custom"
    assert model(page, "preset-note", "text") == preset_note("")
    page.screenshot(path=str(artifacts / "export-slider.png"), full_page=True)

    # The mask off, then the scaling off: each as the core says.
    toggle_label(page, "Causal mask").click()
    assert state.apply(causal=False)
    wait_for_steps(page, state)
    assert_cells_match(page, state)
    toggle_label(page, "Divide scores by").click()
    assert state.apply(scaling=False)
    wait_for_steps(page, state)
    assert_cells_match(page, state)

    # Another query row.
    page.locator(".bk-Select select").nth(1).select_option(label="cat")
    assert state.apply(query=1)
    wait_for_steps(page, state)
    outline = page.evaluate(
        "() => { const d = Bokeh.documents[0].get_model_by_name('weights-outline').data;"
        " return Array.from(d instanceof Map ? d.get('y') : d.y); }"
    )
    assert list(outline) == [1.0]

    # A cleared multiplier is refused with a message; the numbers stay.
    box = page.get_by_role("textbox", name="Multiply X by")
    before = steps_text(page)
    box.fill("")
    box.press("Tab")
    page.wait_for_selector("text=Multiply X by needs a number", timeout=10000)
    assert steps_text(page) == before
    assert model(page, "x_scale", "value") == 1
    box.fill("2")
    box.press("Enter")
    assert state.apply(x_scale=2.0)
    wait_for_steps(page, state)
    assert model(page, "message", "text") == ""
    page.screenshot(path=str(artifacts / "export-edited.png"), full_page=True)

    # A preset, then reset: sliders and toggles follow.
    page.locator(".bk-Select select").first.select_option(label="Breaks: no mask")
    assert state.load("no-mask")
    wait_for_steps(page, state)
    assert_cells_match(page, state)
    assert model(page, "causal", "active") == []
    assert model(page, "query", "value") == "0"
    assert model(page, "preset-note", "text") == preset_note("no-mask")
    page.get_by_text("Reset to the chapter's example").click()
    page.wait_for_selector(f"text={CHAPTER_WEIGHTS}")
    assert model(page, "x-3-0", "value") == 0.2
    assert model(page, "preset", "value") == "chapter"
    assert model(page, "scaling", "active") == [0]
    net.check()


def test_works_inside_an_iframe(exported, context, page, artifacts):
    net = Offline(context, page)
    page.goto((exported / "frame.html").as_uri())
    frame = page.frame_locator("iframe")
    frame.locator(f"text={CHAPTER_WEIGHTS}").wait_for(timeout=20000)
    inner = page.frames[1]
    handle = slider_handle(inner, 3, 1)
    handle.focus()
    handle.press("ArrowRight")
    state = HeadState()
    assert state.set_x(3, 1, model(inner, "x-3-1", "value"))
    wait_for_steps(inner, state)
    assert_cells_match(inner, state)
    page.screenshot(path=str(artifacts / "export-iframe.png"), full_page=True)
    net.check()


def test_fragment_works_pasted_into_an_empty_page(exported, context, page, artifacts):
    """The fragment runs the page in a frame of its own (app/fragment.py), sized to its content."""
    net = Offline(context, page)
    page.goto((exported / "pasted.html").as_uri())
    page.get_by_text("Before the widget.").wait_for()
    page.get_by_text("After it.").wait_for()
    frame = page.frame_locator("iframe")
    frame.locator(f"text={CHAPTER_WEIGHTS}").wait_for(timeout=20000)
    inner = page.frames[1]
    handle = slider_handle(inner, 3, 0)
    handle.focus()
    handle.press("ArrowLeft")
    state = HeadState()
    assert state.set_x(3, 0, model(inner, "x-3-0", "value"))
    wait_for_steps(inner, state)
    assert_cells_match(inner, state)
    assert fmt_vector(state.head.output[3]) in steps_text(inner)
    # "After it." follows the whole explorer: the frame grew to the page's height
    page.wait_for_function(
        "() => { const d = document.querySelector('iframe').contentDocument.documentElement;"
        " return d.scrollHeight <= d.clientHeight + 1; }"
    )
    page.screenshot(path=str(artifacts / "export-fragment.png"), full_page=True)
    net.check()


# --- the whole explorer in the file: every figure, every preset, the editor, downloads, links ---------

SOURCES_JS = """() => {
  const doc = Bokeh.documents[0];
  const plain = (d) => Object.fromEntries(d instanceof Map ? d : Object.entries(d));
  const out = {};
  for (const name of NAMES) {
    const source = doc.get_model_by_name(name);
    if (source === null) continue; // in a part the page reads later (static/explorer_page.js embed)
    const data = plain(source.data);
    out[name] = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Array.from(v)]));
  }
  return out;
}"""
PLOTS = ("weights", "scores", "scaled", "qkv")
BLEND = ("values", "hull", "output", "links")


def expected_sources(state: HeadState) -> dict:
    """What every figure's source must hold for `state`, from the Python views' own functions."""
    data = view_data(state.head, state.query, state.labels, state.dims)
    page = HeadPage.for_state(state)
    out = {}
    for name, plot in page.plots.items():
        cols = state.head.T if name in ("weights", "scores", "scaled") else state.head.d
        out[f"{name}-cells"] = {
            k: list(v)
            for k, v in side_by_side({b: data["cells"][b] for b in plot.names}, cols, plot.GAP).items()
        }
        if name != "qkv":
            out[f"{name}-outline"] = data["outline"]
    for part in BLEND:
        out[f"blend-{part}"] = data["blend"][part]
    return out


def figure_mismatches(target, state: HeadState) -> list[str]:
    from tests.test_parity import mismatches

    expected = expected_sources(state)
    got = target.evaluate(SOURCES_JS.replace("NAMES", json.dumps(list(expected))))
    nan = float("nan")
    got = {
        s: {k: [nan if v is None else v for v in col] if k == "value" else col for k, col in cols.items()}
        for s, cols in got.items()
    }
    missing = [f"{name}: not made yet" for name in expected if name not in got]
    if missing:
        return missing
    return [
        m
        for name in expected
        for m in mismatches(expected[name], {k: got[name].get(k) for k in expected[name]}, name)
    ]


def assert_figures_match(target, state: HeadState, wait: float = 10.0) -> None:
    """Every figure's source (cells of all four heatmaps, outlines, the blend's four) equals Python's."""
    deadline = time.monotonic() + wait
    while (found := figure_mismatches(target, state)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not found, "\n".join(found[:8])


def page_state(target) -> dict:
    return target.evaluate("() => HeadExplorerPage.pages[0].state")


def test_every_preset_loads_whatever_its_shape(exported, context, page, artifacts):
    net = open_page(context, page, (exported / "head.html").as_uri())
    options = page.locator(".bk-Select select").first.locator("option").all_inner_texts()
    from core.presets import PRESETS

    assert options == [p.title for p in PRESETS.values()] + ["(your own edits)"]
    state = HeadState()
    assert_figures_match(page, state)
    page.locator(".bk-Select select").first.select_option(label="… because it was tired")
    assert state.load("tired")
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    expect(page.locator(".x-slider:visible")).to_have_count(10 * 4)  # made a task after the figures
    assert model(page, "weights", "x_range.end") == pytest.approx(9.5)
    assert model(page, "preset-note", "text") == preset_note("tired")
    page.screenshot(path=str(artifacts / "export-tired.png"), full_page=True)
    # The temperature's slider, by keyboard: one step left sharpens the weights.
    handle = page.locator(".bk-Slider", has_text="temperature").locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowLeft")
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('temperature').value !== 1")
    assert state.apply(temperature=model(page, "temperature", "value"))
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    assert "divide by the temperature τ = 0.95" in steps_text(page)
    # Back to the chapter's shape, then the temperature preset.
    page.locator(".bk-Select select").first.select_option(label="Temperature τ = 0.4: sharper")
    assert state.load("temperature-low")
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    expect(page.locator(".x-slider:visible")).to_have_count(4 * 3)  # made a task after the figures
    page.screenshot(path=str(artifacts / "export-temperature.png"), full_page=True)
    net.check()


def test_the_editor_works_in_the_file(exported, context, page, artifacts):
    net = open_page(context, page, (exported / "head.html").as_uri())
    state = HeadState()
    # W_Q[0, 0] typed into its grid (the first number box after the X multiplier).
    entry = page.locator(".bk-NumericInput input").nth(1)
    entry.fill("1.5")
    entry.press("Enter")
    assert state.set_weight("W_Q", 0, 0, 1.5)
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    # An emptied entry is refused with a message; the numbers stay.
    entry.fill("")
    entry.press("Enter")
    page.wait_for_selector("text=W_Q[0, 0] needs a number", timeout=10000)
    assert_figures_match(page, state)
    # A token added, then removed (the query token, the new last one).
    page.get_by_text("Add a token").click()
    assert state.add_token()
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    expect(page.locator(".x-slider:visible")).to_have_count(5 * 3)  # made a task after the figures
    page.locator(".bk-Select select").nth(1).select_option(label="t5")
    assert state.apply(query=4)
    wait_for_steps(page, state)
    page.get_by_text("Remove the query token").click()
    assert state.remove_token(4)
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    # d = 3: the grids grow a column, the blend plot's dims can be picked.
    spinner = page.locator(".bk-Spinner input").nth(1)
    spinner.fill("3")
    spinner.press("Enter")
    assert state.set_widths(d=3)
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    assert page.locator(".bk-NumericInput input:visible").count() == 1 + 3 * 3 * 3
    page.locator('select[name="dim-y"]').select_option("2")  # (by name: the lesson's picker comes first)
    assert state.apply(dims=[0, 2])
    assert_figures_match(page, state)
    # Hostile labels typed into the editor are text everywhere.
    labels = page.locator(".bk-TextInput input").first
    labels.fill(", ".join(HOSTILE))
    labels.press("Enter")
    assert state.set_labels(", ".join(HOSTILE))
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    page.get_by_text(f"{slider_label(HOSTILE[0])}[0]").filter(visible=True).wait_for()
    page.wait_for_timeout(300)  # give any injected onerror a chance to fire
    assert page.locator("img").count() == 0 and page.locator("svg[onload]").count() == 0
    assert "&lt;img src=x onerror=f()&gt;" in steps_text(page)
    page.screenshot(path=str(artifacts / "export-editor.png"), full_page=True)
    net.check()


def test_downloads_are_the_served_apps_bytes(exported, context, page):
    link = "#preset=tired&temp=0.5&query=cat"
    net = Offline(context, page)
    page.goto((exported / "head.html").as_uri() + link)
    state = HeadState()
    apply_params(state, {"preset": "tired", "temp": "0.5", "query": "cat"})
    wait_for_steps(page, state)
    for kind, text in (
        ("JSON", as_json(state.head, state.labels)),
        ("CSV", as_csv(state.head, state.labels)),
    ):
        with page.expect_download() as info:
            page.get_by_text(f"Download every matrix ({kind})").click()
        download = info.value
        assert download.suggested_filename == f"attention-head.{kind.lower()}"
        assert open(download.path(), "rb").read() == text.encode("utf-8"), kind
    # Each figure saves itself as a PNG from its toolbar, made in the browser too.
    with page.expect_download() as info:
        page.locator(".bk-tool-icon-save").first.click()
    assert info.value.suggested_filename == "attention-weights.png"
    assert open(info.value.path(), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    net.check()


def test_a_link_opens_that_head_and_the_fragment_follows(exported, context, page):
    hostile = ",".join(quote(t, safe="") for t in HOSTILE)
    params = {"tokens": hostile, "query": HOSTILE[1], "temp": "2", "mask": "maybe", "WQ": "0,1;2,0;0,1"}
    net = Offline(context, page)
    page.goto((exported / "head.html").as_uri() + "#" + urlencode(params))
    state = HeadState()
    apply_params(state, params)
    assert state.message == "the link's 'mask' should be 1 or 0, so it was left at its default"
    wait_for_steps(page, state)
    assert_figures_match(page, state)
    page.wait_for_selector(f"text={state.message}")  # named on the page, as the served app does
    page.wait_for_timeout(300)
    assert page.locator("img").count() == 0 and page.locator("svg[onload]").count() == 0
    # The fragment now holds the whole head, in the served app's encoding.
    fragment = page.evaluate("() => location.hash.slice(1)")
    assert dict(parse_qsl(fragment)) == encode(state)
    # A change is written back; the same link opens the same head in a new page.
    page.locator(".bk-Select select").nth(1).select_option(label=HOSTILE[2])
    assert state.apply(query=2)
    wait_for_steps(page, state)
    page.wait_for_function(
        f"() => location.hash.includes({json.dumps('query=' + quote(HOSTILE[2], safe=''))})"
    )
    again = page.context.new_page()
    again.goto(page.url)
    wait_for_steps(again, state)
    assert_figures_match(again, state)
    again.close()
    net.check()
