"""The issue-4 explorers: saturation (why ÷√d) and long-context cost.

Headless tests of the settings classes and of the views (sources rewritten in
place, figures never rebuilt), then one Chromium test of the served page.
"""

from __future__ import annotations

import html
import math

import panel as pn
import pytest

from core.cost import GPU_MEMORY_GB, PRESETS, long_context_cost
from core.notes import gpu_note, saturation_note
from widgets.cost_page import T_STOPS
from widgets.cost_state import CUSTOM, DEFAULT_PRESET, CostSettings
from widgets.cost_view import CostView
from widgets.cost_viewdata import frame, line_columns, point_columns, readout_html, readout_rows
from widgets.refusal import message_html
from widgets.saturation_state import WIDTHS, SaturationSettings
from widgets.saturation_view import SaturationView
from widgets.saturation_viewdata import readout_html as saturation_readout

CHAPTER_NUMBERS = ("1.6 × 10¹⁰", "≈ 33 GB", "≈ 1 TB")


# --- saturation: settings ------------------------------------------------------


def test_saturation_defaults_show_the_chapters_spread():
    s = SaturationSettings()
    assert (s.d, s.seed, s.message) == (128, 0, "")
    assert list(s.curve.d) == list(WIDTHS)
    assert s.point.d == 128
    assert 10 < s.point.score_std < 12.5  # "with d = 128, raw scores have spread about 11"
    assert 0.9 < s.point.scaled_score_std < 1.1
    assert s.point.max_weight_raw > 0.7 > 0.3 > s.point.max_weight_scaled


def test_saturation_changing_d_keeps_the_sweep():
    s = SaturationSettings()
    curve = s.curve
    assert s.apply(d=16)
    assert s.point.d == 16 and s.curve is curve
    assert s.apply(seed=7)
    assert s.curve is not curve and s.curve.seed == 7 and s.point.seed == 7


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"d": 1}, "d"),
        ({"d": 1024}, "d"),
        ({"d": "wide"}, "d"),
        ({"d": float("nan")}, "d"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"T": 1}, "T"),
        ({"T": 0}, "T"),
        ({"T": 5000}, "T"),
        ({"trials": 0}, "trials"),
        ({"T": 1024, "trials": 1000}, "trials"),
    ],
)
def test_saturation_refuses_bad_input_and_keeps_the_last_good_state(changes, field):
    s = SaturationSettings()
    before = (s.d, s.seed, s.T, s.trials, s.curve, s.point)
    assert not s.apply(**changes)
    assert field in s.message
    assert (s.d, s.seed, s.T, s.trials, s.curve, s.point) == before
    assert s.apply(d=32) and s.message == ""


def test_saturation_unknown_input_is_a_programming_error():
    with pytest.raises(TypeError):
        SaturationSettings().apply(width=3)


def test_saturation_readout_names_the_numbers():
    p = SaturationSettings(d=64).point
    text = saturation_readout(p)
    assert "d = 64" in text and f"{p.score_std:.1f}" in text and f"{p.max_weight_raw:.2f}" in text
    assert "The chapter calls" not in text  # the chapter's "one-hot" footnote is for d = 128 only
    p = SaturationSettings().point
    assert html.escape(saturation_note(p)) in saturation_readout(p)


# --- saturation: view --------------------------------------------------------


def test_saturation_view_updates_sources_in_place():
    v = SaturationView()
    p = v.page
    figs = p.plots.figures
    sources = (p.plots.curve, p.plots.marker, p.plots.reference)
    entropy_range = p.plots.entropy.y_range
    old_curve, old_readout = p.plots.curve.data["score_std"], p.readout.text

    p.d_buttons.active = WIDTHS.index(16)  # as a click would
    assert v.settings.d == 16
    assert p.plots.marker.data["d"] == [16, 16]
    assert all(span.location == 16 for span in p.plots.chosen)
    assert "d = 16" in p.readout.text and p.readout.text != old_readout
    assert p.plots.curve.data["score_std"] == old_curve  # only the marker moved

    p.boxes["T"].value = 32
    assert p.plots.curve.data["score_std"] != old_curve
    assert p.plots.entropy.y_range is entropy_range
    assert entropy_range.end == pytest.approx(1.08 * math.log(32))
    assert p.plots.figures == figs
    assert (p.plots.curve, p.plots.marker, p.plots.reference) == sources


def test_saturation_view_bad_widget_input_keeps_state_with_a_message():
    v = SaturationView()
    p = v.page
    point = v.settings.point
    p.boxes["T"].value = 5000
    assert "T is 5000" in p.message.text
    assert p.boxes["T"].value == 64 and v.settings.point is point
    p.boxes["seed"].value = None
    assert "seed needs a number" in p.message.text and p.boxes["seed"].value == 0
    p.boxes["seed"].value = 3
    assert p.message.text == "" and v.settings.seed == 3


