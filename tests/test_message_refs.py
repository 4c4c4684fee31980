"""The server's cheaper message handling (app/serving.py `refer_to_synced_models_lazily`, widgets/sources.py)
sends what Bokeh's own would, and the sources end up holding the view data."""

from __future__ import annotations

import json

import panel as pn
from bokeh.document import Document
from bokeh.models import ColumnDataSource
from bokeh.protocol.messages.patch_doc import patch_doc

from app.serving import refer_to_synced_models_lazily
from widgets.explorer import HeadExplorer
from widgets.sources import write_changed
from widgets.viewdata import view_data


def served_page():
    doc = Document()
    explorer = HeadExplorer(editor_on_open=True)
    doc.add_root(pn.Column(pn.pane.Bokeh(explorer.page.layout)).get_root(doc))
    events: list = []
    doc.on_change(events.append)
    return doc, explorer, events


def test_a_message_is_the_same_as_bokehs_own():
    refer_to_synced_models_lazily()
    ours, bokehs = patch_doc.create, patch_doc.create.__func__._bokeh_create
    doc, explorer, events = served_page()
    slider = explorer.page.controls.tokens.flat[0]
    steps = [
        lambda: doc.apply_json_patch(
            {"events": [{"kind": "ModelChanged", "model": {"id": slider.id}, "attr": "value", "new": 0.7}]},
            setter="browser",
        ),
        lambda: explorer.state.apply(query=2),
        explorer.state.add_token,  # new sliders: models the browser does not have yet, sent whole
    ]
    for step in steps:
        events.clear()
        step()
        sent = [e for e in events if getattr(e, "setter", None) != "browser"]
        new_models = set(doc.models._new_models)
        mine = json.dumps(ours(sent).content, sort_keys=True)
        doc.models._new_models = new_models  # the first call marked them sent
        theirs = json.dumps(bokehs(sent).content, sort_keys=True)
        assert mine == theirs
        assert ('"type": "object"' in mine) == bool(new_models)  # a new model goes whole, a synced one by id
    assert new_models  # the last step made some
    assert explorer.state.head.T == 5


def test_only_changed_columns_are_written_and_the_source_holds_the_new_data():
    source = ColumnDataSource({"x": [1.0, 2.0], "label": ["a", "b"]})
    doc = Document()
    doc.add_root(source)
    events: list = []
    doc.on_change(events.append)
    write_changed(source, {"x": [1.0, 3.0], "label": ["a", "b"]})
    assert [e.cols for e in events] == [["x"]]
    write_changed(source, {"x": [1.0, 3.0], "label": ["a", "b"]})
    assert len(events) == 1  # nothing changed, nothing sent
    write_changed(source, {"x": [1.0, 3.0, 4.0], "label": ["a", "b", "c"]})  # a new length: replaced whole
    assert dict(source.data) == {"x": [1.0, 3.0, 4.0], "label": ["a", "b", "c"]}


def test_after_moves_the_blend_sources_hold_the_view_data():
    doc, explorer, events = served_page()
    s = explorer.state
    for v in (0.3, -1.2, 2.5):
        s.set_x(1, 0, v)
    data = view_data(s.head, s.query, s.labels, s.dims)
    blend = explorer.page.blend
    for name in ("values", "hull", "output", "links"):
        assert dict(getattr(blend, name).data) == data["blend"][name]
