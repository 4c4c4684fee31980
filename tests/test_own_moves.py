"""The served page draws a student's own slider moves (static/explorer_page.js follow), in Chromium.

The server is paused (SIGSTOP) to stand for one too busy to answer: a move must still show the core's
numbers in the page, and once the server answers, an answer to an older move must never be seen. The
expected numbers come from the core; nothing is timed.
"""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest

from core.attention import attend
from core.presets import PRESETS
from tests.conftest import CONSOLE_PROBLEMS, SERVER_DRAWS, serve_process
from widgets.page import readout_html
from widgets.state import HeadState
from widgets.viewdata import view_data

CHAPTER = PRESETS["chapter"]
START = "weights = [0.13, 0.56, 0.14, 0.18]"


def weights_for(x30: float) -> np.ndarray:
    X = np.array(CHAPTER.X)
    X[3, 0] = x30
    return attend(X, CHAPTER.W_Q, CHAPTER.W_K, CHAPTER.W_V).weights


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    log = tmp_path_factory.mktemp("own") / "panel.log"
    with serve_process(log=log) as (base, proc):
        yield f"{base}/main", proc
    assert "Traceback" not in log.read_text()


@pytest.fixture
def paused(own_server):
    """Pause the server; always let it go on again."""
    _, proc = own_server
    stopped = []

    def pause():
        os.kill(proc.pid, signal.SIGSTOP)
        stopped.append(True)

    def resume():
        if stopped:
            os.kill(proc.pid, signal.SIGCONT)
            stopped.clear()

    yield pause, resume
    resume()


def open_page(page, url):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.goto(url)
    page.wait_for_selector(f"text={START}", timeout=30000)
    page.wait_for_function("() => window.HeadExplorerPage && HeadExplorerPage.pages.length === 1")
    page.errors = errors
    return page


# Every frame: which of `values` the weights row 3 shows (-1: none of them), when it changes; each change
# the page sends, as (kind, attr, model name), and each it receives, as (attr, model name).
JS_WATCH = """(values_rows) => {
    const doc = Bokeh.documents[0];
    const source = doc.get_model_by_name('weights-cells');
    const row3 = () => {
        const v = Array.from(source.data instanceof Map ? source.data.get('value') : source.data.value);
        const n = Math.round(Math.sqrt(v.length));
        return v.slice(3 * n, 4 * n);
    };
    const close = (a, b) => a.every((x, i) => Math.abs(x - b[i]) <= 1e-9);
    window.__shown = [];
    let last = null;
    const frame = () => {
        const r = row3();
        const k = values_rows.findIndex((w) => close(r, w));
        if (k !== last) { window.__shown.push(k); last = k; }
        requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    window.__received = [];
    const session = Bokeh.require('client/session').ClientSession.prototype;
    if (!session._handle_patch.__watched) {
        const handle = session._handle_patch;
        session._handle_patch = function (message) {
            for (const e of message.content.events) {
                const model = doc.get_model_by_id((e.model || {}).id);
                window.__received.push([e.attr || e.kind, model ? model.name : null]);
            }
            return handle.call(this, message);
        };
        session._handle_patch.__watched = true;
    }
    window.__sent = [];
    const conn = Bokeh.require('client/connection').ClientConnection.prototype;
    if (!conn.send.__watched) {
        const send = conn.send;
        conn.send = function (message) {
            if (message.msgtype() === 'PATCH-DOC')
                for (const e of message.content.events) {
                    const model = doc.get_model_by_id((e.model || {}).id);
                    window.__sent.push([e.kind, e.attr || null, model ? model.name : null]);
                }
            return send.call(this, message);
        };
        conn.send.__watched = true;
    }
}"""

JS_SET = "v => { Bokeh.documents[0].get_model_by_name('x-3-0').value = v; }"
NEXT_FRAME = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())))"


def let_go(page, x30: float) -> None:
    """Let go of the slider at x30, as a drag ends; the server then writes the address (and nothing of
    the figures): once it holds x30, the server has applied every move before it."""
    page.evaluate("v => { Bokeh.documents[0].get_model_by_name('x-3-0').value_throttled = v; }", x30)
    page.wait_for_function(
        "v => ((new URLSearchParams(window.location.search).get('X') || '').split(';')[3] || '')"
        ".split(',')[0] === String(v)",
        arg=x30,
        timeout=20000,
    )


JS_VALUES = """name => {
    const s = Bokeh.documents[0].get_model_by_name(name);
    return Array.from(s.data instanceof Map ? s.data.get('value') : s.data.value);
}"""


