"""The served page: the explorer's parts placed in a template, one document root per part.

`app/main.py` serves it for every student; `bench/app_t64.py` serves the same page on 64 tokens. A change
to the text of one part re-lays out only that part's root, and the template also loads
static/bokeh_patch.js.
"""

from pathlib import Path

import panel as pn

from widgets.cost_view import CostView
from widgets.explorer import HeadExplorer
from widgets.saturation_view import SaturationView

ROOT = Path(__file__).resolve().parents[1]

TEMPLATE = (
    """
{% extends base %}
{% block title %}One attention head{% endblock %}
{% block postamble %}<style>"""
    + (ROOT / "static" / "page.css").read_text()
    + """</style><script>"""
    + (ROOT / "static" / "bokeh_patch.js").read_text()
    + """</script>{% endblock %}
{% block contents %}
<main class="explorer">
  <header>
    <h1>One attention head</h1>
    <p>Drag a token's vector, pick the query token, and watch how it divides its attention among the
    tokens and where its output lands. Every number is computed live from the chapter's formulas.</p>
  </header>
  <section class="area-controls" aria-label="Controls">{{ embed(roots.controls) }}</section>
  <section class="area-top" aria-label="Weights and the blend">{{ embed(roots.top) }}</section>
  <section class="area-readout" aria-label="The steps">{{ embed(roots.readout) }}</section>
  <section class="area-bottom" aria-label="Scores and projections">{{ embed(roots.bottom) }}
    {{ embed(roots.editor) }}</section>
  <section class="area-more" aria-label="Going further">{{ embed(roots.more) }}</section>
</main>
{{ embed(roots.location) }}
{% endblock %}
"""
)


MORE_INTRO = (
    "Two more explorers, one tab each: **Why ÷√d** shows how raw dot products spread out as the head "
    "width d grows, and what dividing by √d does to the weights; **Long-context cost** works out how the "
    "scores matrix grows with the context length."
)


def going_further():
    """Two further explorers, each built the first time its tab is opened.

    Nothing of them is made or drawn before that: with their figures on the
    page, every slider move of the head explorer took ~30 ms more browser time
    (measured), and every session paid for their Bokeh models.
    """
    return pn.Tabs(
        ("Going further", pn.pane.Markdown(MORE_INTRO, sizing_mode="stretch_width")),
        ("Why ÷√d", pn.param.ParamFunction(lambda: SaturationView(), lazy=True)),
        ("Long-context cost", pn.param.ParamFunction(lambda: CostView(), lazy=True)),
        dynamic=True,  # only the open tab is rendered
    )


class ServedTemplate(pn.Template):
    """Panel's Template, without the text that shows it in a notebook.

    `Template.add_panel` rewrites that text (the repr of every part so far) after each part it adds: a
    sixth of a session's page building, for text a served page never shows.
    """

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._render_items)})"


def page_for(explorer: HeadExplorer) -> ServedTemplate:
    """The page of `explorer`: its parts in the template, and the further explorers."""
    page = ServedTemplate(TEMPLATE, location=True)  # the Location root keeps the URL in step
    for name, part in explorer.areas().items():
        page.add_panel(name, part)
    page.add_panel("more", going_further())
    return page


def serve_page(explorer: HeadExplorer, title: str = "One attention head") -> None:
    """Make the page of `explorer` this session's document."""
    page = page_for(explorer)
    # One model-graph walk for the whole page: otherwise Bokeh re-walks every
    # model of the document after each root the template adds (~0.7 s a session).
    with pn.state.curdoc.models.freeze():
        page.servable(title=title)
