"""Issue 4: editing, presets, URL settings and downloads — headless first, then in Chromium."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.attention import attend
from core.presets import PRESETS
from core.trace import fmt_vector
from widgets.explorer import HeadExplorer
from widgets.intermediates import as_csv, as_json
from widgets.state import EDIT_MAX_TOKENS, HeadState
from widgets.url_state import apply_params, decode, encode

HOSTILE = "<img src=x onerror=alert(1)>"


# -- editor rules on the state -------------------------------------------------


def test_labels_are_edited_in_place_and_bad_ones_refused():
    s = HeadState()
    assert s.set_labels("A, B, C, D") and s.tokens == ["A", "B", "C", "D"]
    for bad in ("A, B, C", "A, A, C, D", "A, , C, D", "A, B, C, " + "x" * 41):
        assert not s.set_labels(bad)
        assert s.message and s.tokens == ["A", "B", "C", "D"]


def test_tokens_added_and_removed_within_limits():
    s = HeadState()
    while len(s.tokens) < EDIT_MAX_TOKENS:
        assert s.add_token()
    assert not s.add_token() and "16" in s.message
    assert s.X.shape == (EDIT_MAX_TOKENS, 3) and not s.X[4:].any()
    while len(s.tokens) > 1:
        assert s.remove_token(0)
    assert not s.remove_token() and s.tokens == ["t16"]
    assert s.query == 0


def test_widths_resize_every_matrix_and_keep_what_fits():
    s = HeadState()
    assert s.set_widths(C=5, d=4)
    assert s.X.shape == (4, 5) and s.W_Q.shape == s.W_K.shape == s.W_V.shape == (5, 4)
    assert s.W_Q[1, 0] == 2.0 and s.head.d == 4
    for bad in (0, 7, 2.5, "two", float("nan"), "1e308"):
        assert not s.set_widths(C=bad)
        assert s.message and s.X.shape == (4, 5)


@pytest.mark.parametrize("bad", ["abc", float("nan"), float("inf"), -float("inf"), 1e308, None, ""])
def test_weight_cells_take_exact_numbers_only(bad):
    s = HeadState()
    assert s.set_weight("W_K", 1, 0, "0.25") and s.W_K[1, 0] == 0.25
    before = s.head
    assert not s.set_weight("W_K", 1, 0, bad)
    assert s.message and s.head is before


def test_blend_dims_follow_d():
    s = HeadState()
    s.set_widths(d=4)
    assert s.apply(dims=[1, 3]) and s.dims == [1, 3]
    assert not s.apply(dims=[0, 9]) and s.dims == [1, 3]
    s.set_widths(d=2)
    assert s.dims == [0, 1]


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_loads_with_its_options(name):
    s = HeadState()
    assert s.load(name)
    p = PRESETS[name]
    assert s.preset == name and s.labels == p.tokens and s.labels[s.query] == p.query
    np.testing.assert_array_equal(s.head.weights, p.head().weights)
    s.set_x(0, 0, 0.5)
    assert s.preset == ""  # edited: no longer the preset


# -- URL settings ------------------------------------------------------------


@pytest.mark.parametrize("name", list(PRESETS))
def test_settings_round_trip_through_the_url(name):
    s = HeadState()
    s.load(name)
    s.set_x(0, 0, -1.35)
    s.apply(query=0)
    t = HeadState()
    assert apply_params(t, encode(s)) == []
    assert encode(t) == encode(s)
    np.testing.assert_array_equal(t.head.weights, s.head.weights)


def test_a_hostile_label_survives_the_url_as_text():
    s = HeadState()
    s.apply(tokens=["The", "cat", HOSTILE, "it,;%&="])
    t = HeadState()
    apply_params(t, encode(s))
    assert t.tokens == s.tokens


def _links():
    """Start heads and links: presets, other widths and token counts, and links edited part by part."""
    heads = []
    for name in ("chapter", "tired", "exercise-1", "no-mask"):
        for d in (None, 1, 3):
            s = HeadState()
            s.load(name)
            if d:
                s.set_widths(d=d)
                s.add_token()
                s.apply(dims=[0, 0] if d == 1 else [2, 0])
            heads.append(encode(s))
    rng = np.random.default_rng(15)
    links = []
    for _ in range(150):
        link = dict(heads[rng.integers(len(heads))])
        for key in list(link):
            r = rng.random()
            if r < 0.25:
                link.pop(key)
            elif r < 0.4:
                link[key] = heads[rng.integers(len(heads))][key]
        if rng.random() < 0.3:
            link["preset"] = str(rng.choice(list(PRESETS)))
        if rng.random() < 0.15:
            link["query"] = str(rng.choice(["0", "9", "cat", "zz"]))
        links.append(link)
    return heads, links


def test_a_link_applied_at_once_ends_where_its_steps_would(monkeypatch):
    """apply_params applies a link that fits together as one change (a classroom send computes the head
    once per student, not once per step); the state it leaves is the one of the steps, part by part."""
    import widgets.url_state as url_state

    heads, links = _links()
    for k, link in enumerate(links):
        start = heads[k % len(heads)]
        once, steps = HeadState(), HeadState()
        apply_params(once, start)
        apply_params(steps, start)
        got = apply_params(once, link)
        with monkeypatch.context() as m:
            m.setattr(url_state, "_as_one_change", lambda state, changes: None)
            expected = apply_params(steps, link)
        assert got == expected
        assert once.as_data() == steps.as_data(), link


@pytest.mark.parametrize(
    "params",
    [
        {"X": "1,2;x"}, {"X": "nan,0,0;0,1,0;0,0,1;0,0,0"}, {"WQ": "1e999,0;0,0;0,0"}, {"norm": "softer"},
        {"mask": "maybe"}, {"xscale": "inf"}, {"dims": "a,b"}, {"preset": "nope"}, {"query": "zebra"},
        {"tokens": "a,b"}, {"X": "1" * 5000}, {"tokens": ",,,"},
    ],
)
def test_a_malformed_parameter_is_reported_and_defaulted(params):
    s = HeadState()
    problems = apply_params(s, params)
    assert problems and s.message
    assert s.head.weights.shape == (4, 4)
    np.testing.assert_array_equal(s.head.weights, PRESETS["chapter"].head().weights)


def test_decode_reads_lists_like_panels_session_args():
    changes, problems = decode({"norm": [b"raw"], "mask": [b"0"]})
    assert changes == {"normaliser": "raw", "causal": False} and problems == []


# -- downloads ---------------------------------------------------------------


def test_downloads_hold_every_matrix_labelled_by_token():
    s = HeadState()
    data = json.loads(as_json(s.head, s.labels))
    assert data["matrices"]["weights"]["rows"] == ["The", "cat", "sat", "it"]
    assert data["matrices"]["scaled_masked"]["values"][0][1] == "-inf"
    np.testing.assert_allclose(data["matrices"]["output"]["values"][3], s.head.output[3])
    lines = as_csv(s.head, s.labels).splitlines()
    assert lines[0] == "matrix,row,column,value"
    assert any(line.startswith("weights,it,cat,0.559") for line in lines)


def test_explorer_editor_follows_the_state():
    e = HeadExplorer()
    figures = [p.figure for p in e.page.plots.values()]
    e.state.set_widths(C=4, d=3)
    assert e.editor.grids["W_V"].shape == (4, 3)
    assert len(e.page.controls.tokens.flat) == 16
    e.state.load("chapter")
    assert e.editor.labels.value == "The, cat, sat, it"
    assert [p.figure for p in e.page.plots.values()] == figures


# -- in Chromium -------------------------------------------------------------


def _set_model(page, name: str, attr: str, value) -> None:
    page.evaluate(
        "([n, a, v]) => { Bokeh.documents[0].get_model_by_name(n)[a] = v; }", [name, attr, value]
    )


def _weights_line(page) -> str:
    return page.locator("td.step-lines").nth(4).inner_text().splitlines()[-1]


def _open(page, url):
    page.goto(url)
    page.wait_for_selector("text=weights = [", timeout=20000)


def _open_editor(page):
    """The served page builds its head editor when the student first opens the card."""
    page.get_by_role("button", name="Edit the head").click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('W_V-2-1') != null", timeout=20000)


def test_browser_edit_a_weight_and_tokens(served_app, page, artifacts):
    _open(page, served_app)
    _open_editor(page)
    _set_model(page, "W_K-1-0", "value", 1.0)
    s = HeadState()
    s.set_weight("W_K", 1, 0, 1.0)
    expected = "weights = " + fmt_vector(s.head.weights[3])
    page.wait_for_selector(f"text={expected}")
    page.get_by_role("button", name="Add a token").click()
    page.wait_for_selector("text=t5[0]")
    page.get_by_role("button", name="Remove the query token").click()
    page.wait_for_function("() => !document.body.innerText.includes('t5[0]')", timeout=10000)
    page.screenshot(path=str(artifacts / "served-edited.png"), full_page=True)


def test_browser_hostile_label_is_text_everywhere(served_app, page, artifacts):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    _open(page, served_app)
    _open_editor(page)
    _set_model(page, "labels", "value", f"The, cat, {HOSTILE}, it")
    page.wait_for_selector(f"text={HOSTILE} [0.50, 0.50]")
    images = page.evaluate(
        """() => { let n = 0; const walk = (root) => { n += root.querySelectorAll('img[src="x"]').length;
             root.querySelectorAll('*').forEach(el => el.shadowRoot && walk(el.shadowRoot)); };
           walk(document); return n; }"""
    )
    page.screenshot(path=str(artifacts / "served-hostile-label.png"), full_page=True)
    assert images == 0 and dialogs == []


def test_browser_copied_link_restores_the_state(served_app, browser):
    first = browser.new_context()
    page = first.new_page()
    _open(page, served_app)
    _set_model(page, "preset", "value", "tired-trace")  # the mask off
    page.wait_for_selector("text=the mask is off")
    _set_model(page, "causal", "active", [0])
    page.wait_for_function("() => location.search.includes('mask=1')", timeout=10000)
    link, shown = page.url, _weights_line(page)
    first.close()
    second = browser.new_context()
    other = second.new_page()
    _open(other, link)
    assert _weights_line(other) == shown
    assert "mask=1" in link and "preset=custom" in link
    second.close()


def test_browser_malformed_parameter_shows_a_message(served_app, page, artifacts):
    _open(page, served_app + "?norm=softer&X=1,2;oops")
    page.wait_for_selector("text=the link's 'norm' should be one of")
    head = attend(*(np.array(m) for m in (PRESETS["chapter"].X, PRESETS["chapter"].W_Q,
                                          PRESETS["chapter"].W_K, PRESETS["chapter"].W_V)))
    assert _weights_line(page) == "weights = " + fmt_vector(head.weights[3])
    page.screenshot(path=str(artifacts / "served-bad-link.png"), full_page=True)
