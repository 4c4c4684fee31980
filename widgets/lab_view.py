"""The training lab in the served page: static/lab.js, the export's own lab, in a Panel JSComponent.

The shipped runs go to the browser once, when the lab's tab is first opened (app/served_page.py builds the
tab lazily); from then on a run or seed switch, a snapshot move or another query is drawn in the browser by
static/lab.js with the JavaScript port of the core (static/attention.js), as in the static export. No
server round trip, no Bokeh figure: the heatmaps are HTML tables, readable by a screen reader as they are.
bench/RESULTS-lab.md has the measurements that chose this over Bokeh figures driven from Python.
"""

from __future__ import annotations

from pathlib import Path

import param
from panel.custom import JSComponent

from widgets.lab_data import lab_json

STATIC = Path(__file__).resolve().parents[1] / "static"

# The three UMD files set their globals (PyFormat, AttentionHead, TrainingLab) when run as this module's code.
RENDER = """
export function render({ model }) {
  const section = document.createElement('section');
  section.className = 'training-lab';
  section.setAttribute('aria-label', 'Training lab');
  TrainingLab.fill(section, JSON.parse(model.lab));
  return section;
}
"""


class LabView(JSComponent):
    """The lab's section, drawn in the browser from `lab` (widgets.lab_data.lab_payload as JSON)."""

    lab = param.String(default="", doc="the shipped runs, the introduction and the findings, as JSON")

    _esm = "\n".join((STATIC / f).read_text() for f in ("pyformat.js", "attention.js", "lab.js")) + RENDER
    # lab.css, and the page's focus ring (static/a11y.css), inside the component's shadow root
    _stylesheets = [(STATIC / "lab.css").read_text(), (STATIC / "a11y.css").read_text()]

    def __init__(self, **params):
        params.setdefault("lab", lab_json())
        params.setdefault("sizing_mode", "stretch_width")
        super().__init__(**params)
