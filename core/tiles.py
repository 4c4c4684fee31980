"""Attention in tiles: one query's row computed a tile of keys at a time, as FlashAttention does.

The chapter: nobody stores the T × T score matrix; "the scores are computed in tiles and consumed by the
softmax and the value blend before the next tile is produced".  The softmax seems to need the whole row
at once (its largest score, and the sum it divides by), so a tile of scores cannot be finished alone.
The online softmax keeps three running numbers instead, updated after each tile:

    m    the largest score seen so far (−∞ before any)
    l    Σ exp(s_j − m) over the keys seen so far
    acc  Σ exp(s_j − m) · v_j over the keys seen so far (d wide)

When a tile raises the maximum from m to m', everything summed so far was measured against m, so it is
multiplied by exp(m − m') (`rescale`) before the tile's own terms join it.  After the last tile acc / l
is the row's output: the same numbers as the whole row's softmax and blend, without the row ever being
held whole.  A tile whose keys are all after the query (masked) has nothing to add and is skipped, as a
causal FlashAttention skips it.

The other two normalisers of the explorer tile as easily: raw scores as weights keep only acc (Σ s_j v_j),
and top-1 keeps the largest score and its key.  Everything is a small pure function of the head that
`attend` returned (core/attention.py); static/tiles.js repeats it in the browser.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.attention import Head, cool, exp, matmul, scale

# The tiled output and the head's may differ by rounding only: at most this much of the size of the
# terms blended (Σ_j |w_j| · max |v_j|, or 1 when that is smaller).
AGREEMENT = 1e-12


@dataclass(frozen=True)
class Running:
    """What the online softmax holds after some tiles: m, l and acc (see the module's docstring).

    With raw scores as weights only `blend` (Σ s_j v_j) is kept; with top-1, `maximum` and `chosen` (the
    key holding it, -1 before any).
    """

    maximum: float
    total: float
    blend: np.ndarray
    chosen: int = -1

    def output(self, normaliser: str, V: np.ndarray) -> np.ndarray:
        """The row's output if it stopped here: acc / l for the softmax."""
        if normaliser == "softmax":
            return self.blend / self.total if self.total > 0 else np.zeros_like(self.blend)
        if normaliser == "top1":
            return V[self.chosen].copy() if self.chosen >= 0 else np.zeros_like(self.blend)
        return self.blend.copy()


@dataclass(frozen=True)
class TileStep:
    """One tile of keys `start` … `stop` − 1: its scores (scaled, cooled, masked), whether it was skipped,
    the largest of its scores, the factor exp(m − m') the earlier sums were multiplied by, and the
    running numbers after it."""

    start: int
    stop: int
    scores: np.ndarray
    skipped: bool
    tile_max: float
    rescale: float
    running: Running


def tiles(T: int, size: int) -> list[tuple[int, int]]:
    """The keys 0 … T − 1 in tiles of `size`: (start, stop) pairs, the last one shorter if need be."""
    return [(start, min(start + size, T)) for start in range(0, T, size)]


def tile_scores(head: Head, i: int, start: int, stop: int) -> np.ndarray:
    """Query i's scores against keys start … stop − 1, made as the head makes them: q·k, ÷√d when
    scaling, ÷τ, and −∞ for a key after the query when the mask is on."""
    o = head.options
    S = matmul(head.Q[i : i + 1], head.K[start:stop].T)
    if o.scaling:
        S = scale(S, head.d)
    if o.temperature != 1:
        S = cool(S, o.temperature)
    row = S[0]
    if o.causal:
        row = np.where(np.arange(start, stop) > i, -np.inf, row)
    return row


def start_running(d: int) -> Running:
    """Before any tile: no maximum, nothing summed."""
    return Running(maximum=-math.inf, total=0.0, blend=np.zeros(d))


def online_softmax(running: Running, scores: np.ndarray, values: np.ndarray) -> tuple[Running, float]:
    """One tile into the running softmax: the new maximum, the earlier sums rescaled to it, the tile's
    terms added.  Returns the running numbers after the tile and the rescale factor exp(m − m')."""
    m = max(running.maximum, float(scores.max()))
    rescale = float(exp(running.maximum - m))  # exp(−∞) = 0 before the first tile
    e = exp(scores - m)  # a masked key: exp(−∞) = 0
    total = running.total * rescale + float(e.sum())
    blend = running.blend * rescale + matmul(e[None, :], values)[0]
    return Running(maximum=m, total=total, blend=blend), rescale


def running_top1(running: Running, scores: np.ndarray, start: int) -> Running:
    """One tile into top-1: the largest score so far and its key (a tie keeps the earlier key)."""
    k = int(np.argmax(scores))
    if running.chosen >= 0 and not scores[k] > running.maximum:
        return running
    return Running(maximum=float(scores[k]), total=0.0, blend=running.blend, chosen=start + k)


def running_raw(running: Running, scores: np.ndarray, values: np.ndarray) -> Running:
    """One tile into raw scores as weights: acc += Σ s_j v_j (a masked key weighs 0)."""
    w = np.where(np.isfinite(scores), scores, 0.0)
    return Running(maximum=running.maximum, total=0.0, blend=running.blend + matmul(w[None, :], values)[0])


def attend_in_tiles(head: Head, i: int, size: int) -> list[TileStep]:
    """Query i's row of the head in tiles of `size` keys, one TileStep per tile."""
    steps = []
    running = start_running(head.d)
    normaliser = head.options.normaliser
    for start, stop in tiles(head.T, size):
        scores = tile_scores(head, i, start, stop)
        visible = np.isfinite(scores)
        tile_max = float(scores[visible].max()) if visible.any() else -math.inf
        rescale = 1.0
        if visible.any():
            values = head.V[start:stop]
            if normaliser == "softmax":
                running, rescale = online_softmax(running, scores, values)
            elif normaliser == "top1":
                running = running_top1(running, scores, start)
            else:
                running = running_raw(running, scores, values)
        steps.append(TileStep(start, stop, scores, not visible.any(), tile_max, rescale, running))
    return steps


def blended_size(head: Head, i: int) -> float:
    """The size of what row i's blend adds up: Σ_j |w_ij| · max |v_j|, at least 1 (AGREEMENT's scale)."""
    return max(1.0, float((np.abs(head.weights[i]) * np.abs(head.V).max(axis=1)).sum()))


def tiled_difference(head: Head, i: int, steps: list[TileStep]) -> float:
    """The largest difference between the tiled output and the head's own, as a share of `blended_size`."""
    out = steps[-1].running.output(head.options.normaliser, head.V)
    return float(np.abs(out - head.output[i]).max()) / blended_size(head, i)
