"""static/lab.js against widgets/lab_data.py: the exported lab shows the served lab's numbers and steps."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from widgets.lab_data import lab_view_data, load_lab

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed, so the JS lab cannot be run")
ROOT = Path(__file__).resolve().parents[1]

DRIVER = """
const lab = require(process.argv[1] + '/static/lab.js');
const fs = require('fs');
const cases = JSON.parse(fs.readFileSync(0, 'utf8'));
const out = cases.map(([name, k, i]) => {
  const run = JSON.parse(fs.readFileSync(process.argv[1] + '/static/lab/' + name + '.json', 'utf8'));
  const d = lab.labViewData(run, k, i);
  return {weights: d.weights, steps: d.steps, layer0: d.layer0, W: d.W, step: d.step, labels: d.labels};
});
process.stdout.write(JSON.stringify(out));
"""


def test_js_lab_matches_python():
    runs = load_lab()["runs"]
    cases = [(name, k, i) for name in runs for k in (0, 7, -1) for i in (0, 5, 11)]
    cases = [(n, k % len(runs[n]["snapshots"]), i) for n, k, i in cases]
    proc = subprocess.run(
        [NODE, "-e", DRIVER, str(ROOT)], input=json.dumps(cases), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for (name, k, i), js in zip(cases, json.loads(proc.stdout)):
        py = lab_view_data(runs[name], k, i)
        assert js["labels"] == py["labels"] and js["step"] == py["step"]
        values = np.array(py["weights"]["value"], dtype=float)
        js_values = np.array(js["weights"], dtype=float).ravel()
        masked = np.isnan(values)
        np.testing.assert_allclose(js_values[~masked], values[~masked], rtol=0, atol=1e-9)
        assert js["steps"] == py["steps"], (name, k, i)
        if py["W"] is not None:
            for m in ("W_Q", "W_K"):
                np.testing.assert_allclose(np.array(js["W"][m]).ravel(), py["W"][m]["value"], atol=1e-12)
        if py["layer0"] is not None:
            np.testing.assert_allclose(
                np.array(js["layer0"]).ravel()[~np.isnan(py["layer0"]["value"])],
                np.array(py["layer0"]["value"])[~np.isnan(py["layer0"]["value"])],
                atol=1e-12,
            )