def test_views_render_standalone():
    for view in (SaturationView(), CostView()):
        root = pn.panel(view).get_root()
        assert root is not None


# --- cost: settings ------------------------------------------------------------


def test_cost_defaults_are_the_chapters_case():
    s = CostSettings()
    assert (s.T, s.d, s.heads, s.element_bytes, s.preset) == (128_000, 128, 32, 2, DEFAULT_PRESET)
    text = readout_html(s.cost, s.gpu_gb, s.tile)
    for number in CHAPTER_NUMBERS:
        assert number in text
    assert "13× one GPU (80 GB)" in text  # "by a factor of ten per layer"
    assert f"<p class='foot'>{html.escape(gpu_note(s.cost))}</p>" in text  # today's GPUs beside the chapter's


def test_cost_presets_and_custom():
    s = CostSettings()
    assert s.load("Llama 3.1 405B (128k)")
    assert (s.heads, s.C, s.layers, s.preset) == (128, 16384, 126, "Llama 3.1 405B (128k)")
    assert "T ≈ 18,432" in readout_html(s.cost, s.gpu_gb, s.tile)  # exercise 2's crossover, with GQA
    assert "T ≈ 49,152" in readout_html(s.cost, s.gpu_gb, s.tile)  # and without, 3·C
    assert s.apply(T=8_000) and s.preset == CUSTOM
    assert s.apply(T=128_000) and s.preset == "Llama 3.1 405B (128k)"
    assert not s.load("GPT-9") and "GPT-9" in s.message
    assert CostSettings(preset="Llama 3 8B (8k)").T == 8_000


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"T": "abc"}, "T"),
        ({"T": float("nan")}, "T"),
        ({"T": 0}, "T"),
        ({"T": -5}, "T"),
        ({"T": 2_000_000}, "T"),
        ({"d": 0}, "d"),
        ({"heads": 2.5}, "heads"),
        ({"kv_heads": 5}, "kv_heads"),
        ({"kv_heads": 64}, "kv_heads"),
        ({"layers": -1}, "layers"),
        ({"C": None}, "C"),
        ({"element_bytes": 0}, "element_bytes"),
        ({"element_bytes": float("inf")}, "element_bytes"),
        ({"gpu_gb": 40}, "GPU memory"),
        ({"gpu_gb": 500}, "GPU memory"),
        ({"gpu_gb": float("nan")}, "GPU memory"),
    ],
)
def test_cost_refuses_bad_input_and_keeps_the_last_good_state(changes, field):
    s = CostSettings()
    cost, gpu = s.cost, s.gpu_gb
    assert not s.apply(**changes)
    assert s.message.startswith(field)
    assert s.cost is cost and s.gpu_gb == gpu and s.T == 128_000
    assert s.apply(gpu_gb=192) and s.message == ""
    assert s.apply(gpu_gb=GPU_MEMORY_GB[1] + 1) is False
    low, high = GPU_MEMORY_GB
    assert s.message == f"GPU memory is {high + 1} GB; GPUs on sale today hold {low} to {high} GB"


def test_cost_rows_compare_with_one_gpu():
    cost = long_context_cost(PRESETS[DEFAULT_PRESET])
    rows = {what: (value, note) for what, value, note in readout_rows(cost, 192, 128)}
    assert rows["per layer (× 32 heads)"] == ("≈ 1 TB", "5.5× one GPU (192 GB)")


def test_cost_plot_columns_meet_at_the_crossover():
    cost = long_context_cost(PRESETS["Llama 3.1 405B (128k)"])
    pts = point_columns(cost)
    i = pts["what"].index("crossover")
    T = pts["T"][i]
    proj_at_cross = cost.projection_flops_per_layer / cost.inputs.T * T
    assert pts["flops"][i] == pytest.approx(proj_at_cross)
    low, high = frame(cost)
    assert low <= cost.crossover_T <= high and low <= cost.inputs.T <= high
    lines = line_columns(cost, low, high)
    assert lines["T"][0] == pytest.approx(low) and lines["T"][-1] == pytest.approx(high)


def test_messages_are_escaped():
    assert "<script>" not in message_html("<script>alert(1)</script>")
    assert message_html("") == ""


# --- cost: view ------------------------------------------------------------------


