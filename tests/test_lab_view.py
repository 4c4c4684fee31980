"""The served lab is the export's lab: the same code (static/lab.js, static/attention.js), the same data."""

from __future__ import annotations

import json

from app.export_lab import LAB_JS, lab_section
from widgets.lab_data import lab_payload, load_lab
from widgets.lab_view import STATIC, LabView


def test_served_lab_carries_the_exports_code_and_data():
    view = LabView()
    assert LAB_JS.read_text() in view._esm and (STATIC / "attention.js").read_text() in view._esm
    payload = lab_payload()
    assert json.loads(view.lab) == payload
    assert list(payload["runs"]) == payload["order"] == load_lab()["index"]["runs"]
    assert view.lab.replace("</", "<\\/") in lab_section()  # the export inlines the very same JSON


def test_every_shipped_run_has_its_findings():
    lab = load_lab()
    for name in lab["runs"]:
        if name != "wide-scaled":  # the no-scale run's reference: its numbers are in no-scale's findings
            found = lab["index"]["findings"][name]
            assert found["verdict"] in ("reproduced", "partly", "not reproduced")
            assert found["showed"]