def values(page, name: str = "weights-cells") -> np.ndarray:
    """A heatmap source's `value` column as the page holds it (NaN for a hidden cell)."""
    return np.array(page.evaluate(JS_VALUES, name), dtype=float)


def row3(page) -> np.ndarray:
    v = values(page)
    n = round(len(v) ** 0.5)
    return v[3 * n : 4 * n]


def core_values(state: HeadState, figure: str = "weights") -> list:
    """The same column, as Python's view data has it for `state`."""
    return view_data(state.head, state.query, state.labels, state.dims)["cells"][figure]["value"]


def steps_text(page) -> str:
    return page.locator(".steps").first.inner_text()


def test_a_move_shows_the_cores_numbers_while_the_server_cannot_answer(own_server, paused, page):
    url, _ = own_server
    pause, resume = paused
    open_page(page, url)
    pause()
    page.evaluate(JS_SET, 0.35)
    page.evaluate(NEXT_FRAME)
    np.testing.assert_allclose(row3(page), weights_for(0.35)[3], rtol=0, atol=1e-9)
    w = weights_for(0.35)[3]
    assert f"weights = [{', '.join(f'{x:.2f}' for x in w)}]" in steps_text(page)
    resume()
    let_go(page, 0.35)
    np.testing.assert_allclose(row3(page), w, rtol=0, atol=1e-9)


def test_an_answer_to_an_older_move_is_never_seen(own_server, paused, page):
    """Three moves while the server is paused, each drawn at once in the page; once the server has taken
    them all in, no frame after the last move has shown an older one."""
    url, _ = own_server
    pause, resume = paused
    open_page(page, url)
    values = [0.5, 0.65, 0.8]
    page.evaluate(JS_WATCH, [weights_for(v)[3].tolist() for v in values])
    pause()
    for v in values:
        page.evaluate(JS_SET, v)
        page.evaluate(NEXT_FRAME)
    resume()
    let_go(page, 0.8)
    page.evaluate(NEXT_FRAME)
    shown = page.evaluate("() => window.__shown")
    assert shown[-3:] == [0, 1, 2], shown  # each move drawn in turn, the last one kept
    assert shown.index(2) == len(shown) - 1, f"an older move was drawn after the last: {shown}"
    assert page.errors == []


def test_a_drag_goes_one_way_only(own_server, page):
    """What the page draws for itself is written without syncing: a move sends the slider's value (and its
    let-go value), never the figures' data; and the server, told the page draws its own moves, sends
    nothing of the figures back for a drag."""
    url, _ = own_server
    open_page(page, url)
    page.evaluate(JS_WATCH, [weights_for(0.45)[3].tolist()])
    page.evaluate(JS_SET, 0.45)
    let_go(page, 0.45)
    sent = page.evaluate("() => window.__sent")
    # (Panel's Location model answers the address the server wrote with the page's own href)
    assert sent and all(kind == "ModelChanged" and name in ("x-3-0", "location") for kind, _, name in sent)
    received = page.evaluate("() => window.__received")
    assert received and not any(attr == "data" for attr, _ in received), received
    np.testing.assert_allclose(row3(page), weights_for(0.45)[3], rtol=0, atol=1e-9)


def test_the_server_drawing_alone_still_follows(own_server, page):
    """With the channel saying the server draws (bench/own_moves.py's `server` way), the page draws nothing
    and the server's answers draw every move."""
    url, _ = own_server
    open_page(page, url)
    page.evaluate(SERVER_DRAWS)
    drawn = page.evaluate("() => HeadExplorerPage.pages[0].drawn")
    page.evaluate(JS_SET, 0.55)
    page.wait_for_function(
        f"w => Math.abs(({JS_VALUES})('weights-cells')[15] - w) < 1e-9",
        arg=float(weights_for(0.55)[3][3]),
        timeout=20000,
    )
    assert page.evaluate("() => HeadExplorerPage.pages[0].drawn") == drawn
    assert page.errors == []


