"""The served explorer: `panel serve app/main.py` opens it at /main, one session per browser tab.

The page is a template with one document root per part (controls, the two
rows of figures, the worked steps, the editor, the two further explorers), so
that a change to the text of one part only re-lays out that part.
"""

import sys
from pathlib import Path

# `panel serve` runs this file by path; make the repo's packages importable wherever it is started from.
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import panel as pn  # noqa: E402

from app.serving import release_memory_when_sessions_close, tune_server  # noqa: E402
from widgets.cost_view import CostView  # noqa: E402
from widgets.explorer import HeadExplorer  # noqa: E402
from widgets.saturation_view import SaturationView  # noqa: E402

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

tune_server()
pn.extension()
pn.state.on_session_destroyed(release_memory_when_sessions_close)

explorer = HeadExplorer(sync_url=True)
page = pn.Template(TEMPLATE, location=True)  # the Location root keeps the URL in step
for name, part in explorer.areas().items():
    page.add_panel(name, part)


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


page.add_panel("more", going_further())

# One model-graph walk for the whole page: otherwise Bokeh re-walks every
# model of the document after each root the template adds (~0.7 s a session).
with pn.state.curdoc.models.freeze():
    page.servable(title="One attention head")
