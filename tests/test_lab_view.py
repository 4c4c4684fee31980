"""The served lab without a browser: every run and snapshot draws, and what it draws comes from the data."""

from __future__ import annotations

import html

import numpy as np
from bokeh.document import Document

from widgets.lab_data import describe, lab_view_data, load_lab
from widgets.lab_view import LabView, shown


def test_every_run_and_snapshot_draws_from_its_data():
    view = LabView()
    doc = Document()
    doc.add_root(view.layout)
    runs = load_lab()["runs"]
    for name, run in runs.items():
        view.run_select.value = name  # the control's callback, as a browser change would run it
        assert view.state.run == name
        for k in (0, len(run["snapshots"]) - 1):
            view.snap_slider.value = k
            data = lab_view_data(run, k, view.state.query % len(run["probe"]))
            np.testing.assert_array_equal(view.weights.source.data["value"], data["weights"]["value"])
            for column in ("x", "y", "text", "row", "col"):  # a new run of the same shape moves no cell
                assert list(view.weights.source.data[column]) == list(data["weights"][column]), column
            assert shown(view.w.figure) == (data["W"] is not None)
            assert shown(view.layer0.figure) == (run["shape"]["layers"] > 1)
        assert html.unescape(view.text.text) == describe(run, load_lab()["index"])
        assert view.query_select.options[0][1].startswith("0: ")
    doc.validate()


def test_every_shipped_run_has_its_findings():
    lab = load_lab()
    for name in lab["runs"]:
        if name != "wide-scaled":  # the no-scale run's reference: its numbers are in no-scale's findings
            found = lab["index"]["findings"][name]
            assert found["verdict"] in ("reproduced", "partly", "not reproduced")
            assert found["showed"]
