"""Attention in tiles (core/tiles.py, widgets/tiles_*.py, static/tiles.js): the online softmax gives the
head's own row, tile by tile, in both runtimes.

The tiled output is checked against `attend`'s for random heads, masks, temperatures, normalisers and
tile sizes (to 1e-12 of the blend's size, what the page says); the running numbers against their
definitions after every tile; the JavaScript port against Python on the same heads (numbers to 1e-9,
text exactly) and on random sequences of the view's actions.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from bokeh.events import ButtonClick

from core.attention import attend
from core.options import table_json
from core.presets import CHAPTER, PRESETS
from core.tiles import AGREEMENT, attend_in_tiles, tiled_difference, tiles
from tests import node_batch
from tests.node_batch import NODE
from tests.test_parity import mismatches, random_case
from widgets.state import HeadState
from widgets.tiles_state import TilesSettings, apply, js_config, settle
from widgets.tiles_view import TilesView
from widgets.tiles_viewdata import view_data, weights_so_far

DRIVER = node_batch.Path(__file__).resolve().parent / "tiles_driver.js"


def head_of(case: dict):
    return attend(case["X"], case["W_Q"], case["W_K"], case["W_V"], **case["options"])


def random_heads(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    cases = []
    for k in range(n):
        case = random_case(rng, k)
        try:
            head_of(case)
        except Exception:  # a head the core refuses (an overflow): not one the view can show
            continue
        cases.append(case)
    return cases


# --- the arithmetic -------------------------------------------------------------------------------------


def test_tiles_cover_every_key_once():
    for T in range(1, 20):
        for size in range(1, T + 2):
            spans = tiles(T, size)
            assert [k for a, b in spans for k in range(a, b)] == list(range(T))
            assert all(b - a == size for a, b in spans[:-1]) and 0 < spans[-1][1] - spans[-1][0] <= size


def test_the_tiled_row_is_the_heads_row_for_random_heads_masks_temperatures_and_tile_sizes():
    rng = random.Random(31)
    kinds = set()
    for case in random_heads(400, seed=31):
        head = head_of(case)
        for i in range(head.T):
            for size in {1, head.T, rng.randint(1, head.T)}:
                steps = attend_in_tiles(head, i, size)
                assert tiled_difference(head, i, steps) <= AGREEMENT, (case, i, size)
                kinds.add((head.options.normaliser, head.options.causal, head.options.temperature != 1))
    assert len(kinds) == 12  # every normaliser, mask on and off, τ = 1 and not


def test_after_each_tile_the_running_numbers_are_those_of_the_keys_seen():
    """m is the largest score seen, l the sum of exp(s − m) over them, acc / l their softmax's blend; a
    tile after the query (the mask on) is skipped; the last tile's weights are the head's."""
    head = PRESETS["tired"].head()
    for i in (0, 4, head.T - 1):
        for size in (1, 3, head.T):
            steps = attend_in_tiles(head, i, size)
            for k, s in enumerate(steps):
                seen = np.concatenate([t.scores for t in steps[: k + 1]])
                visible = seen[np.isfinite(seen)]
                if s.skipped:
                    assert s.start > i and s.running is steps[k - 1].running
                    continue
                m = visible.max()
                assert s.running.maximum == m
                e = np.exp(visible - m)
                assert s.running.total == pytest.approx(e.sum(), rel=1e-12)
                V = head.V[: len(seen)][np.isfinite(seen)]
                np.testing.assert_allclose(s.running.blend / s.running.total, e @ V / e.sum(), rtol=1e-12)
                w = weights_so_far("softmax", steps[: k + 1], head.T)
                assert np.nansum(w) == pytest.approx(1.0, rel=1e-12)
            np.testing.assert_allclose(weights_so_far("softmax", steps, head.T), head.weights[i], rtol=1e-12)


def test_a_new_maximum_rescales_the_sums_so_far():
    """The chapter's 'it' in tiles of one key: 'cat' raises m from 0.21 to 1.70, and the sum so far is
    multiplied by exp(0.21 − 1.70) = 0.227 before cat's own term joins it."""
    head = CHAPTER.head()
    steps = attend_in_tiles(head, 3, 1)
    assert [round(s.running.maximum, 2) for s in steps] == [0.21, 1.70, 1.70, 1.70]
    assert steps[1].rescale == pytest.approx(math.exp(steps[0].running.maximum - steps[1].running.maximum))
    assert round(steps[1].rescale, 3) == 0.227 and steps[2].rescale == steps[3].rescale == 1.0
    assert steps[1].running.total == pytest.approx(1 * steps[1].rescale + 1, rel=1e-12)
    out = steps[-1].running.output("softmax", head.V)
    np.testing.assert_allclose(out, [0.23029072, 0.68075105], atol=1e-8)


def test_the_mask_skips_every_tile_after_the_query():
    head = PRESETS["tired"].head()
    masked = attend(head.X, head.W_Q, head.W_K, head.W_V, **{**head.options.as_dict(), "causal": True})
    steps = attend_in_tiles(masked, 2, 2)
    assert [s.skipped for s in steps] == [False, False] + [True] * (len(steps) - 2)


# --- the settings -----------------------------------------------------------------------------------------


