"""The served lab is the export's lab: the same code (static/lab.js, static/attention.js), the same data."""

from __future__ import annotations

import html
import json
import re

from app.export_lab import LAB_JS, lab_section
from app.packing import unpack
from widgets.lab_data import lab_payload, load_lab
from widgets.lab_view import STATIC, LabView


def test_served_lab_carries_the_exports_code_and_data():
    view = LabView()
    assert LAB_JS.read_text() in view._esm and (STATIC / "attention.js").read_text() in view._esm
    payload = lab_payload()
    assert json.loads(view.lab) == payload
    assert list(payload["runs"]) == payload["order"] == load_lab()["index"]["runs"]
    packed = re.search(r'id="training-lab-data">([^<]*)</script>', lab_section()).group(1)
    assert unpack(packed) == view.lab  # the export carries the very same JSON (packed: app/packing.py)


def test_every_shipped_run_has_its_findings_and_a_note_for_each_seed():
    lab = load_lab()
    payload = lab_payload()
    for name, run in lab["runs"].items():
        # each seed drawn gets its own line, naming the seed
        notes = payload["at_seed"][name]
        assert len(notes) == len(run["seeds"])
        assert all(f"Drawn: seed {r['seed']}</b>" in note for note, r in zip(notes, run["seeds"]))
        if name.startswith("wide-scaled"):  # a no-scale run's reference: its numbers are in that run's text
            assert name not in lab["index"]["findings"]
            continue
        found = lab["index"]["findings"][name]
        assert found["verdict"] in ("reproduced", "partly", "not reproduced")
        assert found["showed"] and found["seeds"] == [r["seed"] for r in run["seeds"]]
        # every check is counted in the text as the shipped numbers give it
        for check in found["checks"]:
            assert f"{check['says']}: at {sum(check['held'])} of {len(run['seeds'])} seeds" in html.unescape(
                payload["described"][name]
            )
