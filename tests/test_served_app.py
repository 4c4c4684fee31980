"""The served explorer in Chromium: the chapter's numbers, the keyboard, the ablations, latest move wins.

Every expected number comes from the core (core.attention.attend and
core.trace.trace), never from a hand-copied constant, except the chapter's
own printed values for the starting state.  No timing asserts: the latest-move-wins
tests say which value each update answered instead of measuring delays.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from bokeh.models import Model

from core.attention import attend
from core.presets import PRESETS
from core.trace import trace
from tests.conftest import CONSOLE_PROBLEMS, SERVER_DRAWS, STYLE_WRITES_DURING_A_MOVE

CHAPTER = PRESETS["chapter"]
LABELS = CHAPTER.tokens
START = "weights = [0.13, 0.56, 0.14, 0.18]"


def core(x30: float = 0.2, **options):
    """The core's head for the chapter's example with X[3, 0] = x30 and the given options."""
    X = np.array(CHAPTER.X)
    X[3, 0] = x30
    return attend(X, CHAPTER.W_Q, CHAPTER.W_K, CHAPTER.W_V, **options)


def weights_line(head, i: int = 3) -> str:
    """The steps panel's "weights = [...]" line for query i, as the core's trace writes it."""
    lines = [line for step in trace(head, i, LABELS).steps for line in step.lines]
    (line,) = [line for line in lines if line.startswith("weights = ")]
    return line


JS_CELLS = """name => {
    const s = Bokeh.documents[0].get_model_by_name(name);
    const col = k => Array.from(s.data[k]);
    return JSON.stringify({x: col('x'), y: col('y'), value: col('value')});
}"""


def cells(page, name: str = "weights-cells") -> np.ndarray:
    """A heatmap's source, read in the browser, as a [rows, cols] matrix (NaN for masked)."""
    d = json.loads(page.evaluate(JS_CELLS, name))
    x, y = np.array(d["x"], dtype=int), np.array(d["y"], dtype=int)
    M = np.full((y.max() + 1, x.max() + 1), np.nan)
    M[y, x] = [np.nan if v is None else v for v in d["value"]]
    return M


@pytest.fixture
def explorer(served_app, page):
    """A fresh session showing the chapter's example; console errors collected in page.errors."""
    yield from opened(served_app, page)


@pytest.fixture
def server_drawn(served_app, page):
    """The same, with the page's own drawing of a move off (widgets/channel.py `drawn_by`): the server's
    answers alone draw it, as for a client without that script, so what the server answers shows."""
    yield from opened(served_app, page, server_draws=True)


