"""The further explorers ("Why ÷√d", "Long-context cost", "In tiles") as tabs of the static export.

    tabs = explorer_tabs()
    tabs.root      # a Bokeh Div: the tab strip and panels; add it to the exported document
    tabs.area      # ("more", label): the page area (static/page.css) it goes in
    tabs.scripts   # the <script> elements the page needs after the document: the tabs' documents as JSON,
                   # then static/'s programs, in order

The tabs hold the very pages the served app shows (widgets/saturation_page.py,
widgets/cost_page.py, built from the same view data), wired with CustomJS
instead of Python callbacks.  Each page is a Bokeh document of its own, kept
in the file as JSON (ITEMS) and embedded when its tab is first opened.  Each callback
hands the event to static/explorer_tabs.js, which runs the pure ports
(static/saturation.js, static/cost.js, both on static/pyformat.js and
static/checks.js) and writes their view data into the same sources, ranges,
spans and Divs the served views write.  Each port gets its limits and
presets as one JSON configuration made by Python (`js_config` in
widgets/cost_state.py and widgets/saturation_state.py), so no fact is
declared twice.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

from bokeh.embed import json_item
from bokeh.models import CustomJS, Div, InlineStyleSheet

from app.html_json import json_script, script_element
from app.packing import UNPACK_JS, pack
from widgets import cost_viewdata, saturation_viewdata
from widgets.cost_page import T_STOPS, CostPage
from widgets.cost_state import CostSettings
from widgets.cost_state import js_config as cost_config
from widgets.going_further import COST_TITLE, MORE_INTRO, SATURATION_TITLE, TAB_TITLE, TILES_TITLE
from widgets.saturation_page import SaturationPage
from widgets.saturation_state import SaturationSettings
from widgets.saturation_state import js_config as saturation_config
from widgets.state import HeadState
from widgets.style import text_panel
from widgets.tiles_page import TilesPage
from widgets.tiles_state import TilesSettings
from widgets.tiles_state import js_config as tiles_config
from widgets.tiles_viewdata import view_data as tiles_view_data

STATIC = Path(__file__).resolve().parents[1] / "static"
# Loaded in this order: the ports need PyFormat (static/pyformat.js, loaded with the head's scripts by
# app/export.py head_scripts), InputChecks and SeededRandom, the binding needs the ports.
SCRIPTS = ("checks.js", "cost.js", "rng.js", "saturation.js", "tiles.js", UNPACK_JS, "explorer_tabs.js")
AREA = ("more", TAB_TITLE)
ITEMS = "explorer-tabs-items"  # the id of the JSON holding each tab's document (the tab strip names it)


@dataclass(frozen=True)
class ExplorerTabs:
    root: Div
    area: tuple[str, str]
    scripts: str
    saturation: SaturationPage
    cost: CostPage
    tiles: TilesPage


def intro_html() -> str:
    """The first tab's text, as the served page's (widgets/going_further.py), its **bold** as <b>."""
    return "<p>" + re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", MORE_INTRO) + "</p>"


def _callback(handler: str, kind: str, models: dict) -> CustomJS:
    """A control's callback: static/explorer_tabs.js's `handler` (cost, saturation, tiles) with the kind of
    control and the page's models."""
    args = {"M": models, "handler": handler, "kind": kind}
    return CustomJS(args=args, code="window.ExplorerTabs[handler](kind, cb_obj, M);")


def cost_page(settings: CostSettings | None = None) -> CostPage:
    """The served cost page, its controls wired to static/explorer_tabs.js."""
    s = settings or CostSettings()
    page = CostPage(cost_viewdata.view_data(s.cost, s.gpu_gb, s.tile), s.inputs(), s.preset)
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
    return page


def saturation_page(settings: SaturationSettings | None = None) -> SaturationPage:
    """The served saturation page, its controls wired to static/explorer_tabs.js."""
    s = settings or SaturationSettings()
    page = SaturationPage(saturation_viewdata.view_data(s.curve, s.point, s.worked), s.inputs())
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
        "row": page.row,
        "message": page.message,
        "d": page.d_buttons,
        "boxes": dict(page.boxes),
    }
    page.d_buttons.js_on_change("active", _callback("saturation", "d", models))
    for name, box in page.boxes.items():
        box.js_on_change("value", _callback("saturation", name, models))
    return page


