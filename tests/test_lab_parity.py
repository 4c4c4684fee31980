"""static/lab.js against the numpy core: the lab's shown head (both pages draw it with lab.js) is
core.attention's head on the snapshot's shipped weights, and its steps are the Python trace's text."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from core.lab.encoding import curve_steps, unf16
from core.trace import trace
from widgets.lab_data import has_head, head_at, lab_payload, load_lab, token_labels
from widgets.viewdata import checks_html, steps_html

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed, so the JS lab cannot be run")
ROOT = Path(__file__).resolve().parents[1]

DRIVER = """
const lab = require(process.argv[1] + '/static/lab.js');
const fs = require('fs');
const { switches, cases } = JSON.parse(fs.readFileSync(0, 'utf8'));
const read = (f) => JSON.parse(fs.readFileSync(process.argv[1] + '/static/lab/' + f + '.json', 'utf8'));
const runs = {};
for (const name of read('index').runs) runs[name] = read(name);
const out = cases.map(([name, s, k, i]) => {
  const run = runs[name];
  const d = lab.labViewData(run, s, k, i, switches);
  const c = lab.curves(run, s, runs);
  return {weights: d.weights, steps: d.steps, layer0: d.layer0, W: d.W, step: d.step, labels: d.labels,
          seed: d.seed, curves: c};
});
process.stdout.write(JSON.stringify(out));
"""


def test_js_lab_shows_the_cores_head():
    runs = load_lab()["runs"]
    # every run at its first seed (every snapshot shipped) and its last (the trained head alone)
    last = {n: len(r["seeds"]) - 1 for n, r in runs.items()}
    cases = [(n, s, k, i) for n in runs for s in (0, last[n]) for k in (0, 7, -1) for i in (0, 5, 11)]
    cases = [(n, s, k % len(runs[n]["seeds"][s]["snapshots"]), i) for n, s, k, i in cases]
    proc = subprocess.run(
        [NODE, "-e", DRIVER, str(ROOT)],
        input=json.dumps({"switches": lab_payload()["switches"], "cases": cases}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for (name, s, k, i), js in zip(cases, json.loads(proc.stdout)):
        run = runs[name]
        record = run["seeds"][s]
        snap = record["snapshots"][k]
        labels = token_labels(record["probe"])
        assert js["labels"] == labels and js["step"] == snap["step"] and js["seed"] == record["seed"]
        # the loss chart: this seed's curves, beside the same seed of the run it is set against
        x = curve_steps(record["curve"], run["steps"])
        assert js["curves"]["train"] == {"x": x, "y": record["curve"]["loss"]}
        assert js["curves"]["eval"] == {"x": record["held_out"]["step"], "y": record["held_out"]["loss"]}
        if run["compare"]:
            ref = next(r for r in runs[run["compare"]]["seeds"] if r["seed"] == record["seed"])
            assert js["curves"]["full eval"]["y"] == ref["held_out"]["loss"]
        assert js["curves"]["honest"]["y"] == record["held_out"].get("honest", [])
        weights = np.array(js["weights"], dtype=float)
        if has_head(run):
            head = head_at(run, s, k)  # core.attention on the snapshot's X, W_Q, W_K, W_V
            shown = ~head.future
            np.testing.assert_allclose(weights[shown], head.weights[shown], rtol=0, atol=1e-9)
            t = trace(head, i, labels)
            assert js["steps"] == steps_html(t) + checks_html(t, labels), (name, k, i)
            np.testing.assert_allclose(np.array(js["W"]["W_Q"]), head.W_Q, atol=1e-12)
            np.testing.assert_allclose(np.array(js["W"]["W_K"]), head.W_K, atol=1e-12)
        else:  # a 64-wide head: only its weights on the probe are shipped
            np.testing.assert_array_equal(weights, unf16(snap["maps"][str(run["shown_layer"])]))
            assert js["W"] is None
        if run["shape"]["layers"] > 1:
            np.testing.assert_array_equal(np.array(js["layer0"]), unf16(snap["maps"]["0"]))
        else:
            assert js["layer0"] is None


def test_every_cell_colour_keeps_its_number_readable():
    """WCAG AA (4.5 : 1) for a heatmap cell's number, along both colour scales, in the ink lab.js picks."""
    worst = subprocess.run(
        [
            NODE,
            "-e",
            "const lab = require(process.argv[1] + '/static/lab.js'); let worst = Infinity;"
            "for (let k = -1000; k <= 1000; k++) { const v = k / 1000;"
            " const cells = [lab.diverging(v, 1), lab.blue(Math.abs(v))];"
            " for (const c of cells) worst = Math.min(worst, lab.inkContrast(c)); }"
            "process.stdout.write(String(worst));",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert float(worst.stdout) >= 4.5, worst.stderr
