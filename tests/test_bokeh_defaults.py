"""app/bokeh_defaults.py: with the cached defaults, a page serialises exactly as without them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# In a fresh process (no cache installed yet): a student's page, moved once, read both ways.
BOTH_WAYS = """
import sys, json
sys.path.insert(0, {root!r})
import panel as pn
from bokeh.document import Document
from panel.io.state import set_curdoc
from app.bokeh_defaults import cache_stable_defaults
from app.served_page import page_for
from widgets.explorer import HeadExplorer
pn.extension()
doc = Document()
with set_curdoc(doc):
    explorer = HeadExplorer()
    page_for(explorer).server_doc(doc, title="t")
    explorer.state.set_x(3, 0, 0.25)

def dump():
    every = {{m.id: m.properties_with_values() for m in doc.models}}  # every property, defaults too
    return json.dumps([doc.to_json(), every], sort_keys=True, default=repr)

plain = dump()
cache_stable_defaults()
cached, again = dump(), dump()  # the second read comes from the cache
print(json.dumps([len(plain), plain == cached == again]))
"""


def test_the_page_serialises_the_same_with_the_cache_as_without():
    run = subprocess.run(
        [sys.executable, "-c", BOTH_WAYS.format(root=str(ROOT))], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    size, same = json.loads(run.stdout.strip().splitlines()[-1])
    assert size > 100_000 and same


def test_mutable_defaults_still_belong_to_each_model():
    from bokeh.models import ColumnDataSource, Div

    from app.bokeh_defaults import cache_stable_defaults

    cache_stable_defaults()
    a, b = Div(), Div()
    assert a.styles is not b.styles and a.css_classes is not b.css_classes
    a.css_classes.append("x")
    assert b.css_classes == [] and ColumnDataSource().data is not ColumnDataSource().data
    assert (a.text, a.width, a.visible) == ("", None, True)  # immutable defaults, shared and unchanged
