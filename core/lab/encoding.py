"""How the lab's numbers are written: rounded, and matrices as half-precision floats in base64.

Both pages inline the lab's data files, so they must stay small: the lab shows two decimals, and a
float16 keeps three significant digits in 2.7 characters of base64 (~7 as decimals).
"""

from __future__ import annotations

import base64
import math

import numpy as np

from core.attention import Head, attend
from core.options import Options

CURVE_POINTS = 100


def f16(a) -> dict:
    """A matrix as half-precision floats in base64 (2.7 characters a number instead of ~7 as decimals).
    Half precision keeps 3 significant digits, more than the lab prints; readers decode it exactly."""
    a = np.asarray(a, dtype=float)
    return {"shape": list(a.shape), "f16": base64.b64encode(a.astype("<f2").tobytes()).decode("ascii")}


def unf16(m: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(m["f16"]), dtype="<f2").astype(float).reshape(m["shape"])


def sig3(a) -> list:
    a = np.asarray(a, dtype=float)
    return [float(f"{v:.3g}") for v in a.ravel()] if a.ndim <= 1 else [sig3(r) for r in a]


def curve(losses: np.ndarray, points: int = CURVE_POINTS) -> dict:
    """The training loss averaged over windows of `every` steps (one batch is noisy), about `points` of
    them: window j holds steps j·every … (j + 1)·every − 1 and is drawn at step (j + 1)·every
    (`curve_steps`)."""
    every = max(1, math.ceil(len(losses) / points))
    windows = [losses[i : i + every] for i in range(0, len(losses), every)]
    return {"every": every, "loss": sig3([w.mean() for w in windows])}


def curve_steps(curve: dict, steps: int) -> list[int]:
    """The step at which each point of a curve is drawn: the end of its window."""
    return [min((j + 1) * curve["every"], steps) for j in range(len(curve["loss"]))]


def snapshot_head(snap: dict, switches: dict) -> Head:
    """The head a snapshot holds (its input X on the probe and its W_Q, W_K, W_V), computed by the core with
    the run's switches."""
    m = [unf16(snap[k]) for k in ("X", "W_Q", "W_K", "W_V")]
    return attend(*m, options=Options(**switches))
