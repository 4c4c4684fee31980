"""The two issue-4 explorers on one page: `panel serve app/explorers.py` opens them at /explorers."""

import sys
from pathlib import Path

# `panel serve` runs this file by path; make the repo's packages importable wherever it is started from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import panel as pn  # noqa: E402

from widgets.cost_view import CostView  # noqa: E402
from widgets.saturation_view import SaturationView  # noqa: E402

pn.extension()

pn.Tabs(
    ("Why ÷√d", SaturationView()),
    ("Long-context cost", CostView()),
    name="explorers",
    dynamic=True,  # a tab's Bokeh models are made when it is first shown
).servable(title="Attention: scaling and cost")
