"""What the long-context cost explorer shows, as plain data: pure functions, no Panel or Bokeh.

`view_data(cost, gpu_gb, tile)` is everything the page draws for one state: the
figure's line and point columns, its ranges, the two marked context lengths
and their labels, and the readout table's HTML.  The served view writes it
into its Bokeh models; static/cost.js computes the same dict in the browser
(tests/test_explorer_parity.py holds the two equal).  The readout's words are
in `readout_rows`, one place to edit them.
"""

from __future__ import annotations

import html
import math

from core.cost import (
    LongContextCost,
    human_bytes,
    output_projection_flops,
    projection_flops,
    qk_flops,
    sci,
    tile_bytes,
    tile_score_bytes,
)
from core.notes import gpu_note

LINE_POINTS = 41
# Okabe–Ito colours (told apart by the common colour-blindnesses).
QK = "#D55E00"  # vermillion
PROJ = "#0072B2"  # blue
PROJ_MHA = "#56B4E9"  # sky blue, dashed


def approx_bytes(b: float) -> str:
    return f"≈ {human_bytes(b)}"


def times(x: float) -> str:
    """A ratio for the readout: '13×', '2.5×', '0.4×'."""
    if x >= 10:
        return f"{x:,.0f}×"
    return f"{x:.2g}×" if x >= 0.01 else "< 0.01×"


def tile_side(T: int, tile: int) -> int:
    """The side of a tile: B queries × B keys, but no more than the T there are."""
    return min(tile, T)


def readout_rows(cost: LongContextCost, gpu_gb: float, tile: int) -> list[tuple[str, str, str]]:
    """(what, how much, compared with) rows for the readout table, in plain text.

    A row with an empty value and note is a section heading.
    """
    x = cost.inputs
    H, G, L = x.heads, x.kv_heads, x.layers
    gpu = gpu_gb * 1e9
    gpu_name = f"one GPU ({gpu_gb:g} GB)"
    group = f"{G} K/V heads" if x.grouped else "no sharing"
    # Q·Kᵀ over the projections, per layer: 2·T²·d·H / (2·T·C·d·(H + 2·G)), in small exact integers
    qk_over = x.T * H / (x.C * (H + 2 * G))
    rows = [
        ("The score matrix, if it were stored", "", ""),
        ("entries, per head per layer", f"T² = {sci(cost.score_entries_per_head)}", ""),
        (
            f"bytes, per head per layer ({x.element_bytes:g} B each)",
            f"{sci(cost.score_bytes_per_head)} {approx_bytes(cost.score_bytes_per_head)}",
            f"{times(cost.score_bytes_per_head / gpu)} {gpu_name}",
        ),
        (
            f"per layer (× {H} heads)",
            approx_bytes(cost.score_bytes_per_layer),
            f"{times(cost.score_bytes_per_layer / gpu)} {gpu_name}",
        ),
        (
            f"whole model (× {L} layers)",
            approx_bytes(cost.score_bytes_per_model),
            f"{times(cost.score_bytes_per_model / gpu)} {gpu_name}",
        ),
        ("One forward pass over T tokens (FLOPs)", "", ""),
        (
            "Q·Kᵀ, one layer (2·T²·d × heads)",
            sci(cost.qk_flops_per_layer),
            f"{times(qk_over)} the projections",
        ),
        ("Q·Kᵀ, whole model", sci(cost.qk_flops_per_model), ""),
        (f"Q/K/V projections, one layer ({group})", sci(cost.projection_flops_per_layer), ""),
    ]
    if x.grouped:
        rows.append(
            (
                f"Q/K/V projections, one layer (no sharing, {H} K/V heads)",
                sci(cost.projection_flops_per_layer_mha),
                "",
            )
        )
    rows.append(("Q/K/V projections, whole model", sci(cost.projection_flops_per_model), ""))
    cross = f"T ≈ {cost.crossover_T:,.0f}"
    cross_note = f"no sharing: T ≈ {cost.crossover_T_mha:,.0f} (3·C)" if x.grouped else "3·C"
    full = f"T ≈ {cost.full_crossover_T:,.0f}"
    full_note = f"no sharing: T ≈ {cost.full_crossover_T_mha:,.0f} (2·C)" if x.grouped else "2·C"
    B = tile_side(x.T, tile)
    one_tile = tile_score_bytes(B, x.element_bytes)
    held = tile_bytes(B, x.d, x.element_bytes)
    rows += [
        ("Q·Kᵀ overtakes the Q, K, V projections at (exercise 2's count)", cross, cross_note),
        ("Q·Kᵀ + A·V overtake the Q, K, V and output projections at", full, full_note),
        (f"In tiles of {B} queries × {B} keys, as FlashAttention computes them", "", ""),
        (
            "one tile of scores, all of the matrix that exists at once",
            f"{sci(one_tile)} B {approx_bytes(one_tile)}",
            f"the whole matrix, per head: {times(cost.score_bytes_per_head / one_tile)} more",
        ),
        (
            "all a tile step holds, per head (queries, keys, values, outputs, running max and sum)",
            approx_bytes(held),
            "the same at any T",
        ),
        (
            "FLOPs of Q·Kᵀ and A·V in tiles, one layer",
            sci(cost.qk_flops_per_layer + cost.blend_flops_per_layer),
            "unchanged: the arithmetic stays, the memory goes",
        ),
        ("Generating token T+1 with a KV cache", "", ""),
        (
            "attention FLOPs for token T+1, whole model",
            sci(cost.decode_flops_per_model),
            "grows like T, not T²",
        ),
        (
            f"KV cache, whole model ({group})",
            approx_bytes(cost.kv_cache_bytes_per_model),
            f"{times(cost.kv_cache_bytes_per_model / gpu)} {gpu_name}",
        ),
    ]
    if x.grouped:
        rows.append(
            (
                "KV cache without sharing",
                approx_bytes(cost.kv_cache_bytes_per_model_mha),
                f"{times(cost.kv_cache_bytes_per_model_mha / gpu)} {gpu_name}",
            )
        )
    return rows