def test_a_new_shape_from_the_server_is_followed(own_server, page):
    """A preset of another shape (the server rebuilds the sliders): the page's next own move uses the new
    head, with the core's numbers for it."""
    url, _ = own_server
    open_page(page, url)
    page.evaluate("() => { Bokeh.documents[0].get_model_by_name('preset').value = 'tired'; }")
    tired = PRESETS["tired"]
    page.wait_for_function(
        "n => JSON.parse(Bokeh.documents[0].get_model_by_name('head-channel').state).tokens.length === n",
        arg=len(tired.tokens),
        timeout=20000,
    )
    # (the old sliders may linger in the page's document a moment: the one in the sliders' box now)
    page.evaluate("""() => {
        const box = Bokeh.documents[0].get_model_by_name('token-sliders');
        box.children.flatMap((row) => row.children).find((s) => s.name === 'x-1-0').value = 0.7;
    }""")
    page.evaluate(NEXT_FRAME)
    expected = HeadState()
    expected.load("tired")
    expected.set_x(1, 0, 0.7)
    np.testing.assert_allclose(values(page), core_values(expected), rtol=0, atol=1e-9, equal_nan=True)


def test_the_query_and_a_switch_are_drawn_before_the_server_answers(own_server, paused, page):
    """The query picker and the switches are drawn in the page as the sliders are: with the server paused,
    picking "cat" and turning the mask off shows the core's weights and the steps for exactly that head."""
    url, _ = own_server
    pause, resume = paused
    open_page(page, url)
    pause()
    page.evaluate("""() => {
        const doc = Bokeh.documents[0];
        doc.get_model_by_name('query').value = '1';
        doc.get_model_by_name('causal').active = [];
    }""")
    page.evaluate(NEXT_FRAME)
    expected = HeadState()
    expected.apply(query=1, causal=False)
    e = expected
    np.testing.assert_allclose(values(page), core_values(e), rtol=0, atol=1e-9, equal_nan=True)
    steps = page.evaluate("() => Bokeh.documents[0].get_model_by_name('steps').text")
    assert steps == readout_html(view_data(e.head, e.query, e.labels, e.dims))
    resume()
    page.wait_for_function(
        "() => { const s = JSON.parse(Bokeh.documents[0].get_model_by_name('head-channel').state);"
        " return s.query === 1 && s.causal === false; }",
        timeout=20000,
    )
    assert page.errors == []


def test_the_server_sends_no_figures_for_a_drag_the_page_draws():
    """widgets/explorer.py: once the channel says the page draws, a drag is applied to the state (and the
    preset becomes "custom") but the figures are not written; any other change still writes them and
    publishes the state; with the channel back on "server", drags are drawn by the server again."""
    from widgets.explorer import HeadExplorer

    explorer = HeadExplorer()
    page, channel = explorer.page, explorer.channel
    weights = page.plots["weights"].source
    before, published = repr(dict(weights.data)), channel.state
    assert channel.drawn_by == "server"  # until the page says otherwise
    channel.drawn_by = "page"
    explorer._drag(3, 0, 0.45)
    assert explorer.state.X[3, 0] == 0.45 and not explorer.state.preset
    assert page.controls.preset.value == "custom"
    assert repr(dict(weights.data)) == before
    assert channel.state == published and explorer.updates == 0
    explorer.state.apply(query=1)  # not a drag: drawn and published
    assert explorer.updates == 1 and json.loads(channel.state)["X"][3][0] == 0.45
    channel.drawn_by = "server"
    explorer._drag(3, 0, 0.6)
    assert explorer.updates == 2
    np.testing.assert_allclose(weights.data["value"], core_values(explorer.state))


def test_a_figure_out_of_sight_catches_up_once_the_moves_stop(own_server, paused, page):
    """The scores heatmap, below the fold, is not written during a drag (its repaint would be unseen); once
    the moves stop it shows the core's numbers for the last one, the server still paused."""
    url, _ = own_server
    pause, resume = paused
    page.set_viewport_size({"width": 1280, "height": 700})
    open_page(page, url)
    page.wait_for_function("() => HeadExplorerPage.pages[0].settleAfter > 0")
    # the browser has said the scores are out of sight (its first report comes a frame or more after set-up)
    page.wait_for_function("() => HeadExplorerPage.pages[0].inView.get('scores') === false")
    before = values(page, "scores-cells")
    pause()
    page.evaluate(JS_SET, 0.5)
    page.evaluate(NEXT_FRAME)
    np.testing.assert_array_equal(values(page, "scores-cells"), before)  # out of sight: not written yet
    expected = HeadState()
    expected.set_x(3, 0, 0.5)
    page.wait_for_function(
        f"([want]) => ({JS_VALUES})('scores-cells').every((x, i) => Math.abs(x - want[i]) < 1e-9)",
        arg=[list(core_values(expected, "scores"))],
        timeout=10000,
    )
    resume()
