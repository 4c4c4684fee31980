"""The static export (app/export.py) in Chromium, opened from file:// with the network blocked.

Every number the page shows after a change is held to what the Python core
computes for the same inputs, so the JavaScript port and the glue are
checked together, in the page a reader would download.
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

from app.export import AREAS, ATTENTION_JS, MAX_BYTES, export, main
from app.fragment import page_in
from core.presets import CHAPTER, Preset
from core.trace import fmt_vector, trace
from tests.conftest import STYLE_WRITES_DURING_A_MOVE
from widgets.controls import preset_note, slider_label
from widgets.page import HeadPage
from widgets.state import HeadState
from widgets.style import short_label
from widgets.viewdata import step_line_html

pytestmark = pytest.mark.skipif(not ATTENTION_JS.exists(), reason="static/attention.js is not there yet")

CHAPTER_WEIGHTS = "weights = [0.13, 0.56, 0.14, 0.18]"
CHAPTER_OUTPUT = "= [0.23, 0.68]"

# Labels are at most 24 characters (widgets.state.MAX_LABEL), so the hostile
# labels are the shortest forms that would run script if ever parsed as markup.
HOSTILE = ("<img src=x onerror=f()>", "<svg onload=alert(1)>", "a&amp;b</script>", "it")
HOSTILE_PRESET = Preset(
    name="hostile",
    title="<img src=x onerror=alert(2)>",
    tokens=HOSTILE,
    X=CHAPTER.X,
    W_Q=CHAPTER.W_Q,
    W_K=CHAPTER.W_K,
    W_V=CHAPTER.W_V,
    query="it",
)
HOSTILE_2 = Preset(
    name="hostile-2",
    title="<b>bold?</b>",
    tokens=("<i>The</i>", "<img src=y onerror=f()>", "sat", "<u>it</u>"),
    X=CHAPTER.X,
    W_Q=CHAPTER.W_Q,
    W_K=CHAPTER.W_K,
    W_V=CHAPTER.W_V,
    query="<u>it</u>",
    causal=False,
)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("export")
    assert main([str(out / "head.html")]) == 0
    export(out / "fragment.html", fragment=True)
    export(out / "hostile.html", HOSTILE_PRESET, presets={p.name: p for p in (HOSTILE_PRESET, HOSTILE_2)})
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
    """Blocks and counts every request that does not come from a file; records console errors."""

    def __init__(self, context, page):
        self.blocked: list[str] = []
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        context.route("**/*", self._route)
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
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
            "() => Array.from(Bokeh.documents[0].get_model_by_name('weights-cells').data.value)"
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
    assert "AttentionHead" in text and "window.HeadExport" in text
    for name, _ in AREAS:  # one Bokeh root per grid area, as in the served page
        assert text.count(f'<section class="area-{name}"') == 1, name
        assert f'<section class="area-{name}"' in page_in((exported / "fragment.html").read_text()), name
    assert "<header><h1>One attention head</h1>" in text
    assert "grid-template-areas" in text


def test_page_is_laid_out_in_separate_roots(exported, context, page):
    """Four document roots, each in its grid area; the steps sit right of the controls, below the top row."""
    net = open_page(context, page, (exported / "head.html").as_uri())
    names = page.evaluate("() => Bokeh.documents[0].roots().map(r => r.name)")
    assert sorted(names) == sorted(name for name, _ in AREAS)
    box = {name: page.locator(f"section.area-{name}").bounding_box() for name, _ in AREAS}
    assert all(b and b["width"] > 0 and b["height"] > 0 for b in box.values()), box
    assert box["top"]["x"] >= box["controls"]["x"] + box["controls"]["width"] - 1
    assert box["readout"]["y"] >= box["top"]["y"] + box["top"]["height"] - 1
    assert box["bottom"]["y"] >= box["readout"]["y"] + box["readout"]["height"] - 1
    header = page.locator("main.explorer > header")
    assert header.locator("h1").inner_text() == "One attention head"
    net.check()


def test_a_move_rewrites_no_style_sheet_with_its_own_text(exported, context, page):
    """The export carries static/bokeh_patch.js too (see tests/test_served_app.py)."""
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
    outline = page.evaluate("() => Bokeh.documents[0].get_model_by_name('weights-outline').data.y")
    assert list(outline) == [1.0]

    # A cleared multiplier is refused with a message; the numbers stay.
    box = page.locator(".bk-NumericInput input")
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


def test_presets_offered_match_the_start_shape(exported, context, page):
    net = open_page(context, page, (exported / "head.html").as_uri())
    options = page.locator(".bk-Select select").first.locator("option").all_inner_texts()
    assert "The chapter's example" in options and "(your own edits)" in options
    assert not any("tired" in o for o in options)
    page.wait_for_selector("text=This offline copy offers only the presets with 4 tokens")
    net.check()


def test_hostile_labels_stay_text(exported, context, page, artifacts):
    net = Offline(context, page)
    page.goto((exported / "hostile.html").as_uri())
    state = HeadState()
    assert state.load(HOSTILE_PRESET)
    wait_for_steps(page, state)
    assert page.locator("img").count() == 0
    assert page.locator("svg[onload]").count() == 0
    assert "&lt;img src=x onerror=f()&gt;" in steps_text(page)
    # a slider title, shown as text (cut to fit by the page, as the served one does)
    page.get_by_text(f"{short_label('<img src=x onerror=f()>', 8)}[0]").wait_for()

    handle = slider_handle(page, 1, 1)
    handle.focus()
    handle.press("ArrowLeft")
    assert state.set_x(1, 1, model(page, "x-1-1", "value"))
    wait_for_steps(page, state)

    page.locator(".bk-Select select").first.select_option(label="<b>bold?</b>")
    assert state.load(HOSTILE_2)
    wait_for_steps(page, state)
    # the sliders were retitled, and the axes relabelled, as the served page would show these labels
    page.get_by_text(f"{slider_label('<img src=y onerror=f()>')}[2]").wait_for()
    options = page.locator(".bk-Select select").nth(1).locator("option").all_inner_texts()
    assert options == list(HOSTILE_2.tokens)
    axes = page.evaluate(
        "() => { const f = Bokeh.documents[0].get_model_by_name('weights');"
        " const o = f.left[0].major_label_overrides;"
        " const labels = o instanceof Map ? [...o.values()] : Object.values(o);"
        " return [labels, f.above[0].major_label_orientation]; }"
    )
    served = HeadPage.for_state(state).plots["weights"].figure
    assert axes == [[short_label(t) for t in HOSTILE_2.tokens], served.xaxis[0].major_label_orientation]
    assert axes[1] != 0  # one label is too long to lie flat over its cell
    page.wait_for_timeout(300)  # give any injected onerror a chance to fire
    assert page.locator("img").count() == 0
    for tag, text in (("b", "bold?"), ("i", "The"), ("u", "it")):
        assert page.locator(tag, has_text=text).count() == 0, tag
    page.screenshot(path=str(artifacts / "export-hostile.png"), full_page=True)
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
