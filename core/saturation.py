"""Why attention divides by √d, measured on a random head.

Draw query and key entries at random with spread 1, as an untrained head
roughly has.  A score q·k adds up d such products, so its spread grows like
√d, and the softmax of widely spread scores puts nearly all the weight on one
key.  Dividing by √d brings the spread back to about 1 whatever d is, and the
softmax stays soft.  The functions below measure exactly that: the spread of
raw scores, and the sharpness of the softmax (largest weight, entropy) with
and without the division, for one d or a sweep of them.

Everything is seeded: the numbers come from core/rng.py, a generator with a
JavaScript twin in static/saturation.js, so a seed gives the same numbers
here, in the served page and in the static page.  Trial j uses normals
j·(T + 1)·d … (j + 1)·(T + 1)·d − 1 of the seed's sequence: first its query
(d numbers), then its T keys (d each), so how the trials are batched changes
nothing.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from core.attention import AttentionError, softmax
from core.cost import as_count
from core.rng import LARGEST_SEED, normals

LARGEST_D = 4096
LARGEST_T = 4096
LARGEST_TRIALS = 100_000
# Random numbers one call may draw (trials · (T + 1) · d).  About a second of
# work; beyond it a live view would stall, so such requests are refused.
LARGEST_DRAWS = 50_000_000
# Rows of keys drawn at once, so memory stays near 32 MB whatever the sizes.
CHUNK_NUMBERS = 4_000_000

DEFAULT_T = 64
DEFAULT_TRIALS = 256
DEFAULT_WIDTHS = (2, 4, 8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True)
class SaturationPoint:
    """What a random head of width d does, averaged over `trials` queries.

    Each trial is one query scored against its own T fresh keys, all entries
    standard normal.  `score_std` is the spread of the raw scores q·k (about
    √d); `scaled_score_std` the spread after ÷√d (about 1).  `max_weight_*`
    is the mean of the largest softmax weight per query (1/T is uniform,
    1 is one-hot) and `entropy_*` the mean entropy in nats (ln T is uniform,
    0 is one-hot); `raw` means softmax of q·k, `scaled` softmax of q·k/√d.
    """

    d: int
    T: int
    trials: int
    seed: int
    sqrt_d: float
    score_std: float
    scaled_score_std: float
    max_weight_raw: float
    max_weight_scaled: float
    entropy_raw: float
    entropy_scaled: float
    uniform_entropy: float

    @property
    def std_over_sqrt_d(self) -> float:
        """score_std ÷ √d: close to 1 is the chapter's claim."""
        return self.score_std / self.sqrt_d


def entropy(W: np.ndarray) -> np.ndarray:
    """Entropy in nats of each row of weights; zero weights contribute nothing."""
    logs = np.zeros_like(W)
    np.log(W, out=logs, where=W > 0)
    return -(W * logs).sum(axis=-1)


