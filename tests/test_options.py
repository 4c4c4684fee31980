"""core.options: one table of switches drives the controls, links, command line, trace, downloads and page.

Each test walks SWITCHES, so a new row that some consumer misses fails here, not in a student's page.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from core.attention import AttentionError, exp
from core.one_head_by_hand import build_parser, configure
from core.options import NORMALISERS, OPTION_NAMES, SWITCH, SWITCHES, Options, check_option
from core.presets import CHAPTER
from core.trace import trace
from widgets.controls import ABLATION_NOTES, HeadControls
from widgets.intermediates import as_json
from widgets.logic_config import logic_config
from widgets.state import HeadState
from widgets.url_state import decode, encode

ROOT = Path(__file__).resolve().parents[1]
FLIPPED = {"toggle": None, "choice": "top1", "number": 0.5}


def flipped(s):
    return (not s.default) if s.kind == "toggle" else FLIPPED[s.kind]


def test_every_option_has_one_row_and_every_consumer_reads_it():
    assert tuple(s.name for s in SWITCHES) == OPTION_NAMES
    controls = HeadControls(CHAPTER.tokens, CHAPTER.X, query=3)
    state = HeadState()
    config = logic_config(state)
    assert [s["name"] for s in config["switches"]] == list(OPTION_NAMES)
    for s in SWITCHES:
        assert s.name in controls.switches  # a control on both pages (the export uses the same controls)
        assert state.apply(**{s.name: flipped(s)}), state.message
        params = encode(state)
        assert s.url_key in params  # a link key, read back as the same value
        changes, problems = decode({s.url_key: params[s.url_key]})
        assert problems == [] and changes == {s.name: flipped(s)}
        assert json.loads(as_json(state.head, state.labels))["options"][s.name] == flipped(s)  # downloads
        state.reset()
    # "What each switch shows": one item per row, in the table's order, each with a note of its own that
    # quotes numbers (read from the panel's HTML, not from the rows)
    items = re.findall(r"<li><b>(.*?)</b>: (.*?)</li>", ABLATION_NOTES)
    assert [flipped for flipped, _ in items] == [html.escape(s.flipped) for s in SWITCHES]
    notes = [note for _, note in items]
    assert len(set(notes)) == len(SWITCHES) and all(re.search(r"\d", note) for note in notes)


def test_core_exports_the_table_and_one_rule_per_normaliser_choice():
    """core/__init__.py offers the table itself and NORMALISE, keyed by the normaliser row's choices."""
    import core

    assert core.SWITCHES is SWITCHES and core.Options is Options
    assert tuple(core.NORMALISE) == SWITCH["normaliser"].choices == NORMALISERS
    scores = np.array([[0.5, -np.inf], [2.0, -1.0]])
    for choice, rule in core.NORMALISE.items():
        assert np.array_equal(core.normalise(scores, choice), rule(scores))
        head = core.attend([[1.0], [2.0]], [[1.0]], [[1.0]], [[1.0]], normaliser=choice)
        assert head.normaliser == choice
    assert all(hasattr(core, name) for name in core.__all__) and "attend" in core.__all__
    assert not any(name in core.__all__ for name in ("attention", "options", "np"))


def test_headstate_has_a_parameter_per_switch_made_from_its_row():
    for s in SWITCHES:
        p = HeadState.param[s.name]
        assert p.default == s.default and p.doc == s.label
        kind = {"toggle": "Boolean", "choice": "Selector", "number": "Number"}[s.kind]
        assert type(p).__name__ == kind, s.name
        if s.kind == "choice":
            assert p.objects == list(s.choices)
    assert HeadState().temperature == Options().temperature


@pytest.mark.parametrize("s", SWITCHES, ids=lambda s: s.name)
def test_every_switch_has_a_command_line_flag(s):
    if s.kind == "toggle":
        args = [s.cli_flag]
    else:
        args = [s.cli_flag, str(flipped(s))]
    preset = configure(build_parser().parse_args(args))
    assert getattr(preset.options, s.name) == flipped(s)


def test_temperature_is_refused_outside_its_limits_and_traced_inside():
    for bad in (0.0, -1.0, 6.0, float("nan"), "warm"):
        with pytest.raises(AttentionError, match="temperature"):
            check_option("temperature", bad)
    head = CHAPTER.with_options(temperature=0.5).head()
    lines = trace(head, 3, CHAPTER.tokens).steps[2].lines
    assert lines[1] == "divide by the temperature τ = 0.50: [0.42, 3.39, 0.57, 1.10]"
    assert np.allclose(head.scaled, CHAPTER.head().scaled / 0.5, rtol=0, atol=1e-15)
    assert len(trace(CHAPTER.head(), 3, CHAPTER.tokens).steps[2].lines) == 1  # τ = 1: the chapter's trace
    assert Options().replace(temperature=2) == Options(temperature=2.0)


def test_exp_is_bit_for_bit_the_same_in_numpy_and_javascript():
    """The head's exp (fdlibm's steps) gives the browser the same bits, so downloads match byte for byte."""
    x = np.concatenate([np.linspace(-760, 715, 20001), np.random.default_rng(3).normal(size=20000) * 8])
    code = (
        "const A = require('./static/attention.js');"
        "const x = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(x.map(A.exp).map(v => Number.isFinite(v) ? v : String(v))));"
    )
    out = subprocess.run(
        ["node", "-e", code],
        input=json.dumps(x.tolist()),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    js = np.array([float(v) for v in json.loads(out.stdout)])
    assert np.array_equal(js, exp(x))
    ok = (x > -700) & (x < 700)
    assert np.allclose(exp(x[ok]), np.exp(x[ok]), rtol=4e-16, atol=0)  # and it is e^x to within an ulp
