"""The served page: the explorer's parts placed in a template, one document root per part.

`app/main.py` serves it for every student; `bench/app_t64.py` serves the same page on 64 tokens. A change
to the text of one part re-lays out only that part's root, and the template also loads
static/bokeh_seam.js (the one seam to BokehJS's internals: its speed-ups, and one property change in
flight) and static/a11y.js (control names, the figures' tables, focus rings; it takes its number format
from static/attention.js, loaded for that).
"""

import json
from pathlib import Path

import panel as pn
from bokeh.models import CustomJS
from panel.io.resources import _env as PANEL_TEMPLATES

from app.html_json import json_script
from widgets.a11y import FIGURES_SCRIPT, figures_declared
from widgets.cost_view import CostView
from widgets.explorer import HeadExplorer
from widgets.going_further import COST_TITLE, LAB_TITLE, MORE_INTRO, SATURATION_TITLE, TAB_TITLE, TILES_TITLE
from widgets.lab_view import LabView
from widgets.logic_config import logic_config
from widgets.page import VIEW, ref
from widgets.saturation_view import SaturationView
from widgets.state import HeadState
from widgets.tiles_view import TilesView

ROOT = Path(__file__).resolve().parents[1]

TEMPLATE = (
    """
{% extends base %}
{% block title %}One attention head{% endblock %}
{% block postamble %}<style>"""
    + (ROOT / "static" / "page.css").read_text()
    + (ROOT / "static" / "a11y.css").read_text()
    + """</style><script>"""
    + (ROOT / "static" / "bokeh_seam.js").read_text()  # the one seam to BokehJS's internals
    + """</script><script>"""
    + (ROOT / "static" / "pyformat.js").read_text()  # the page's one number formatter and HTML escaper
    + "</script><script>"
    + (ROOT / "static" / "attention.js").read_text()  # its number format, for static/a11y.js's tables
    + "</script><script>"
    + (ROOT / "static" / "lessons.js").read_text()  # the walk and the questions, which explorer.js runs
    + "</script><script>"
    + (ROOT / "static" / "explorer.js").read_text()  # the page draws a student's own moves: follow_in_browser
    + "</script><script>"
    + (ROOT / "static" / "lesson_page.js").read_text()  # the lesson's panel, which explorer_page.js draws
    + "</script><script>"
    + (ROOT / "static" / "explorer_page.js").read_text()
    + """</script><script>"""
    + (ROOT / "static" / "a11y.js").read_text()
    + "</script><script>"
    + (ROOT / "static" / "connection_check.js").read_text()  # issue 15: never a blank page
    + "</script><script>"
    + (ROOT / "static" / "rejoin.js").read_text()  # issue 25: a page that loses its server comes back
    + "</script>"
    + json_script(figures_declared(), id=FIGURES_SCRIPT)  # which figures static/a11y.js gives a table
    + """{% endblock %}
{% block contents %}
<section class="area-class" aria-label="Class" aria-live="polite">{{ embed(roots.classroom) }}</section>
<main class="explorer">
  <header>
    <h1>One attention head</h1>
    <p>Drag a token's vector, pick the query token, and watch how it divides its attention among the
    tokens and where its output lands. Every number is computed live from the chapter's formulas.</p>
  </header>
  <section class="area-controls" aria-label="Controls">{{ embed(roots.controls) }}</section>
  <section class="area-top" aria-label="Weights and the blend">{{ embed(roots.top) }}</section>
  <section class="area-readout" aria-label="The steps">{{ embed(roots.lesson) }}
    {{ embed(roots.readout) }}</section>
  <section class="area-bottom" aria-label="Scores and projections">{{ embed(roots.bottom) }}
    {{ embed(roots.editor) }}</section>
  <section class="area-more" aria-label="Going further">{{ embed(roots.more) }}</section>
</main>
{{ embed(roots.location) }}{{ embed(roots["head-channel"]) }}{{ embed(roots["a11y-names"]) }}
{% endblock %}
"""
)
# Compiled once per process: compiling this text (its inline CSS and scripts) for every session was a tenth
# of the server's work while a class arrived (py-spy).
COMPILED = PANEL_TEMPLATES.from_string(TEMPLATE)


