"""What the "Why ÷√d" explorer shows, as plain data: pure functions, no Panel or Bokeh.

`view_data(curve, point)` is everything the page draws for one state: the
sweep's columns, the reference lines, the chosen width's markers, the
entropy axis's range and the readout's HTML.  The served view writes it into
its Bokeh models; static/saturation.js computes the same dict in the
browser (tests/test_explorer_parity.py holds the two equal).  The readout's
words are in `readout_html`, one place to edit them.
"""

from __future__ import annotations

import html
import math

from core.notes import saturation_note
from core.saturation import SaturationCurve, SaturationPoint

# Okabe–Ito colours, told apart by the common colour-blindnesses; raw and
# scaled also differ in dash and marker, so the figures survive greyscale.
RAW = "#B84A00"  # dark vermillion: softmax of q·k (5.2 : 1 on white, so it can colour text)
SCALED = "#0072B2"  # blue: softmax of q·k/√d
REFERENCE_STEPS = [k / 4 for k in range(4, 37)]  # the √d line at d = 2^(1/4 … 9): straight on log axes


def curve_columns(curve: SaturationCurve) -> dict[str, list]:
    """One row per width."""
    data = curve.columns()
    data["d"] = [float(d) for d in data["d"]]
    data["uniform_weight"] = [1 / curve.T] * len(data["d"])
    return data


def reference_columns(T: int) -> dict[str, list]:
    """The √d line (dense, so it is straight on log axes) and the uniform-softmax levels."""
    xs = [2**k for k in REFERENCE_STEPS]  # 2 … 512
    return {
        "d": xs,
        "sqrt_d": [math.sqrt(x) for x in xs],
        "uniform_weight": [1 / T] * len(xs),
        "uniform_entropy": [math.log(T)] * len(xs),
    }


def marker_columns(p: SaturationPoint) -> dict[str, list]:
    """The chosen width: one point per line in every figure."""
    return {
        "d": [float(p.d), float(p.d)],
        "spread": [p.score_std, p.scaled_score_std],
        "max_weight": [p.max_weight_raw, p.max_weight_scaled],
        "entropy": [p.entropy_raw, p.entropy_scaled],
        "which": ["raw q·k", "q·k ÷ √d"],
    }


def entropy_range(T: int) -> list[float]:
    return [-0.05 * math.log(T), 1.08 * math.log(T)]


def readout_html(p: SaturationPoint) -> str:
    """What to look for at the chosen width, in a few sentences (all values escaped)."""
    e = html.escape
    uniform_w = 1 / p.T
    verdict = (
        "nearly all of it on one key"
        if p.max_weight_raw >= 0.75
        else "a large share on one key"
        if p.max_weight_raw >= 0.3
        else "still spread out"
    )
    lines = [
        f"<b>d = {p.d}</b>: raw scores q·k spread about <b>{p.score_std:.1f}</b> "
        f"(√d = {p.sqrt_d:.1f}); after ÷√d about <b>{p.scaled_score_std:.2f}</b>.",
        f"<span style='color:{RAW}'>Without ÷√d</span> the biggest weight averages "
        f"<b>{p.max_weight_raw:.2f}</b> ({e(verdict)}); entropy {p.entropy_raw:.2f} nats.",
        f"<span style='color:{SCALED}'>With ÷√d</span> the biggest weight is "
        f"<b>{p.max_weight_scaled:.2f}</b> and the entropy {p.entropy_scaled:.2f} "
        f"of a possible {p.uniform_entropy:.2f} (all {p.T} keys equal, each {uniform_w:.3f}).",
        "Watch: as d grows the vermillion lines run to one-hot (weight → 1, entropy → 0) "
        "while the blue ones stay put. That flatness is what the division buys.",
    ]
    foot = f"Averages over {p.trials} random queries, each against {p.T} random keys; seed {p.seed}."
    chapter = saturation_note(p)  # what the chapter says at this width, against what is measured here
    if chapter:
        foot += " " + chapter
    body = "".join(f"<p>{line}</p>" for line in lines)
    return f"<div class='saturation-readout'>{body}<p class='foot'>{e(foot)}</p></div>"


def view_data(curve: SaturationCurve, p: SaturationPoint) -> dict:
    """Everything the page shows for one state (static/saturation.js viewData gives the same dict)."""
    return {
        "curve": curve_columns(curve),
        "reference": reference_columns(curve.T),
        "marker": marker_columns(p),
        "entropy_range": entropy_range(curve.T),
        "chosen": float(p.d),
        "readout": readout_html(p),
    }