def test_cost_view_updates_in_place_and_syncs_widgets():
    v = CostView()
    p = v.page
    fig, x_range, y_range = p.plot.figure, p.plot.figure.x_range, p.plot.figure.y_range
    lines, points = p.plot.lines, p.plot.points
    for number in CHAPTER_NUMBERS:
        assert number in p.readout.text

    p.T_slider.value = T_STOPS.index(1_000_000)
    assert v.settings.T == 1_000_000 and p.boxes["T"].value == 1_000_000
    assert p.plot.now.location == 1_000_000
    assert "T² = 1.0 × 10¹²" in p.readout.text

    p.preset.value = "Llama 3.1 405B (128k)"
    assert v.settings.heads == 128 and p.boxes["heads"].value == 128 and p.boxes["T"].value == 128_000
    assert p.plot.cross.location == 18_432
    assert p.T_slider.value == T_STOPS.index(128_000)

    p.gpu_slider.value = 141  # the slider reaches every part on sale (step 1 GB)
    assert v.settings.gpu_gb == 141 and "one GPU (141 GB)" in p.readout.text

    p.boxes["kv_heads"].value = 128  # no sharing: the dashed line and its legend entry go
    assert not p.plot.mha_item.visible and not p.plot.mha.visible and p.preset.value == CUSTOM

    assert (p.plot.figure, p.plot.figure.x_range, p.plot.figure.y_range) == (fig, x_range, y_range)
    assert (p.plot.lines, p.plot.points) == (lines, points)


def test_cost_view_bad_widget_input_keeps_state_with_a_message():
    v = CostView()
    p = v.page
    cost = v.settings.cost
    p.boxes["T"].value = 0
    assert "T is 0" in p.message.text and p.boxes["T"].value == 128_000
    p.boxes["kv_heads"].value = 7
    assert "kv_heads is 7" in p.message.text and p.boxes["kv_heads"].value == 8
    p.boxes["d"].value = None
    assert "d needs a number" in p.message.text and p.boxes["d"].value == 128
    assert v.settings.cost is cost
    for number in CHAPTER_NUMBERS:
        assert number in p.readout.text
    p.boxes["d"].value = 64
    assert p.message.text == ""


# --- the served page in Chromium ---------------------------------------------------


def test_served_explorers_in_chromium(page, artifacts, tmp_path):
    from tests.conftest import CONSOLE_PROBLEMS, serve

    log = tmp_path / "panel.log"
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type in CONSOLE_PROBLEMS else None)
    page.set_viewport_size({"width": 1440, "height": 1000})
    with serve("app/main.py", "--warm", log=log) as base:
        page.goto(f"{base}/main")
        # the two explorers are built when their tab is first opened
        page.locator(".bk-tab", has_text="Why ÷√d").click()
        readout = page.locator(".saturation-readout")
        readout.wait_for(timeout=30000)
        page.wait_for_selector("text=Why divide by √d?")
        assert "d = 128" in readout.inner_text()
        page.wait_for_timeout(500)
        page.screenshot(path=str(artifacts / "saturation.png"), full_page=True)

        page.get_by_role("button", name="16", exact=True).click()
        page.wait_for_function(
            "() => { const find = (root) => { for (const el of root.querySelectorAll('*')) {"
            " if (el.classList && el.classList.contains('saturation-readout')) return el;"
            " if (el.shadowRoot) { const f = find(el.shadowRoot); if (f) return f; } } return null; };"
            " const el = find(document); return el && el.innerText.includes('d = 16'); }",
            timeout=15000,
        )
        assert "d = 128" not in readout.inner_text()

        page.locator(".bk-tab", has_text="Long-context cost").click()
        cost = page.locator(".cost-readout")
        cost.wait_for(state="visible", timeout=15000)
        text = cost.inner_text()
        for number in CHAPTER_NUMBERS:
            assert number in text
        page.wait_for_timeout(500)
        page.screenshot(path=str(artifacts / "cost.png"), full_page=True)

        # A quick back-and-forth across the tabs, faster than the server answers: the tab left open still
        # shows its explorer (Panel's dynamic tabs could leave it blank, holding a spacer).
        for title in ("Going further", "Why ÷√d", "Going further", "Long-context cost", "Why ÷√d") * 2:
            page.locator(".bk-tab", has_text=title).click()
        readout.wait_for(state="visible", timeout=15000)
        assert "d = 16" in readout.inner_text()
    assert errors == []
    assert "Traceback" not in log.read_text()


def test_the_three_states_refuse_bad_input_the_same_way():
    from widgets.refusal import Refusing
    from widgets.state import HeadState

    for state, field in ((HeadState(), "x_scale"), (CostSettings(), "T"), (SaturationSettings(), "T")):
        assert isinstance(state, Refusing)
        before = {name: getattr(state, name) for name in (field, "message")}
        assert not state.apply(**{field: float("nan")})
        assert state.message.startswith(field) and getattr(state, field) == before[field]
        assert message_html(state.message) == f'<div class="alert">{state.message}</div>'
        assert state.apply(**{field: before[field]}) and state.message == ""
    cost = CostSettings()
    assert not cost.refuse_empty("element_bytes")
    assert cost.message == "element_bytes needs a number; kept 2.0."