def going_further(state: HeadState | None = None) -> pn.Tabs:
    """The further explorers, each built the first time its tab is opened, then kept; the tiles view reads
    `state`, the explorer's head.

    Nothing of them is made or drawn before that: with their figures on the
    page, every slider move of the head explorer took ~30 ms more browser time
    (measured), and every session paid for their Bokeh models. Panel's own
    `dynamic=True` was not used: it swaps a tab's contents for a spacer each
    time another tab opens, and a quick back-and-forth could leave the open tab
    holding the spacer, blank (seen in CI; bokeh/bokeh#13372 reports the same).
    """
    tiles: list[TilesView] = []  # the tiles view follows `state` while its tab is open

    def make_tiles() -> TilesView:
        tiles.append(TilesView(state=state) if state is not None else TilesView())
        return tiles[0]

    builders = {1: SaturationView, 2: CostView, 3: make_tiles, 4: LabView}
    tabs = pn.Tabs(
        (TAB_TITLE, pn.pane.Markdown(MORE_INTRO, sizing_mode="stretch_width")),
        *(
            (title, pn.pane.Markdown(f"Opening {title}…"))
            for title in (SATURATION_TITLE, COST_TITLE, TILES_TITLE, LAB_TITLE)
        ),
    )

    def build(event) -> None:
        make = builders.pop(event.new, None)
        if make is not None:
            tabs[event.new] = (tabs._names[event.new], make())
        for view in tiles:
            view.showing = event.new == 3

    tabs.param.watch(build, "active")
    return tabs


class ServedTemplate(pn.Template):
    """Panel's Template, without the text that shows it in a notebook.

    `Template.add_panel` rewrites that text (the repr of every part so far) after each part it adds: a
    sixth of a session's page building, for text a served page never shows.
    """

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._render_items)})"


def explorer_page(explorer: HeadExplorer) -> ServedTemplate:
    """The page of `explorer` without its classroom line: its parts in the template, and the further
    explorers. Needs no session, so app/pool.py builds it ahead."""
    page = ServedTemplate(COMPILED, location=True)  # the Location root keeps the URL in step
    for name, part in explorer.areas().items():
        page.add_panel(name, part)
    page.add_panel("more", going_further(explorer.state))
    return page


def with_classroom(page: ServedTemplate, classroom=None) -> ServedTemplate:
    """`page` with `classroom` above the explorer (the student's line about the teacher's sends, or the
    teacher's desk; an empty root without one)."""
    page.add_panel("classroom", classroom if classroom is not None else pn.Spacer(height=0, margin=0))
    return page


def page_for(explorer: HeadExplorer, classroom=None) -> ServedTemplate:
    """The whole page of `explorer`, `classroom` above it."""
    return with_classroom(explorer_page(explorer), classroom)


def follow_in_browser(doc, explorer: HeadExplorer) -> None:
    """Once the page's views are made, static/explorer_page.js `follow` draws the student's own moves (the
    token sliders, the query, the switches) in the browser with the export's logic, so a move shows in the
    next frame however busy the server is; the server's answer, which comes after, has the same numbers."""
    controls = explorer.page.controls
    config = {
        **logic_config(explorer.state, presets={}),  # presets stay the server's
        "view": VIEW,
        "models": {
            **explorer.page.figure_models(),
            "channel": ref(explorer.channel),
            "query": ref(controls.query),
            "switches": {name: ref(widget) for name, widget in controls.switches.items()},
        },
    }
    doc.js_on_event(
        "document_ready",
        CustomJS(
            args={"config": json.dumps(config, allow_nan=False)},
            # (static/explorer_page.js; absent where Bokeh's server_document embeds the page without our
            # template: there the server draws every move)
            code="if (window.HeadExplorerPage) window.HeadExplorerPage.follow(cb_obj, JSON.parse(config));",
        ),
    )


def rejoin_in_browser(doc) -> None:
    """static/rejoin.js looks after the page's connection once its views are made: it says when the server
    is lost and when it is back, and opens a new session with the page's own state."""
    doc.js_on_event("document_ready", CustomJS(code="if (window.Rejoin) window.Rejoin.watch(cb_obj);"))


def serve_page(explorer: HeadExplorer, title: str = "One attention head", classroom=None, page=None) -> None:
    """Make the page of `explorer` this session's document; `page`: its explorer_page, built ahead."""
    page = with_classroom(page if page is not None else explorer_page(explorer), classroom)
    # One model-graph walk for the whole page: otherwise Bokeh re-walks every
    # model of the document after each root the template adds (~0.7 s a session).
    doc = pn.state.curdoc
    with doc.models.freeze():
        page.servable(title=title)
        # declared models of their own, not laid out (the template embeds each, an empty element)
        doc.add_root(explorer.channel)  # widgets/channel.py
        doc.add_root(explorer.page.a11y)  # the controls' names (widgets/a11y.py)
    follow_in_browser(doc, explorer)
    rejoin_in_browser(doc)
