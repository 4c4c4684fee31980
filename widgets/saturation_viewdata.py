"""What the "Why ÷√d" explorer shows, as plain data: pure functions, no Panel or Bokeh.

`view_data(curve, point, worked)` is everything the page draws for one
state: the sweep's columns, the reference lines, the chosen width's markers,
the entropy axis's range, the readout's HTML and the worked row's.  The served
view writes it into its Bokeh models; static/saturation.js computes the same
dict in the browser (tests/test_explorer_parity.py holds the two equal).  The
words are in `readout_html` and `worked_row_html`, one place to edit them.
"""

from __future__ import annotations

import html
import math

from core.cost import sci
from core.notes import percent, saturation_note
from core.saturation import STUCK, RowGradient, SaturationCurve, SaturationPoint, WorkedRow

# Okabe–Ito colours, told apart by the common colour-blindnesses; raw and
# scaled also differ in dash and marker, so the figures survive greyscale.
RAW = "#B84A00"  # dark vermillion: softmax of q·k (5.2 : 1 on white, so it can colour text)
SCALED = "#0072B2"  # blue: softmax of q·k/√d
REFERENCE_STEPS = [k / 4 for k in range(4, 37)]  # the √d line at d = 2^(1/4 … 9): straight on log axes
TOP_WEIGHTS = 3  # the worked row lists this many of its largest weights


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
        "uniform_gradient": [math.sqrt(T - 1) / T] * len(xs),
    }


def marker_columns(p: SaturationPoint) -> dict[str, list]:
    """The chosen width: one point per line in every figure."""
    return {
        "d": [float(p.d), float(p.d)],
        "spread": [p.score_std, p.scaled_score_std],
        "max_weight": [p.max_weight_raw, p.max_weight_scaled],
        "entropy": [p.entropy_raw, p.entropy_scaled],
        "gradient": [p.gradient_raw, p.gradient_scaled],
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
        f"<b>{p.max_weight_raw:.2f}</b> ± {p.max_weight_raw_spread:.2f} ({e(verdict)}); entropy "
        f"{p.entropy_raw:.2f} nats.",
        f"<span style='color:{SCALED}'>With ÷√d</span> the biggest weight is "
        f"<b>{p.max_weight_scaled:.2f}</b> ± {p.max_weight_scaled_spread:.2f} and the entropy "
        f"{p.entropy_scaled:.2f} of a possible {p.uniform_entropy:.2f} (all {p.T} keys equal, each "
        f"{uniform_w:.3f}).",
        f"Gradient: a row passes back ‖∂w/∂z‖ = <b>{p.gradient_raw:.2f}</b> ± {p.gradient_raw_spread:.2f} "
        f"<span style='color:{RAW}'>without ÷√d</span>, and <b>{percent(p.stuck_raw)}</b> of rows less than "
        f"{STUCK:g}; <b>{p.gradient_scaled:.2f}</b> ± {p.gradient_scaled_spread:.2f} "
        f"<span style='color:{SCALED}'>with it</span> ({percent(p.stuck_scaled)} below {STUCK:g}).",
        "Watch: as d grows the vermillion lines run to one-hot (weight → 1, entropy → 0) and more and more "
        "rows pass no gradient back, while the blue ones stay put. That flatness is what the division buys.",
    ]
    foot = (
        f"Averages over {p.trials} random queries, each against {p.T} random keys; seed {p.seed}; ± is how "
        f"much the rows differ (their standard deviation). ‖∂w/∂z‖ is the size of the softmax's Jacobian "
        f"per unit of the score z it is given: with ÷√d that is q·k/√d, so per unit of q·k it is "
        f"{p.sqrt_d:.1f} times smaller again; what the division removes is the rows that pass back nothing."
    )
    chapter = saturation_note(p)  # what the chapter says at this width, against what is measured here
    if chapter:
        foot += " " + chapter
    body = "".join(f"<p>{line}</p>" for line in lines)
    return f"<div class='saturation-readout'>{body}<p class='foot'>{e(foot)}</p></div>"


def small(x: float) -> str:
    """A Jacobian entry: two decimals (with sci's minus sign), or ×10ⁿ where two decimals would show 0."""
    return f"{x:.2f}".replace("-", "−") if abs(x) >= 0.005 else sci(x)


def weights_text(g: RowGradient) -> str:
    """The row's TOP_WEIGHTS largest weights, largest first (ties: the earlier key), with their keys."""
    order = sorted(range(len(g.weights)), key=lambda k: (-g.weights[k], k))[:TOP_WEIGHTS]
    return ", ".join(f"{small(float(g.weights[k]))} on key {k + 1}" for k in order)


def worked_row_html(r: WorkedRow, p: SaturationPoint) -> str:
    """One random row's softmax without and with ÷√d, and its Jacobian's extremes (all values escaped)."""
    e = html.escape
    rows = [
        ("largest weights", weights_text(r.raw), weights_text(r.scaled)),
        (
            "Jacobian's largest entry, w_i (1 − w_i)",
            f"{small(r.raw.largest)} (i = key {r.raw.largest_at + 1})",
            f"{small(r.scaled.largest)} (i = key {r.scaled.largest_at + 1})",
        ),
        (
            "its smallest, −w_i w_j",
            f"{small(r.raw.smallest)} (keys {r.raw.smallest_at[0] + 1}, {r.raw.smallest_at[1] + 1})",
            f"{small(r.scaled.smallest)} (keys {r.scaled.smallest_at[0] + 1}, {r.scaled.smallest_at[1] + 1})",
        ),
        ("its size ‖∂w/∂z‖", small(r.raw.size), small(r.scaled.size)),
    ]
    body = "".join(f"<tr><td>{e(a)}</td><td>{e(b)}</td><td>{e(c)}</td></tr>" for a, b, c in rows)
    head = (
        f"<tr><th>row {r.row + 1} of {p.trials}, d = {r.d}</th>"
        f"<th style='color:{RAW}'>without ÷√d</th><th style='color:{SCALED}'>with ÷√d</th></tr>"
    )
    quiet = p.least_gradient_row + 1
    foot = (
        "Every entry of ∂w/∂z is w_i (1 − w_i) or −w_i w_j: in a one-hot row (one weight 1, the rest 0) "
        "each is 0, so moving any score moves no weight and no gradient reaches q or k. "
        + (
            f"Of these {p.trials} rows, row {quiet} passes back least without ÷√d: type it in the row box."
            if quiet != r.row + 1
            else f"Of these {p.trials} rows, this one passes back least without ÷√d."
        )
    )
    return f"<div class='saturation-row'><table>{head}{body}</table><p class='foot'>{e(foot)}</p></div>"


def view_data(curve: SaturationCurve, p: SaturationPoint, worked: WorkedRow) -> dict:
    """Everything the page shows for one state (static/saturation.js viewData gives the same dict)."""
    return {
        "curve": curve_columns(curve),
        "reference": reference_columns(curve.T),
        "marker": marker_columns(p),
        "entropy_range": entropy_range(curve.T),
        "chosen": float(p.d),
        "readout": readout_html(p),
        "row": worked_row_html(worked, p),
    }