def readout_html(cost: LongContextCost, gpu_gb: float, tile: int) -> str:
    """The readout table and its footnote on today's GPUs; every cell is escaped."""
    e = html.escape
    body = []
    for what, value, note in readout_rows(cost, gpu_gb, tile):
        if not value and not note:
            body.append(f"<tr class='section'><th colspan='3'>{e(what)}</th></tr>")
        else:
            body.append(f"<tr><td>{e(what)}</td><td class='num'>{e(value)}</td><td>{e(note)}</td></tr>")
    x = cost.inputs
    head = (
        f"T = {x.T:,} tokens · d = {x.d} · {x.heads} query heads · {x.kv_heads} K/V heads · "
        f"{x.layers} layers · C = {x.C:,}"
    )
    table = f"<table>{''.join(body)}</table>"
    foot = f"<p class='foot'>{e(gpu_note(cost))}</p>"
    return f"<div class='cost-readout'><p class='shape'>{e(head)}</p>{table}{foot}</div>"


def frame(cost: LongContextCost) -> tuple[float, float]:
    """The T range of the figure: 100 … 2,000,000, widened to show T and both crossovers."""
    x = cost.inputs
    low = min(100.0, x.T / 2, cost.full_crossover_T / 2)
    high = max(2e6, x.T * 2.0, cost.crossover_T_mha * 2)
    return low, high


def line_columns(cost: LongContextCost, low: float, high: float) -> dict[str, list]:
    """FLOPs per layer along T for Q·Kᵀ and the projections (with and without K/V sharing), and for
    Q·Kᵀ + A·V against all four projections (the output's too).

    LINE_POINTS context lengths evenly spaced on the log axis; the ends are `low` and `high` exactly.
    """
    x = cost.inputs
    a, b = math.log10(low), math.log10(high)
    inner = [10 ** (a + (b - a) * k / (LINE_POINTS - 1)) for k in range(1, LINE_POINTS - 1)]
    ts = [low, *inner, high]
    qk = [float(qk_flops(1, x.d)) * t * t * x.heads for t in ts]
    proj = [float(projection_flops(1, x.C, x.d, x.heads, x.kv_heads)) * t for t in ts]
    mha = [float(projection_flops(1, x.C, x.d, x.heads, x.heads)) * t for t in ts]
    per_t_all = float(
        projection_flops(1, x.C, x.d, x.heads, x.kv_heads) + output_projection_flops(1, x.C, x.d, x.heads)
    )
    attn = [2 * v for v in qk]  # A·V costs what Q·Kᵀ does
    proj_all = [per_t_all * t for t in ts]
    return {
        "T": ts,
        "qk": qk,
        "proj": proj,
        "proj_mha": mha,
        "attn": attn,
        "proj_all": proj_all,
        "T_text": [f"{t:,.0f}" for t in ts],
        "qk_text": [sci(v) for v in qk],
        "proj_text": [sci(v) for v in proj],
        "proj_mha_text": [sci(v) for v in mha],
        "attn_text": [sci(v) for v in attn],
        "proj_all_text": [sci(v) for v in proj_all],
    }


def point_columns(cost: LongContextCost) -> dict[str, list]:
    """The marked points: the crossovers, and where T is now on each line."""
    x = cost.inputs
    per_t_qk = float(qk_flops(1, x.d)) * x.heads
    full = cost.full_crossover_T
    rows = [
        ("crossover", cost.crossover_T, per_t_qk * (cost.crossover_T * cost.crossover_T), QK),
        ("crossover, A·V and output counted", full, 2 * per_t_qk * (full * full), QK),
        ("now: Q·Kᵀ", float(x.T), float(cost.qk_flops_per_layer), QK),
        ("now: projections", float(x.T), float(cost.projection_flops_per_layer), PROJ),
    ]
    if x.grouped:
        mha = cost.crossover_T_mha
        rows.insert(1, ("crossover, no sharing", mha, per_t_qk * (mha * mha), PROJ_MHA))
    return {
        "what": [r[0] for r in rows],
        "T": [r[1] for r in rows],
        "flops": [r[2] for r in rows],
        "colour": [r[3] for r in rows],
        "T_text": [f"{r[1]:,.0f}" for r in rows],
        "flops_text": [sci(r[2]) for r in rows],
        "marker": ["diamond" if r[0].startswith("crossover") else "circle" for r in rows],
    }


def y_frame(lines: dict) -> tuple[float, float]:
    values = lines["qk"] + lines["proj"] + lines["proj_mha"] + lines["attn"] + lines["proj_all"]
    return min(values) / 3, max(values) * 3


def view_data(cost: LongContextCost, gpu_gb: float, tile: int) -> dict:
    """Everything the page shows for one state (static/cost.js viewData gives the same dict)."""
    low, high = frame(cost)
    lines = line_columns(cost, low, high)
    T = cost.inputs.T
    return {
        "lines": lines,
        "points": point_columns(cost),
        "x_range": [low, high],
        "y_range": list(y_frame(lines)),
        "now": float(T),
        "now_text": f"T = {T:,}",
        "cross": cost.crossover_T,
        "cross_text": f"crossover T ≈ {cost.crossover_T:,.0f}",
        "grouped": cost.inputs.grouped,
        "readout": readout_html(cost, gpu_gb, tile),
    }