def test_settings_a_new_size_starts_again_and_next_stops_at_the_last_tile():
    s = {"size": 2, "step": 0}
    s = apply(s, {"do": "next"}, 4)
    s = apply(s, {"do": "next"}, 4)
    assert s == {"size": 2, "step": 2} and apply(s, {"do": "next"}, 4) == s
    assert apply(s, {"do": "size", "value": 3}, 4) == {"size": 3, "step": 0}
    assert apply(s, {"do": "size", "value": 9}, 4) == {"size": 4, "step": 0}
    assert apply(s, {"do": "again"}, 4)["step"] == 0
    assert settle(8, 5, 4) == (4, 1, 1)  # a head of fewer tokens: within what it allows
    with pytest.raises(ValueError):
        apply(s, {"do": "jump"}, 4)


# --- the view ----------------------------------------------------------------------------------------------


def test_the_view_follows_the_head_on_screen_and_reaches_its_output():
    state = HeadState()
    view = TilesView(state=state)
    page = view.page
    scores = page.scores
    for _ in range(2):
        page.next._trigger_event(ButtonClick(page.next))  # as a click would
    assert view.settings.step == 2 and page.next.disabled
    assert "[0.23, 0.68]" in page.readout.text and "within 1e-12 ✓" in page.readout.text
    state.set_x(3, 0, 0.5)  # a drag: the view redraws the new head, the same tiles done
    assert page.scores is scores and view.settings.step == 2
    assert page.readout.text == view_data(state.head, 3, state.labels, 2, 2)["readout"]
    assert "within 1e-12 ✓" in page.readout.text
    page.size.value = 1  # the slider: tiles of one key, from the start
    assert (view.settings.size, view.settings.step) == (1, 0) and not page.next.disabled
    view.showing = False
    state.load("tired")
    assert page.figure.x_range.end == 3.5  # hidden: not drawn
    view.showing = True
    assert page.figure.x_range.end == state.head.T - 0.5  # opened again: caught up
    assert page.figure.xaxis[0].major_label_overrides[state.head.T - 1] == "tired"
    page.again._trigger_event(ButtonClick(page.again))
    assert view.settings.step == 0 and page.again.disabled


# --- both runtimes ------------------------------------------------------------------------------------------

pytestmark_node = pytest.mark.skipif(NODE is None, reason="node is not installed")


@pytestmark_node
def test_javascript_draws_the_same_tiles_as_python():
    rng = random.Random(32)
    cases = []
    for case in random_heads(160, seed=32):
        T = len(case["X"])
        views = []
        for _ in range(3):
            size = rng.randint(1, T)
            views.append([size, rng.choice([0, 1, rng.randint(0, math.ceil(T / size)), math.ceil(T / size)])])
        cases.append({**case, "views": views})
    actions = [
        {"T": rng.randint(1, 16), "actions": [rng.choice(
            [{"do": "next"}, {"do": "next"}, {"do": "again"}, {"do": "size", "value": rng.randint(1, 18)}]
        ) for _ in range(12)]}  # fmt: skip
        for _ in range(60)
    ]
    batch = {"config": js_config(), "switches": table_json(), "cases": cases, "settings": actions}
    result = node_batch.run_node(DRIVER, batch)
    found = []
    for n, (case, js) in enumerate(zip(cases, result["cases"])):
        assert "error" not in js, js
        head = head_of(case)
        for (size, step), got in zip(case["views"], js):
            want = view_data(head, case["i"], case["labels"], size, step)
            found += mismatches(want, got, f"case {n} {size} {step}")
    assert not found, "\n".join(found[:10])
    for seq, got in zip(actions, result["settings"]):
        s = js_config()["start"]
        for action, js in zip(seq["actions"], got):
            s = apply(s, action, seq["T"])
            assert s == js, (seq, action)
    settings = TilesSettings()
    settings.act({"do": "next"}, 4)
    assert (settings.size, settings.step) == (2, 1)


def test_no_number_or_key_label_covers_another_in_the_strip():
    """widgets/figure_text.py's rules on the strip's fixed frame: each number fits its cell at the font the
    layout picks, kept key labels lying flat fit their spacing (else they slant), at 1 to 64 keys."""
    from widgets.figure_text import AXIS_FONT, NUMBER_GAP, TICK_GAP, text_px
    from widgets.tiles_viewdata import FRAME_WIDTH

    for T in (1, 2, 4, 7, 10, 12, 16, 24, 40, 64):
        s = HeadState()
        s.apply(tokens=[f"token{k}" for k in range(T)], X=np.resize(np.array(CHAPTER.X), (T, 3)))
        v = view_data(s.head, T - 1, s.labels, 1, T)  # every tile done: every cell has its number
        layout = v["layout"]
        assert layout["cell_width"] == FRAME_WIDTH / T
        for row in ("scores", "weights"):
            for text in v[row]["text"]:
                fits = text_px(text, layout["font"]) + NUMBER_GAP <= layout["cell_width"]
                assert not text or fits, (T, text)
        ticks = layout["x_ticks"]
        if layout["x_angle"] == 0 and len(ticks) > 1:
            widest = max(text_px(t, AXIS_FONT) for t in layout["x_labels"])
            assert widest + TICK_GAP <= (ticks[1] - ticks[0]) * layout["cell_width"]
        assert any(v["weights"]["text"]) == bool(layout["font"])
