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


def test_only_a_number_is_overwritten_never_a_pick():
    """A select's value, a checkbox's, a flag: each is applied in turn (a question closed and picked again
    within one round trip is asked afresh); a slider's or a number box's value is overtaken by the next."""
    assert overwrite_key(patch(set_value("s1", new=2))) == frozenset({("s1", "value")})
    for pick in ("", "exercise-1", [0], [], True, None):
        assert overwrite_key(patch(set_value("ask", new=pick))) is None, pick
    assert overwrite_key(patch(set_value("s1"), set_value("ask", new=""))) is None


def test_the_explorer_lets_a_number_be_overtaken_never_a_pick():
    from widgets.explorer import HeadExplorer

    explorer = HeadExplorer()
    keys = []  # the key each change is submitted under: a newer change under the same key overtakes it
    explorer.latest.submit = lambda key, apply: keys.append(key)
    slider = explorer.page.controls.tokens.flat[9]  # it[0]
    slider.value, slider.value = 0.3, 0.35
    ask = explorer.page.lesson.ask
    ask.value, ask.value = "exercise-1", ""
    assert len(keys) == 4
    assert keys[0] is keys[1]
    assert keys[2] is not keys[3] and keys[2] is not keys[0] and keys[3] is not keys[0]


def test_changes_applied_a_turn_later_keep_their_own_values():
    """Two controls' changes wait for the same later turn (widgets/latest.py); applying the first sets the
    controls back to the state, the second's widget included: the second still applies what it said."""
    from widgets.explorer import HeadExplorer

    explorer = HeadExplorer()
    waiting = []
    explorer.latest.submit = lambda key, apply: waiting.append(apply)
    controls = explorer.page.controls
    controls.query.value = "1"
    controls.switches["causal"].active = []
    controls.switches["scaling"].active = []
    for apply in waiting:
        apply()
    s = explorer.state
    assert (s.query, s.causal, s.scaling) == (1, False, False)
