"""The page's downloads are the served app's, byte for byte, without a browser.

static/explorer.js writes the JSON and CSV files the export's Download buttons save; the served app writes
them with widgets/intermediates.py.  Random heads (hostile labels, masked and huge scores, −0.0, every
switch) go to one Node process (tests/downloads_driver.js) and both texts must be identical.
(tests/test_export.py checks the same in Chromium for one head, through the buttons.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.attention import AttentionError, attend
from core.options import SWITCHES
from tests.node_batch import NODE, run_node
from widgets.intermediates import as_csv, as_json
from widgets.logic_config import logic_config

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the JS downloads cannot run")

DRIVER = Path(__file__).parent / "downloads_driver.js"
N_HEADS = 300
# Labels a CSV writer must quote (comma, quote, a line break's neighbours), JSON must escape, or that are
# not ASCII.
LABELS = ("The", "cat", "a,b", 'say "hi"', "it's", "back\\slash", "tab\there", "é", "∞", "<b>", "日本",
          "x" * 35, "=1+1", "-", "0", " lead")
# Numbers whose text is tricky: −0.0, subnormal, huge, exact ties, many digits.
ENTRIES = (0.0, -0.0, 5e-324, 1e-300, 1e40, -3e40, 0.125, 2.5, 1 / 3, -2 / 3, 123456789.123, 1e16, 1e-5)


def random_state(rng: np.random.Generator) -> dict:
    T, C, d = (int(v) for v in (rng.integers(1, 17), rng.integers(1, 7), rng.integers(1, 7)))
    kind = rng.integers(3)
    if kind == 0:
        X, W = rng.normal(size=(T, C)), rng.normal(size=(3, C, d))
    elif kind == 1:
        X, W = rng.integers(-16, 17, size=(T, C)) / 8, rng.integers(-16, 17, size=(3, C, d)) / 8
    else:
        X, W = rng.choice(ENTRIES, size=(T, C)), rng.choice(ENTRIES, size=(3, C, d))
    labels = [str(rng.choice(LABELS)) + ("" if k == 0 else f"#{k}") for k in range(T)]
    options = {}
    for s in SWITCHES:
        if s.kind == "toggle":
            options[s.name] = bool(rng.random() < 0.5)
        elif s.kind == "choice":
            options[s.name] = str(rng.choice(s.choices))
        else:
            options[s.name] = float(rng.choice([s.default, s.low if s.low > -1e6 else -3.0, 0.5, 2.0]))
    matrices = {"X": X.tolist(), "W_Q": W[0].tolist(), "W_K": W[1].tolist(), "W_V": W[2].tolist()}
    where = {"query": int(rng.integers(T)), "dims": [0, 1 if d > 1 else 0]}
    return {"tokens": labels, **matrices, **options, **where}


def python_downloads(state: dict) -> dict:
    options = {s.name: state[s.name] for s in SWITCHES}
    try:
        head = attend(state["X"], state["W_Q"], state["W_K"], state["W_V"], **options)
    except AttentionError as exc:
        return {"refused": str(exc)}
    return {"json": as_json(head, state["tokens"]), "csv": as_csv(head, state["tokens"])}


def test_the_pages_json_and_csv_are_the_served_apps_byte_for_byte():
    rng = np.random.default_rng(30)
    states = [random_state(rng) for _ in range(N_HEADS)]
    expected = [python_downloads(s) for s in states]
    kept = [(s, e) for s, e in zip(states, expected) if "refused" not in e]
    got = run_node(DRIVER, {"config": logic_config(), "states": [s for s, _ in kept]})
    assert len(kept) > 0.9 * N_HEADS
    masked = 0
    for k, ((_, py), js) in enumerate(zip(kept, got)):
        assert "error" not in js, f"head {k}: {js['error']}"
        assert js["json"] == py["json"], f"head {k}: the JSON differs"
        assert js["csv"] == py["csv"], f"head {k}: the CSV differs"
        masked += '"-inf"' in py["json"]
    assert masked > 50  # masked scores, written as "-inf", were among them


def test_the_csv_starts_with_its_header_and_the_first_tokens_label():
    """What a spreadsheet opens first, for the chapter's head, in both runtimes."""
    config = logic_config()
    (js,) = run_node(DRIVER, {"config": config, "states": [{}]})
    start = config["start"]
    py = python_downloads({**start})
    assert js["csv"] == py["csv"]
    assert js["csv"].startswith("matrix,row,column,value\r\nX,The,0,1.0\r\n")
