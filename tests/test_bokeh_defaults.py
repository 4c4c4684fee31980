"""app/bokeh_defaults.py: with the cached defaults, a page serialises exactly as without them."""

from __future__ import annotations

import json
import re

from bokeh.document import Document
from panel.io.state import set_curdoc

from app import bokeh_defaults
from app.served_page import page_for
from widgets.explorer import HeadExplorer


def dump(doc) -> str:
    every = {m.id: m.properties_with_values() for m in doc.models}  # every property, defaults included
    text = json.dumps([doc.to_json(), every], sort_keys=True, default=repr)
    # an array sent as a binary buffer (the heatmaps' pictures) gets a new buffer id and address at every
    # serialisation: compare everything but those
    return re.sub(r"Buffer\(id='[^']*', data=<memory at 0x[0-9a-f]+>\)", "Buffer(…)", text)


def test_a_moved_page_serialises_the_same_with_the_cache_as_without():
    was_on = bool(bokeh_defaults._originals)
    bokeh_defaults.remove_cache()
    try:
        doc = Document()
        with set_curdoc(doc):
            explorer = HeadExplorer()
            page_for(explorer).server_doc(doc, title="t")
            explorer.state.set_x(3, 0, 0.25)  # a move: sources and text written after the page was built
        plain = dump(doc)
        bokeh_defaults.cache_stable_defaults()
        cached, again = dump(doc), dump(doc)  # the second from the filled cache
        assert len(plain) > 100_000 and cached == plain and again == plain
    finally:
        (bokeh_defaults.cache_stable_defaults if was_on else bokeh_defaults.remove_cache)()


def test_mutable_defaults_still_belong_to_each_model():
    from bokeh.models import ColumnDataSource, Div

    bokeh_defaults.cache_stable_defaults()
    a, b = Div(), Div()
    assert a.styles is not b.styles and a.css_classes is not b.css_classes
    a.css_classes.append("x")
    assert b.css_classes == [] and ColumnDataSource().data is not ColumnDataSource().data
    assert (a.text, a.width, a.visible) == ("", None, True)  # immutable defaults, shared and unchanged


