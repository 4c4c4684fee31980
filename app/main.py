"""The served explorer: `panel serve app/main.py` opens it at /main, one session per browser tab.

The first tab is the head itself; the other two take the chapter's two
arguments about size (why ÷√d, and what a long context costs) further.
"""

import sys
from pathlib import Path

# `panel serve` runs this file by path; make the repo's packages importable wherever it is started from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import panel as pn  # noqa: E402

from widgets.cost_view import CostView  # noqa: E402
from widgets.explorer import HeadExplorer  # noqa: E402
from widgets.saturation_view import SaturationView  # noqa: E402

pn.extension()

pn.Tabs(
    ("One head", HeadExplorer(sync_url=True)),
    ("Why ÷√d", SaturationView()),
    ("Long-context cost", CostView()),
    dynamic=True,  # a tab's Bokeh models are made when it is first shown
).servable(title="One attention head")
