"""The two further explorers in the static export, opened from file:// with the network blocked.

Each tab is opened and driven as a reader would (a tab click, a width
button, a slider moved from the keyboard, a number typed into a box, a preset
picked); after each change the figures' sources hold what Python's view data
holds for the same settings (numbers to 1e-9, text exactly), and a refused
input shows the settings' own message.  Screenshots of both tabs go to
test-artifacts/.
"""

from __future__ import annotations

import json
import math
import time

import pytest

from tests.test_explorer_parity import assert_same
from tests.test_export import Offline
from widgets import cost_viewdata, saturation_viewdata
from widgets.cost_page import T_STOPS
from widgets.cost_state import CostSettings
from widgets.saturation_state import SaturationSettings


@pytest.fixture(scope="module")
def exported(export_copy):
    return export_copy / "head.html"


# Each tab's page is a Bokeh document of its own, embedded when the tab is first opened.
FIND = "const find = (name) => Bokeh.documents.map(d => d.get_model_by_name(name)).find(m => m);"


def source(page, name: str) -> dict:
    """A ColumnDataSource's columns as plain lists (NaN comes back as null)."""
    return page.evaluate(
        "(name) => { " + FIND + " const d = find(name).data;"
        " const e = d instanceof Map ? [...d.entries()] : Object.entries(d);"
        " return Object.fromEntries(e.map(([k, v]) => [k, Array.from(v)])); }",
        name,
    )


def text_of(page, name: str) -> str:
    return page.evaluate("(name) => { " + FIND + " return find(name).text; }", name)


def wait_for(page, name: str, column: str, value, timeout: float = 20.0) -> dict:
    """Poll until source `name`'s first `column` entry is `value`; return its columns."""
    deadline = time.monotonic() + timeout
    while True:
        data = source(page, name)
        if data[column] and math.isclose(data[column][0], value, rel_tol=1e-12):
            return data
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}.{column}[0] is {data[column][:1]}, waited for {value}")
        time.sleep(0.05)


def wait_for_text(page, name: str, part: str) -> None:
    page.wait_for_function(
        "([name, part]) => { " + FIND + " const m = find(name); return m && m.text.includes(part); }",
        arg=[name, part],
        timeout=20000,
    )


def assert_saturation_shows(page, s: SaturationSettings) -> None:
    view = saturation_viewdata.view_data(s.curve, s.point, s.worked)
    for name, key in (("saturation-curve", "curve"), ("saturation-reference", "reference")):
        assert_same(view[key], source(page, name), name)
    assert_same(view["marker"], source(page, "saturation-marker"), "marker")
    assert text_of(page, "saturation-readout") == view["readout"]


def assert_cost_shows(page, s: CostSettings) -> None:
    view = cost_viewdata.view_data(s.cost, s.gpu_gb, s.tile)
    assert_same(view["lines"], source(page, "cost-lines"), "lines")
    assert_same(view["points"], source(page, "cost-points"), "points")
    assert text_of(page, "cost-readout") == view["readout"]


def number_box(page, label: str):
    return page.locator(".bk-input-group", has=page.get_by_text(label, exact=True)).locator("input")


def test_both_explorer_tabs_work_offline(exported, context, page, artifacts):
    net = Offline(context, page)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(exported.as_uri())
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=20000)

    # --- Why ÷√d -----------------------------------------------------------------------
    assert page.evaluate("() => Bokeh.documents.length") == 1  # the tabs' pages wait until opened
    page.get_by_role("tab", name="Why ÷√d").click()
    page.get_by_role("button", name="16", exact=True).click()
    wait_for(page, "saturation-marker", "d", 16)
    assert_saturation_shows(page, SaturationSettings(d=16))

    seed = number_box(page, "seed")
    seed.fill("3")
    seed.press("Enter")
    wait_for_text(page, "saturation-readout", "seed 3;")
    assert_saturation_shows(page, SaturationSettings(d=16, seed=3))

    keys = number_box(page, "keys per query T (2–1024)")
    keys.fill("5000")
    keys.press("Enter")
    refused = SaturationSettings(d=16, seed=3)
    assert not refused.apply(T=5000)
    wait_for_text(page, "saturation-message", json.dumps(refused.message)[1:-1])
    assert keys.input_value() == "64"  # the box shows the kept value again
    assert_saturation_shows(page, SaturationSettings(d=16, seed=3))
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / "export-saturation.png"), full_page=True)

    # --- Long-context cost ----------------------------------------------------------------
    page.get_by_role("tab", name="Long-context cost").click()
    page.wait_for_selector("text=What a long context costs")
    for number in ("1.6 × 10¹⁰", "≈ 33 GB", "≈ 1 TB"):
        assert number in text_of(page, "cost-readout")
    handle = page.locator(".bk-Slider", has_text="context T").locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")  # 128,000 → 256,000 tokens
    assert T_STOPS[T_STOPS.index(128_000) + 1] == 256_000
    wait_for_text(page, "cost-readout", "T = 256,000 tokens")
    assert_cost_shows(page, CostSettings(T=256_000))

    page.locator(".bk-Select", has_text="model").locator("select").select_option("Llama 3.1 405B (128k)")
    wait_for_text(page, "cost-readout", "T ≈ 18,432")
    assert_cost_shows(page, CostSettings(preset="Llama 3.1 405B (128k)"))

    kv = number_box(page, "K/V heads")
    kv.fill("7")
    kv.press("Enter")
    refused = CostSettings(preset="Llama 3.1 405B (128k)")
    assert not refused.apply(kv_heads=7)
    wait_for_text(page, "cost-message", refused.message)
    assert kv.input_value() == "8"
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / "export-cost.png"), full_page=True)
    assert page.evaluate("() => Bokeh.documents.length") == 3
    page.get_by_role("tab", name="Why ÷√d").click()  # back again: the same page, as it was left
    wait_for_text(page, "saturation-readout", "seed 3;")
    assert page.evaluate("() => Bokeh.documents.length") == 3
    net.check()