def tiles_page() -> TilesPage:
    """The served tiles page, its controls wired to static/explorer_tabs.js, which draws it from the head
    the page's explorer holds (static/explorer_page.js) once its tab opens, and after each change."""
    state, settings = HeadState(), TilesSettings()
    data = tiles_view_data(state.head, state.query, state.labels, settings.size, settings.step)
    page = TilesPage(data)
    models = {
        "key": page.size,
        "config": json.dumps(tiles_config(settings)),
        "scores": page.scores,
        "weights": page.weights,
        "tiles": page.tiles,
        "current": page.current,
        "mappers": [page.score_mapper, page.score_ink, page.weight_mapper, page.weight_ink],
        "numbers": page.numbers,
        "figure": page.figure,
        "x_range": page.figure.x_range,
        "axis": page.axis,
        "size": page.size,
        "next": page.next,
        "again": page.again,
        "readout": page.readout,
        "table": page.table,
    }
    page.size.js_on_change("value", _callback("tiles", "size", models))
    page.next.js_on_event("button_click", _callback("tiles", "next", models))
    page.again.js_on_event("button_click", _callback("tiles", "again", models))
    page.layout.tags = [models]  # the tab's opening finds them here (static/explorer_tabs.js open)
    return page


TABS_CSS = """
.more-tabs { display: flex; gap: 2px; border-bottom: 1px solid #ccc; margin: 0 0 8px 0; }
.more-tabs button { font: inherit; font-size: 14px; padding: 6px 12px; border: 1px solid #ccc;
  border-bottom: none; border-radius: 4px 4px 0 0; background: #f4f4f4; color: #333; cursor: pointer; }
.more-tabs button[aria-selected="true"] { background: #fff; font-weight: 600; margin-bottom: -1px;
  border-bottom: 1px solid #fff; }
.more-panel[hidden] { display: none; }
/* a page wider than a phone (its figures are 470 and 620 px) scrolls inside its panel, not the page:
   the Div's content box (inline-block, set by BokehJS on the element) takes the Div's width */
.bk-clearfix { display: block !important; }
.more-panel { overflow-x: auto; }
"""


def tabs_html(tabs: list[tuple[str, str, str]]) -> str:
    """A tab strip and one panel per tab: (name, title, the panel's HTML); the first is open. A click on a
    tab opens it (static/explorer_tabs.js), with its document from the JSON the strip names (ITEMS)."""
    buttons = "".join(
        f'<button type="button" role="tab" data-tab="{name}" aria-selected="{str(k == 0).lower()}">'
        f"{html.escape(title)}</button>"
        for k, (name, title, _) in enumerate(tabs)
    )
    panels = "".join(
        f'<div class="more-panel" role="tabpanel" data-tab="{name}"{"" if k == 0 else " hidden"}>{body}</div>'
        for k, (name, _, body) in enumerate(tabs)
    )
    return f'<div class="more-tabs" role="tablist" data-items="{ITEMS}">{buttons}</div>{panels}'


def explorer_tabs() -> ExplorerTabs:
    """The tabs, on the served app's defaults, wired for the browser.

    Each page is its own Bokeh document, made (from JSON in the file) only when its tab is first
    opened, as the served app builds them: with their ~300 models in the page's document, BokehJS
    took longer to make the head interactive, tabs open or not.
    """
    saturation, cost, tiles = saturation_page(), cost_page(), tiles_page()
    items = {
        # packed (app/packing.py): read only when a tab first opens, and a tenth of the size as JSON
        "saturation": pack(json.dumps(json_item(saturation.layout))),
        "cost": pack(json.dumps(json_item(cost.layout))),
        "tiles": pack(json.dumps(json_item(tiles.layout))),
    }
    body = tabs_html(
        [
            (AREA[0], AREA[1], intro_html()),
            ("saturation", SATURATION_TITLE, ""),
            ("cost", COST_TITLE, ""),
            ("tiles", TILES_TITLE, ""),
        ]
    )
    root = text_panel(body, name=AREA[0], sizing_mode="stretch_width")  # the template finds roots by name
    root.stylesheets = [*root.stylesheets, InlineStyleSheet(css=TABS_CSS)]
    scripts = "\n".join(
        [json_script(items, id=ITEMS), *(script_element((STATIC / name).read_text()) for name in SCRIPTS)]
    )
    return ExplorerTabs(root=root, area=AREA, scripts=scripts, saturation=saturation, cost=cost, tiles=tiles)
