"""The two further explorers ("Why ÷√d", "Long-context cost") as tabs of the static export.

    tabs = explorer_tabs()
    tabs.root      # a Bokeh Tabs model: add it to the exported document
    tabs.area      # ("more", label): the page area (static/page.css) it goes in
    tabs.scripts   # JavaScript texts to inline before the document, in order

The tabs hold the very pages the served app shows (widgets/saturation_page.py,
widgets/cost_page.py, built from the same view data), wired with CustomJS
instead of Python callbacks.  Each callback hands the event to
static/explorer_tabs.js, which runs the pure ports (static/saturation.js,
static/cost.js, both on static/pyformat.js) and writes their view data into
the same sources, ranges, spans and Divs the served views write.  Each port
gets its limits and presets as one JSON configuration made by Python
(`js_config` in widgets/cost_state.py and widgets/saturation_state.py), so no
fact is declared twice.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from bokeh.layouts import column
from bokeh.models import CustomJS, TabPanel, Tabs

from widgets import cost_viewdata, saturation_viewdata
from widgets.cost_page import T_STOPS, CostPage
from widgets.cost_state import CostSettings
from widgets.cost_state import js_config as cost_config
from widgets.saturation_page import SaturationPage
from widgets.saturation_state import SaturationSettings
from widgets.saturation_state import js_config as saturation_config
from widgets.style import text_panel

STATIC = Path(__file__).resolve().parents[1] / "static"
# Loaded in this order: the ports need PyFormat, the binding needs the ports.
SCRIPTS = ("pyformat.js", "cost.js", "saturation.js", "explorer_tabs.js")
AREA = ("more", "Going further")
SATURATION_TITLE = "Why ÷√d"
COST_TITLE = "Long-context cost"


@dataclass(frozen=True)
class ExplorerTabs:
    root: Tabs
    area: tuple[str, str]
    scripts: tuple[str, ...]
    saturation: SaturationPage
    cost: CostPage


def intro_html() -> str:
    """The first tab's text: the served page's (app/served_page.py MORE_INTRO), its **bold** as <b>."""
    from app.served_page import MORE_INTRO

    return "<p>" + re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", MORE_INTRO) + "</p>"


def _callback(handler: str, kind: str, models: dict) -> CustomJS:
    return CustomJS(args={"M": models}, code=f"window.ExplorerTabs.{handler}({json.dumps(kind)}, cb_obj, M);")


def cost_tab(settings: CostSettings | None = None) -> tuple[CostPage, TabPanel]:
    s = settings or CostSettings()
    page = CostPage(cost_viewdata.view_data(s.cost, s.gpu_gb), s.inputs(), s.preset)
    plot = page.plot
    models = {
        "key": page.preset,
        "config": json.dumps({**cost_config(s), "t_stops": list(T_STOPS)}),
        "lines": plot.lines,
        "points": plot.points,
        "x_range": plot.figure.x_range,
        "y_range": plot.figure.y_range,
        "now": plot.now,
        "now_label": plot.now_label,
        "cross": plot.cross,
        "cross_label": plot.cross_label,
        "mha": plot.mha,
        "mha_item": plot.mha_item,
        "readout": page.readout,
        "message": page.message,
        "preset": page.preset,
        "T_slider": page.T_slider,
        "boxes": dict(page.boxes),
        "gpu": page.gpu_slider,
    }
    page.preset.js_on_change("value", _callback("cost", "preset", models))
    page.T_slider.js_on_change("value", _callback("cost", "T_slider", models))
    page.gpu_slider.js_on_change("value", _callback("cost", "gpu", models))
    for name, box in page.boxes.items():
        box.js_on_change("value", _callback("cost", name, models))
    return page, TabPanel(child=page.layout, title=COST_TITLE)


def saturation_tab(settings: SaturationSettings | None = None) -> tuple[SaturationPage, TabPanel]:
    s = settings or SaturationSettings()
    page = SaturationPage(saturation_viewdata.view_data(s.curve, s.point), s.inputs())
    plots = page.plots
    models = {
        "key": page.d_buttons,
        "config": json.dumps(saturation_config(s, with_curve=True)),
        "curve": plots.curve,
        "reference": plots.reference,
        "marker": plots.marker,
        "entropy_range": plots.entropy.y_range,
        "chosen": list(plots.chosen),
        "readout": page.readout,
        "message": page.message,
        "d": page.d_buttons,
        "boxes": dict(page.boxes),
    }
    page.d_buttons.js_on_change("active", _callback("saturation", "d", models))
    for name, box in page.boxes.items():
        box.js_on_change("value", _callback("saturation", name, models))
    return page, TabPanel(child=page.layout, title=SATURATION_TITLE)


def _opened_on_demand(tabs: Tabs) -> None:
    """Each page drawn only when its tab is first opened, as in the served app.

    BokehJS builds the views of every tab when the page loads, shown or not; with the two pages'
    four figures the whole export took longer to become interactive.  Until its tab is opened, a
    page waits in the document (referenced by the callback) while its tab shows an empty column.
    """
    holders, pages = [], []
    for panel in tabs.tabs[1:]:
        pages.append(panel.child)
        panel.child = column(text_panel("<p>Opening…</p>"), name=f"{panel.child.name}-holder")
        holders.append(panel.child)
    tabs.js_on_change(
        "active",
        CustomJS(
            args={"holders": holders, "pages": pages},
            code="const k = cb_obj.active - 1;"
            " if (k >= 0 && holders[k].children[0] !== pages[k]) holders[k].children = [pages[k]];",
        ),
    )


def explorer_tabs() -> ExplorerTabs:
    """The tabs, on the served app's defaults, wired for the browser."""
    saturation, saturation_panel = saturation_tab()
    cost, cost_panel = cost_tab()
    intro = TabPanel(child=text_panel(intro_html(), name="more-intro", width=900), title=AREA[1])
    root = Tabs(tabs=[intro, saturation_panel, cost_panel], name=AREA[0])  # the template finds roots by name
    _opened_on_demand(root)
    scripts = tuple((STATIC / name).read_text() for name in SCRIPTS)
    return ExplorerTabs(root=root, area=AREA, scripts=scripts, saturation=saturation, cost=cost)