def saturation_point(
    d: int, seed: int = 0, T: int = DEFAULT_T, trials: int = DEFAULT_TRIALS
) -> SaturationPoint:
    """Measure score spread and softmax sharpness for a random head of width d.

    Raises AttentionError, naming the field, for d or T outside 1..4096,
    a bad seed or trial count, or a request too large to compute quickly.
    """
    d = as_count("d", d, LARGEST_D)
    T = as_count("T", T, LARGEST_T)
    trials = as_count("trials", trials, LARGEST_TRIALS)
    seed = as_seed(seed)
    draws = trials * (T + 1) * d
    if draws > LARGEST_DRAWS:
        raise AttentionError(
            f"trials is {trials}; trials × (T + 1) × d = {draws:,} random numbers, "
            f"more than the {LARGEST_DRAWS:,} allowed: use fewer trials, a smaller T or a smaller d"
        )

    sqrt_d = math.sqrt(d)
    batch = max(1, CHUNK_NUMBERS // ((T + 1) * d))
    n = 0
    total = total_sq = 0.0
    max_raw = max_scaled = ent_raw = ent_scaled = 0.0
    for start in range(0, trials, batch):
        b = min(batch, trials - start)
        block = normals(seed, start * (T + 1) * d, (start + b) * (T + 1) * d).reshape(b, T + 1, d)
        q, K = block[:, 0, :], block[:, 1:, :]
        S = np.einsum("bd,btd->bt", q, K)  # one row of T scores per trial
        n += S.size
        total += float(S.sum())
        total_sq += float(np.square(S).sum())
        W_raw = softmax(S)
        W_scaled = softmax(S / sqrt_d)
        max_raw += float(W_raw.max(axis=-1).sum())
        max_scaled += float(W_scaled.max(axis=-1).sum())
        ent_raw += float(entropy(W_raw).sum())
        ent_scaled += float(entropy(W_scaled).sum())

    mean = total / n
    # Population spread of all scores pooled; max(…, 0) guards rounding when T·trials is 1.
    score_std = math.sqrt(max(total_sq / n - mean * mean, 0.0))
    return SaturationPoint(
        d=d,
        T=T,
        trials=trials,
        seed=seed,
        sqrt_d=sqrt_d,
        score_std=score_std,
        scaled_score_std=score_std / sqrt_d,
        max_weight_raw=max_raw / trials,
        max_weight_scaled=max_scaled / trials,
        entropy_raw=ent_raw / trials,
        entropy_scaled=ent_scaled / trials,
        uniform_entropy=math.log(T),
    )


@dataclass(frozen=True)
class SaturationCurve:
    """`saturation_point` for each width in `d`, as read-only columns.

    Every column is a float array (`d` is int) in the order the widths were
    given; `columns()` gives plain lists, e.g. for a Bokeh ColumnDataSource.
    """

    d: np.ndarray
    sqrt_d: np.ndarray
    score_std: np.ndarray
    scaled_score_std: np.ndarray
    max_weight_raw: np.ndarray
    max_weight_scaled: np.ndarray
    entropy_raw: np.ndarray
    entropy_scaled: np.ndarray
    T: int
    trials: int
    seed: int
    uniform_entropy: float

    COLUMNS = (
        "d",
        "sqrt_d",
        "score_std",
        "scaled_score_std",
        "max_weight_raw",
        "max_weight_scaled",
        "entropy_raw",
        "entropy_scaled",
    )

    def columns(self) -> dict[str, list]:
        """The columns as a dict of lists, one entry per width."""
        return {name: getattr(self, name).tolist() for name in self.COLUMNS}


def saturation_curve(
    ds=DEFAULT_WIDTHS, seed: int = 0, T: int = DEFAULT_T, trials: int = DEFAULT_TRIALS
) -> SaturationCurve:
    """Sweep head widths: one `saturation_point` per d, all with the same seed."""
    try:
        widths = [as_count("d", d, LARGEST_D) for d in ds]
    except TypeError:
        raise AttentionError(f"ds is {ds!r}; expected a list of head widths") from None
    if not widths:
        raise AttentionError("ds is empty; expected at least one head width")
    points = [saturation_point(d, seed=seed, T=T, trials=trials) for d in widths]

    def column(name: str, dtype=float) -> np.ndarray:
        a = np.array([getattr(p, name) for p in points], dtype=dtype)
        a.setflags(write=False)
        return a

    return SaturationCurve(
        d=column("d", int),
        **{name: column(name) for name in SaturationCurve.COLUMNS[1:]},
        T=points[0].T,
        trials=points[0].trials,
        seed=points[0].seed,
        uniform_entropy=points[0].uniform_entropy,
    )


def as_seed(value) -> int:
    """A seed for core.rng: a whole number from 0 to 2³² − 1, else AttentionError."""
    expected = f"expected a whole number from 0 to {LARGEST_SEED:,}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise AttentionError(f"seed is {value!r}; {expected}")
    if not float(value).is_integer() or not 0 <= value <= LARGEST_SEED:
        raise AttentionError(f"seed is {value!r}; {expected}")
    return int(value)
