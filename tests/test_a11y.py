"""Accessibility without a browser: every control has a name, the tables' data, contrast, JS parity.

The browser half (axe-core, the keyboard, the accessibility tree) is tests/test_a11y_browser.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from bokeh.models import Markup, Widget

from core.attention import AttentionError, attend
from core.trace import fmt
from tests.node_batch import NODE, run_node
from tests.test_parity import large_cases, preset_cases, random_case
from widgets import cost_viewdata, saturation_viewdata
from widgets.a11y import (
    ACCESSIBLE_NAMES,
    FIGURE_TABLES,
    GRAPHICS_CONTRAST,
    MASKED,
    SERIES_COLUMNS,
    TEXT_CONTRAST,
    accessible_names,
    bars_table,
    blend_table,
    contrast,
    figure_sources,
    figure_tables,
    series_table,
)
from widgets.cost_state import CostSettings
from widgets.explorer import HeadExplorer
from widgets.matrix_plot import (
    _INK_SCORE,
    _INK_WEIGHT,
    MASKED_GREY,
    MASKED_INK,
    OUTLINE_COLOUR,
    OUTLINE_EDGE,
    SCORE_PALETTE,
    WEIGHT_PALETTE,
)
from widgets.saturation_state import SaturationSettings
from widgets.state import HeadState
from widgets.viewdata import convex_hull, view_data

DRIVER = "tests/a11y_driver.js"


def named(model, names: dict) -> bool:
    """Whether a screen reader gets a name for this widget: declared, or its own title or text."""
    own = [getattr(model, attr, None) for attr in ("title", "label", "labels")]
    has_text = any(isinstance(v, str) and v.strip() or isinstance(v, list) and v for v in own)
    return model.name in names or has_text


def test_every_control_of_the_served_page_has_a_name():
    explorer = HeadExplorer(state=HeadState())
    s = explorer.state
    names = accessible_names(s.labels, s.head.C, s.head.d)
    models = set()
    for root in [*explorer.page.roots.values(), explorer.editor.layout]:
        models |= root.references()
    widgets = [m for m in models if isinstance(m, Widget) and not isinstance(m, Markup)]
    assert len(widgets) > 40  # 12 sliders, 18 grid boxes, pickers, toggles, buttons
    unnamed = sorted(str(m.name) for m in widgets if not named(m, names))
    assert unnamed == [], f"controls with no name: add them to widgets/a11y.py ACCESSIBLE_NAMES: {unnamed}"
    assert names["x-3-0"] == "it, component 0"
    assert names["W_Q-1-0"] == "W_Q row 1 column 0"
    assert explorer.page.a11y.names["x-3-1"] == "it, component 1"  # what the browser gets


def test_names_follow_new_tokens_in_the_served_page():
    explorer = HeadExplorer(state=HeadState())
    assert explorer.state.set_labels("A, cat, sat, it")
    assert explorer.page.a11y.names["x-0-2"] == "A, component 2"


def test_chapter_tables_say_the_query_and_the_masked_cells_in_words():
    s = HeadState()
    tables = figure_tables(view_data(s.head, s.query, s.labels, s.dims))
    w = tables["weights"]
    assert w["columns"] == ["The", "cat", "sat", "it"]
    assert w["rows"] == ["The", "cat", "sat", "it (the query)"]
    assert w["body"][3] == ["0.13", "0.56", "0.14", "0.18"]
    assert w["body"][0] == ["1.00", MASKED, MASKED, MASKED]
    assert "the query is 'it'" in w["note"] and "6 cells are masked" in w["note"]
    assert tables["qkv"]["columns"] == ["Q[0]", "Q[1]", "K[0]", "K[1]", "V[0]", "V[1]"]
    assert tables["qkv"]["body"][3] == ["0.60", "0.20", "1.30", "0.00", "0.20", "0.30"]
    b = tables["blend"]
    assert b["body"][1] == ["0.56", "0.00", "1.00"]
    assert b["note"] == (
        "Output of it: [0.23, 0.68]. In the plot (value[0], value[1]) it lies at (0.23, 0.68), inside the "
        "values' hull; the largest weight, 0.56, is on the value of 'cat'."
    )


def test_the_blend_says_whether_the_output_left_the_values_hull():
    """Raw scores as weights need not sum to 1, so the output can leave the hull; the text says which."""
    vx, vy = [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]
    hx, hy = convex_hull(vx, vy)
    values = {"x": vx, "y": vy, "label": ["a", "b", "c"], "weight": [0.0, 1.0, 1.0]}
    axes = {"x": "value[0]", "y": "value[1]"}
    for (ox, oy), where in (((1.0, 1.0), "outside"), ((0.5, 0.5), "inside"), ((0.0, 0.0), "inside")):
        output = {"x": [ox], "y": [oy], "label": ["output of c"], "text": ["[…]"]}
        assert f", {where} the values' hull" in blend_table(values, output, {"x": hx, "y": hy}, axes)["note"]


def test_one_dimensional_blend_reads_as_a_line():
    values = {"x": [1.0, 0.0], "y": [0.0, 0.0], "label": ["a", "b"], "weight": [0.25, 0.75]}
    output = {"x": [0.25], "y": [0.0], "label": ["output of b"], "text": ["[0.25]"]}
    table = blend_table(values, output, {"x": [0.0, 1.0], "y": [0.0, 0.0]}, {"x": "value[0]", "y": "(d = 1)"})
    assert table["columns"] == ["weight", "value[0]"]
    assert "lies at 0.25, inside" in table["note"] and "0.75, is on the value of 'b'" in table["note"]


def test_cell_numbers_and_lines_meet_wcag_contrast():
    """Each number in a cell, black or white by the cell's colour, reads at 4.5 : 1 or more; the query's frame
    stands out at 3 : 1 against light cells and dark ones."""
    for palette, ink in ((WEIGHT_PALETTE, _INK_WEIGHT), (SCORE_PALETTE, _INK_SCORE)):
        assert len(ink) == len(palette)  # the two mappers bin a value the same way
        worst = min(contrast(c, i) for c, i in zip(palette, ink))
        assert worst >= TEXT_CONTRAST, worst
    assert contrast(MASKED_GREY, MASKED_INK) >= TEXT_CONTRAST
    for cell in (WEIGHT_PALETTE[0], WEIGHT_PALETTE[-1], *SCORE_PALETTE, MASKED_GREY):
        assert max(contrast(cell, OUTLINE_EDGE), contrast(cell, OUTLINE_COLOUR)) >= GRAPHICS_CONTRAST, cell
    assert contrast(OUTLINE_EDGE, OUTLINE_COLOUR) >= GRAPHICS_CONTRAST


def series_sources():
    """(figure name, its source's columns) for the further explorers' figures, on a few settings."""
    out = []
    for d, T in ((64, 64), (8, 2), (512, 200)):
        data = saturation_viewdata.view_data(*_saturation(d, T))
        out += [(name, data["curve"]) for name in SERIES_COLUMNS if name.startswith("saturation")]
    for T in (100, 4096, 1_000_000):
        s = CostSettings(T=T)
        out.append(("cost-figure", cost_viewdata.view_data(s.cost, s.gpu_gb, s.tile)["lines"]))
    return out


def _saturation(d: int, T: int):
    s = SaturationSettings(d=d, T=T)
    return s.curve, s.point, s.worked


def test_the_further_explorers_figures_read_as_tables():
    """Every point of the "Why ÷√d" and cost curves is a row of its table, with the source's numbers."""
    assert {n for n, spec in FIGURE_TABLES.items() if spec[0] == "series"} == set(SERIES_COLUMNS)
    for name, data in series_sources():
        (x, _), *rest = SERIES_COLUMNS[name]
        table = series_table(data, SERIES_COLUMNS[name])
        assert len(table["rows"]) == len(data[x]) and len(table["columns"]) == len(rest)
        for (column, _), j in zip(rest, range(len(rest))):
            want = [v if isinstance(v, str) else fmt(v) for v in data[column]]
            assert [row[j] for row in table["body"]] == want
    spread = series_table(series_sources()[0][1], SERIES_COLUMNS["saturation-spread"])
    assert spread["rows"][:3] == ["2", "4", "8"]


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_js_tables_and_names_match_python():
    """static/a11y.js builds the same tables from the figures' sources as widgets/a11y.py, text exactly, and
    the same control names for new tokens or widths."""
    rng = np.random.default_rng(16)
    cases = [random_case(rng, k) for k in range(100)] + preset_cases() + large_cases(rng)
    batch, expected = [], []
    for c in cases:
        try:
            head = attend(c["X"], c["W_Q"], c["W_K"], c["W_V"], **c["options"])
            data = view_data(head, c["i"], c["labels"], c.get("dims", (0, 1)))
        except AttentionError:
            continue
        b = data["blend"]
        batch.append(
            {"cells": figure_sources(data), "blend": [b["values"], b["output"], b["hull"], b["axes"]]}
        )
        expected.append(figure_tables(data))
    assert len(batch) > 90
    shapes = [
        (["The", "cat", "sat", "it"], 3, 2),
        (["<b>", "a & b", "é"], 1, 6),
        ([f"t{k}" for k in range(16)], 6, 1),
    ]
    names = [[ACCESSIBLE_NAMES, labels, C, d] for labels, C, d in shapes]
    bars = [
        {"key": [], "students": []},
        {"key": ["cat"], "students": [1]},
        {"key": ["<b>", "it"], "students": [3, 0]},
    ]
    series = [[data, SERIES_COLUMNS[name]] for name, data in series_sources()]
    out = run_node(DRIVER, {"tables": batch, "names": names, "bars": bars, "series": series}, timeout=120)
    assert out["series"] == [series_table(data, columns) for data, columns in series]
    assert out["names"] == [accessible_names(labels, C, d) for labels, C, d in shapes]
    assert out["bars"] == [bars_table(b) for b in bars]
    got = out["tables"]
    bad = [(k, name) for k, (py, js) in enumerate(zip(expected, got)) for name in py if py[name] != js[name]]
    assert bad == [], (
        f"{len(bad)} tables differ, first {bad[0]}: {expected[bad[0][0]][bad[0][1]]} vs "
        f"{got[bad[0][0]][bad[0][1]]}"
    )
    outside = sum("outside" in t["blend"]["note"] for t in expected)
    assert 0 < outside < len(expected)  # both sides of the hull test were exercised
    assert any(not math.isfinite(v) for c in batch for v in c["cells"]["weights"][0]["value"])