def opened(served_app, page, server_draws: bool = False):
    """Open the page; after the test, no console error or page error may have occurred."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(served_app)
    page.wait_for_selector(f"text={START}", timeout=30000)
    if server_draws:
        page.evaluate(SERVER_DRAWS)
    page.errors = errors
    yield page
    assert errors == [], errors


def handle_of(page, title: str):
    """The noUiSlider handle of the token slider titled e.g. 'it[0]' (CSS pierces the shadow roots)."""
    group = page.locator(".bk-input-group").filter(
        has=page.locator(
            ".bk-slider-title", has_text=re.compile("^" + re.escape(title) + r"\b|^" + re.escape(title) + ":")
        )
    )
    handle = group.locator(".noUi-handle")
    assert handle.count() == 1, f"{handle.count()} handles for {title}"
    return handle


def checkbox(page, label: str):
    """The label text of a one-box CheckboxGroup: a click on the words toggles it."""
    box = page.get_by_text(label, exact=True)
    assert box.count() == 1, f"{box.count()} checkboxes labelled {label}"
    return box


def test_page_loads_with_the_chapters_numbers(explorer, artifacts):
    steps = explorer.locator(".steps").first
    text = steps.inner_text()
    assert START in text
    assert "= [0.23, 0.68]" in text
    assert weights_line(core()) == START
    np.testing.assert_allclose(cells(explorer)[3], core().weights[3], rtol=0, atol=1e-12)
    # every token slider is there, titled like it[0]
    for t, label in enumerate(LABELS):
        for c in range(3):
            assert (
                explorer.evaluate(f"() => Bokeh.documents[0].get_model_by_name('x-{t}-{c}').title")
                == f"{label}[{c}]"
            )
    explorer.screenshot(path=str(artifacts / "served-loaded.png"), full_page=True)


def test_arrow_key_on_it0_moves_the_weights_to_the_cores(explorer, artifacts):
    handle = handle_of(explorer, "it[0]")
    handle.focus()
    handle.press("ArrowRight")  # one step of 0.05: X[3, 0] 0.2 → 0.25
    expected = weights_line(core(0.25))
    assert expected != START
    explorer.wait_for_selector(f"text={expected}", timeout=10000)
    value = explorer.evaluate("() => Bokeh.documents[0].get_model_by_name('x-3-0').value")
    assert value == pytest.approx(0.25, abs=1e-12)
    np.testing.assert_allclose(cells(explorer)[3], core(0.25).weights[3], rtol=0, atol=1e-12)
    explorer.screenshot(path=str(artifacts / "served-after-key.png"), full_page=True)


def test_mask_off_puts_weight_above_the_diagonal(explorer, artifacts):
    before = cells(explorer)
    assert np.isnan(before[0, 1])  # masked: 'The' cannot see 'cat'
    checkbox(explorer, "Causal mask (hide later tokens)").click()
    expected = core(causal=False)  # 'it' is last, so its own row is the same: wait for the mask's line
    explorer.wait_for_selector("text=the mask is off, so every key stays", timeout=10000)
    assert weights_line(expected) in explorer.locator(".steps").first.inner_text()
    after = cells(explorer)
    assert not np.isnan(after).any()
    assert after[0, 1] > 0
    np.testing.assert_allclose(after, expected.weights, rtol=0, atol=1e-12)
    explorer.screenshot(path=str(artifacts / "served-mask-off.png"), full_page=True)


def test_scaling_off_changes_the_numbers_to_the_cores(explorer):
    checkbox(explorer, "Divide scores by √d").click()
    expected = core(scaling=False)
    line = weights_line(expected)
    assert line != START
    explorer.wait_for_selector(f"text={line}", timeout=10000)
    assert "scaling is off" in explorer.locator(".steps").first.inner_text()
    np.testing.assert_allclose(
        cells(explorer), np.where(expected.future, np.nan, expected.weights), rtol=0, atol=1e-12
    )


# Latest move wins (widgets/latest.py). Each received update of the weights heatmap is recorded in the page
# as row 3 (the query 'it'), so the test can say which slider value every update answered.
# The weights row 3 of each answer the server sends (written while BokehJS applies its patch; the page's
# own drawing of a move, static/explorer_page.js follow, is not an answer).
JS_RECORD_ROWS = """() => {
    const source = Bokeh.documents[0].get_model_by_name('weights-cells');
    const session = Bokeh.require('client/session').ClientSession.prototype;
    if (!session._handle_patch.__marked) {
        const handle = session._handle_patch;
        session._handle_patch = function (message) {
            window.__answering = true;
            try { return handle.call(this, message); } finally { window.__answering = false; }
        };
        session._handle_patch.__marked = true;
    }
    window.__rows = [];
    source.change.connect(() => {
        if (!window.__answering) return;
        const v = Array.from(source.data.value);
        const n = Math.round(Math.sqrt(v.length));
        window.__rows.push(v.slice(3 * n, 4 * n));
    });
}"""

JS_SET = "v => { Bokeh.documents[0].get_model_by_name('x-3-0').value = v; }"
# The server has answered with weights row 3 `row` (recorded by JS_RECORD_ROWS).
JS_ANSWERED = "row => window.__rows.some((r) => r.every((x, i) => Math.abs(x - row[i]) < 1e-12))"

JS_BURST = """values => {
    const slider = Bokeh.documents[0].get_model_by_name('x-3-0');
    for (const v of values) slider.value = v;        // one synchronous burst: all sent before any reply
}"""

SLOW = (0.3, 0.45, 0.6, 0.75, 0.9)
BURST = tuple(round(-1.0 + 0.02 * k, 2) for k in range(100))  # 100 values, each different


def answered(rows) -> list[float]:
    """For each received weights row, the slider value (of SLOW or BURST) whose core weights it shows."""
    out = []
    for got in rows:
        hits = [x for x in (*SLOW, *BURST) if np.allclose(got, core(x).weights[3], rtol=0, atol=1e-12)]
        assert hits, f"an update whose weights belong to no value that was sent: {got}"
        out.append(hits[0])
    return out


def test_a_slow_stream_gets_every_value_answered(server_drawn):
    """A value sent only after the previous one was answered is never dropped: a slow drag is followed step
    by step (no debounce, no coalescing when the server keeps up)."""
    server_drawn.evaluate(JS_RECORD_ROWS)
    for k, x in enumerate(SLOW, start=1):
        server_drawn.evaluate(JS_SET, x)
        server_drawn.wait_for_function("n => window.__rows.length >= n", arg=k, timeout=15000)
    server_drawn.wait_for_selector(f"text={weights_line(core(SLOW[-1]))}", timeout=10000)
    assert answered(server_drawn.evaluate("() => window.__rows")) == list(SLOW)


def test_a_burst_gets_its_last_value_answered_and_the_overtaken_ones_dropped(server_drawn):
    """100 values sent at once: the page ends on the core's numbers for exactly the last value, and the
    server computed far fewer than 100 (values overtaken while waiting were dropped), in the order sent."""
    server_drawn.evaluate(JS_RECORD_ROWS)
    server_drawn.evaluate(JS_BURST, list(BURST))
    last = core(BURST[-1])
    server_drawn.wait_for_function(JS_ANSWERED, arg=core(BURST[-1]).weights[3].tolist(), timeout=15000)
    server_drawn.wait_for_selector(f"text={weights_line(last)}", timeout=15000)
    server_drawn.wait_for_timeout(500)  # let any straggling update arrive: "the last one shown" means it
    got = answered(server_drawn.evaluate("() => window.__rows"))
    assert got[-1] == BURST[-1]
    assert got == sorted(got), "updates answered values out of the order they were sent"
    assert len(got) < len(BURST) // 2, f"{len(got)} updates for a burst of {len(BURST)}: nothing was dropped"
    np.testing.assert_allclose(cells(server_drawn)[3], last.weights[3], rtol=0, atol=1e-12)
    assert weights_line(last) in server_drawn.locator(".steps").first.inner_text()
    value = server_drawn.evaluate("() => Bokeh.documents[0].get_model_by_name('x-3-0').value")
    assert value == pytest.approx(BURST[-1], abs=1e-12)


# static/bokeh_seam.js sendLatest: every slider value this page sends to the server, as the server reads it.
JS_RECORD_SENDS = """() => {
    const conn = Bokeh.require('client/connection').ClientConnection.prototype;
    const id = Bokeh.documents[0].get_model_by_name('x-3-0').id;
    window.__sent = [];
    if (!conn.send.__recorded) {
        const send = conn.send;
        conn.send = function (message) {
            if (message.msgtype() === 'PATCH-DOC')
                for (const e of message.content.events)
                    if (e.kind === 'ModelChanged' && e.model.id === id && e.attr === 'value')
                        window.__sent.push(e.new);
            return send.call(this, message);
        };
        conn.send.__recorded = true;
    }
}"""


@pytest.mark.seam
def test_a_burst_keeps_one_value_in_flight(server_drawn):
    """static/bokeh_seam.js sendLatest: while the server has not answered the page's last patch, newer values
    of a control are held and only the newest is sent when the answer comes: a burst of 100 sends the first
    value (when nothing else is awaiting an answer) and then the last, nothing in between."""
    server_drawn.evaluate(JS_RECORD_SENDS)
    server_drawn.evaluate(JS_RECORD_ROWS)
    server_drawn.evaluate(JS_BURST, list(BURST))
    server_drawn.wait_for_function(JS_ANSWERED, arg=core(BURST[-1]).weights[3].tolist(), timeout=15000)
    server_drawn.wait_for_selector(f"text={weights_line(core(BURST[-1]))}", timeout=15000)
    # The first value goes at once, unless the fixture's own drawn_by patch is still unanswered: then it is
    # held too. Either way nothing of the middle of the burst is sent, and the last value is.
    assert server_drawn.evaluate("() => window.__sent") in ([BURST[0], BURST[-1]], [BURST[-1]])
    assert answered(server_drawn.evaluate("() => window.__rows")) in ([BURST[-1]], [BURST[0], BURST[-1]])


# Every message from the server reaches BokehJS 250 ms late, in order: a slow connection.
JS_SLOW_CONNECTION = """() => {
    const conn = Bokeh.require('client/connection').ClientConnection.prototype;
    const receive = conn._on_message;
    conn._on_message = function (event) { setTimeout(() => receive.call(this, event), 250); };
}"""

JS_DRAG = """async (values) => {
    const slider = Bokeh.documents[0].get_model_by_name('x-3-0');
    for (const v of values) { slider.value = v; await new Promise(r => setTimeout(r, 40)); }
}"""


def test_a_drag_on_a_slow_connection_ends_on_its_last_value(server_drawn, stock_bokeh):
    """With answers 250 ms late and a value every 40 ms, values wait for the answer in the page: fewer are
    sent, in order, and the last one always goes and is shown with the core's numbers. (On BokehJS as it
    is, every value is sent: static/bokeh_seam.js sendLatest is what holds them.)"""
    server_drawn.evaluate(JS_RECORD_SENDS)
    server_drawn.evaluate(JS_RECORD_ROWS)
    server_drawn.evaluate(JS_SLOW_CONNECTION)
    drag = tuple(round(0.1 + 0.04 * k, 2) for k in range(20))  # distinct, none of them the start's 0.2
    server_drawn.evaluate(JS_DRAG, list(drag))
    last = core(drag[-1])
    server_drawn.wait_for_function(JS_ANSWERED, arg=last.weights[3].tolist(), timeout=15000)
    server_drawn.wait_for_selector(f"text={weights_line(last)}", timeout=15000)
    sent = server_drawn.evaluate("() => window.__sent")
    assert sent[-1] == drag[-1] and 2 <= len(sent) < len(drag) or stock_bokeh and sent == list(drag), sent
    assert sent == sorted(sent), "values sent out of the order they were made"
    got = [
        next(x for x in drag if np.allclose(r, core(x).weights[3], rtol=0, atol=1e-12))
        for r in server_drawn.evaluate("() => window.__rows")
    ]
    assert got[-1] == drag[-1] and got == sorted(got) and set(got) <= set(sent)
    np.testing.assert_allclose(cells(server_drawn)[3], last.weights[3], rtol=0, atol=1e-12)


@pytest.mark.seam
def test_a_move_rewrites_no_style_sheet_with_its_own_text(explorer):
    """static/bokeh_seam.js is in the page and works: BokehJS 3.9 rewrote ~45 unchanged <style>
    elements a move (each a style recalculation). Fails if a Bokeh upgrade renames what it patches."""
    for _ in range(3):
        counts = explorer.evaluate(STYLE_WRITES_DURING_A_MOVE, "x-3-0")
        assert counts["unchanged"] == 0, counts


def test_the_controls_are_bokeh_widgets_in_the_page(explorer):
    """Statically: the served controls are the plain Bokeh models, with no Panel widget in between."""
    from widgets.explorer import HeadExplorer

    c = HeadExplorer().page.controls
    for w in (c.query, c.scaling, c.causal, c.tied_qk, c.normaliser, c.x_scale, c.preset, *c.tokens.flat):
        assert isinstance(w, Model) and type(w).__module__.startswith("bokeh.models"), w
    # and in the browser the named models are those Bokeh types (no Panel wrapper model)
    names = ["x-3-0", "query", "scaling", "causal", "normaliser", "x_scale", "preset"]
    types = explorer.evaluate("ns => ns.map(n => Bokeh.documents[0].get_model_by_name(n).type)", names)
    assert types == [
        "Slider",
        "Select",
        "CheckboxGroup",
        "CheckboxGroup",
        "RadioButtonGroup",
        "NumericInput",
        "Select",
    ]


def test_the_temperature_slider_and_its_link_key(explorer, served_app):
    """τ, added through core.options.SWITCHES alone: its slider changes the weights to the core's, its step
    line shows, and the address bar carries temp=…"""
    handle = explorer.locator(".bk-Slider", has_text="temperature").locator(".noUi-handle")
    handle.focus()
    for _ in range(4):
        handle.press("ArrowLeft")
    expected = core(temperature=0.8)
    explorer.wait_for_selector(f"text={weights_line(expected)}", timeout=10000)
    assert "divide by the temperature τ = 0.80" in explorer.locator(".steps").first.inner_text()
    np.testing.assert_allclose(
        cells(explorer), np.where(expected.future, np.nan, expected.weights), rtol=0, atol=1e-12
    )
    explorer.wait_for_function("() => location.search.includes('temp=0.8')", timeout=10000)
