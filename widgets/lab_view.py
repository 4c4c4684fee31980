"""The training lab in the served page: static/lab.js, the export's own lab, in a Panel JSComponent.

The shipped runs go to the browser once, when the lab's tab is first opened (app/served_page.py builds the
tab lazily); from then on a run or seed switch, a snapshot move or another query is drawn in the browser by
static/lab.js with the JavaScript port of the core (static/attention.js), as in the static export. No
server round trip, no Bokeh figure: the heatmaps are HTML tables, readable by a screen reader as they are.
A student's own run trains in their browser too (static/lab_train.js), at no cost to the server.
bench/RESULTS-lab.md has the measurements that chose this over Bokeh figures driven from Python.
"""

from __future__ import annotations

from pathlib import Path

import param
from panel.custom import JSComponent

from widgets.lab_data import lab_json

STATIC = Path(__file__).resolve().parents[1] / "static"

# The UMD files set their globals (PyFormat, AttentionHead, TrainingLab, SeededRandom, LabTrainer,
# LabTrainPanel) when run as this module's code (the trainer runs in the student's browser, in a Web
# Worker); static/lab_render.js is the module's render.
MODULE = ("pyformat.js", "attention.js", "lab.js", "rng.js", "train.js", "lab_train.js", "lab_render.js")


class LabView(JSComponent):
    """The lab's section, drawn in the browser from `lab` (widgets.lab_data.lab_payload as JSON)."""

    lab = param.String(default="", doc="the shipped runs, the introduction and the findings, as JSON")

    _esm = "\n".join((STATIC / f).read_text() for f in MODULE)
    # lab.css, and the page's focus ring (static/a11y.css), inside the component's shadow root
    _stylesheets = [(STATIC / "lab.css").read_text(), (STATIC / "a11y.css").read_text()]

    def __init__(self, **params):
        params.setdefault("lab", lab_json())
        params.setdefault("sizing_mode", "stretch_width")
        super().__init__(**params)
