"""Which browser messages the server may drop when a newer one overwrites them (app/serving.py)."""

from types import SimpleNamespace

from app.serving import overwrite_key


def patch(*events):
    return SimpleNamespace(msgtype="PATCH-DOC", content={"events": list(events)})


def set_value(model_id, attr="value", new=0.5):
    return {"kind": "ModelChanged", "model": {"id": model_id}, "attr": attr, "new": new}


def test_a_property_change_is_keyed_by_what_it_sets():
    assert overwrite_key(patch(set_value("s1"))) == frozenset({("s1", "value")})
    both = overwrite_key(patch(set_value("s1"), set_value("s1", "value_throttled")))
    assert both == frozenset({("s1", "value"), ("s1", "value_throttled")})
    assert overwrite_key(patch(set_value("s1"))) <= both  # overwritten by a message that sets both


def test_anything_but_plain_property_changes_is_never_held_back():
    click = {"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {"name": "button_click"}}
    assert overwrite_key(patch(click)) is None
    assert overwrite_key(patch(set_value("s1"), click)) is None
    assert overwrite_key(patch({"kind": "ColumnsStreamed", "model": {"id": "c"}})) is None
    assert overwrite_key(patch()) is None
    assert overwrite_key(SimpleNamespace(msgtype="PULL-DOC-REQ", content={})) is None
