"""Why attention divides by √d, measured on a random head.

Draw query and key entries at random with spread 1, as an untrained head
roughly has.  A score q·k adds up d such products, so its spread grows like
√d, and the softmax of widely spread scores puts nearly all the weight on one
key.  Dividing by √d brings the spread back to about 1 whatever d is, and the
softmax stays soft.  The functions below measure exactly that: the spread of
raw scores, and the sharpness of the softmax (largest weight, entropy) with
and without the division, for one d or a sweep of them; and what a sharp
softmax does to learning: the size of its gradient, the Jacobian ∂w/∂z of
the weights w = softmax(z) with respect to the scores z it is given, which is
diag(w) − w wᵀ and so vanishes as a row becomes one-hot.

Everything is seeded: the numbers come from core/rng.py, a generator with a
JavaScript twin in static/saturation.js, so a seed gives the same numbers
here, in the served page and in the static page.  Trial j uses normals
j·(T + 1)·d … (j + 1)·(T + 1)·d − 1 of the seed's sequence: first its query
(d numbers), then its T keys (d each), so how the trials are batched changes
nothing.
"""

from __future__ import annotations

import functools
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
# A row whose softmax Jacobian is smaller than this (Frobenius norm) passes almost nothing back: a
# uniform row over 64 keys has 0.12, an even split of two keys 0.5.
STUCK = 0.01
# The band drawn around each gradient curve: the rows between these quantiles.
LOW_QUANTILE, HIGH_QUANTILE = 0.1, 0.9
# Rows the notes' figures are averaged over (many_rows): the mean of the largest weight is then sure to
# about ±0.002 (its spread over rows, 0.18, ÷ √8192).
MANY_ROWS = 8_192


@dataclass(frozen=True)
class SaturationPoint:
    """What a random head of width d does, averaged over `trials` queries.

    Each trial is one query scored against its own T fresh keys, all entries
    standard normal.  `score_std` is the spread of the raw scores q·k (about
    √d); `scaled_score_std` the spread after ÷√d (about 1).  `max_weight_*`
    is the mean of the largest softmax weight per query (1/T is uniform,
    1 is one-hot) and `entropy_*` the mean entropy in nats (ln T is uniform,
    0 is one-hot); `raw` means softmax of q·k, `scaled` softmax of q·k/√d.
    `gradient_*` is the mean size (Frobenius norm) of each row's softmax
    Jacobian ∂w/∂z, z the scores the softmax is given (0 passes nothing back);
    `*_spread` is how much the rows differ about a mean (their standard
    deviation), `gradient_*_low` and `_high` the LOW_QUANTILE and
    HIGH_QUANTILE of the rows' gradient sizes, and `stuck_*` the share of rows
    whose gradient is below STUCK; `least_gradient_row` the trial (from 0)
    whose row passes back least without ÷√d.
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
    max_weight_raw_spread: float
    max_weight_scaled_spread: float
    gradient_raw: float
    gradient_scaled: float
    gradient_raw_spread: float
    gradient_scaled_spread: float
    gradient_raw_low: float
    gradient_raw_high: float
    gradient_scaled_low: float
    gradient_scaled_high: float
    stuck_raw: float
    stuck_scaled: float
    uniform_gradient: float
    least_gradient_row: int

    @property
    def std_over_sqrt_d(self) -> float:
        """score_std ÷ √d: close to 1 is the chapter's claim."""
        return self.score_std / self.sqrt_d


def entropy(W: np.ndarray) -> np.ndarray:
    """Entropy in nats of each row of weights; zero weights contribute nothing."""
    logs = np.zeros_like(W)
    np.log(W, out=logs, where=W > 0)
    return -(W * logs).sum(axis=-1)


# --- the softmax's gradient --------------------------------------------------------


def jacobian(w: np.ndarray) -> np.ndarray:
    """∂w/∂z for one row of weights w = softmax(z): diag(w) − w wᵀ, shape [T, T].

    Entry (i, j) says how much weight i moves when score j does: w_i (1 − w_i) on the
    diagonal, −w_i w_j off it.  A one-hot row makes every entry 0: nothing flows back.
    """
    w = np.asarray(w, dtype=float)
    return np.diag(w) - np.outer(w, w)


def others(W: np.ndarray) -> np.ndarray:
    """For each entry of each row, the sum of the row's other entries.

    Added up from both ends, never as total − entry: for a weight within 1e-12 of 1, 1 − w
    would keep only a few digits of the tiny weights the gradient is made of.
    """
    zero = np.zeros((*W.shape[:-1], 1))
    before = np.concatenate([zero, np.cumsum(W[..., :-1], axis=-1)], axis=-1)
    after = np.concatenate([np.cumsum(W[..., :0:-1], axis=-1)[..., ::-1], zero], axis=-1)
    return before + after


def jacobian_size(W: np.ndarray) -> np.ndarray:
    """The Frobenius norm of each row's softmax Jacobian, from its weights.

    ‖J‖² = Σ_i (w_i (1 − w_i))² + Σ_{i≠j} (w_i w_j)² = Σ_i w_i² ((1 − w_i)² + Σ_{j≠i} w_j²),
    with 1 − w_i and Σ_{j≠i} w_j² taken as sums of the other entries (`others`), so a row
    within a hair of one-hot keeps its tiny size instead of rounding noise.
    """
    W = np.asarray(W, dtype=float)
    rest = others(W)
    return np.sqrt((W * W * (rest * rest + others(W * W))).sum(axis=-1))


def quantile(values, q: float) -> float:
    """The q-quantile of `values` (0 ≤ q ≤ 1), by linear interpolation between sorted values.

    numpy's default rule, written out so static/saturation.js can repeat it step for step.
    """
    a = np.sort(np.asarray(values, dtype=float))
    h = (len(a) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(a) - 1)
    return float(a[lo] + (h - lo) * (a[hi] - a[lo]))


def mean_and_spread(values) -> tuple[float, float]:
    """The mean of `values` and their spread about it (the population standard deviation)."""
    a = np.asarray(values, dtype=float)
    mean = float(a.sum() / a.size)
    return mean, float(math.sqrt(np.square(a - mean).sum() / a.size))


@dataclass(frozen=True)
class RowGradient:
    """One row's softmax, worked out: its weights and its Jacobian's extremes.

    `largest` is the Jacobian's largest entry, ∂w_i/∂z_i = w_i (1 − w_i) at i = `largest_at`;
    `smallest` its most negative, ∂w_i/∂z_j = −w_i w_j for the two largest weights
    (`smallest_at` = (i, j); 0 at (0, 0) for a row of one key); `size` its Frobenius norm.
    """

    weights: np.ndarray
    largest: float
    largest_at: int
    smallest: float
    smallest_at: tuple[int, int]
    size: float


def row_gradient(w) -> RowGradient:
    """`RowGradient` of one row of softmax weights (ties go to the earlier key)."""
    w = np.asarray(w, dtype=float)
    diagonal = w * others(w)
    i = int(np.argmax(diagonal))
    if w.size < 2:
        return RowGradient(w, float(diagonal[0]), 0, 0.0, (0, 0), float(jacobian_size(w)))
    a = int(np.argmax(w))
    b = int(np.argmax(np.where(np.arange(w.size) == a, -np.inf, w)))
    return RowGradient(w, float(diagonal[i]), i, float(-w[a] * w[b]), (a, b), float(jacobian_size(w)))


@dataclass(frozen=True)
class WorkedRow:
    """Row `row` (0-based) of a seeded random head: its raw scores q·k and its softmax worked out
    without ÷√d (`raw`) and with it (`scaled`)."""

    d: int
    T: int
    seed: int
    row: int
    scores: np.ndarray
    raw: RowGradient
    scaled: RowGradient


def worked_row(d: int, seed: int = 0, T: int = DEFAULT_T, row: int = 0) -> WorkedRow:
    """Trial `row` of `saturation_point(d, seed, T, …)`: the same query and keys, one row in the open."""
    d = as_count("d", d, LARGEST_D)
    T = as_count("T", T, LARGEST_T)
    seed = as_seed(seed)
    row = as_count("row", row + 1, LARGEST_TRIALS) - 1
    block = normals(seed, row * (T + 1) * d, (row + 1) * (T + 1) * d).reshape(T + 1, d)
    S = block[1:] @ block[0]
    return WorkedRow(
        d=d,
        T=T,
        seed=seed,
        row=row,
        scores=S,
        raw=row_gradient(softmax(S[None, :])[0]),
        scaled=row_gradient(softmax(S[None, :] / math.sqrt(d))[0]),
    )


@dataclass(frozen=True)
class ManyRows:
    """The largest weight and the gradient's size over `rows` random rows, without and with ÷√d.

    Each is (mean, spread over the rows); `stuck_*` the share of rows passing back less than STUCK.
    """

    d: int
    T: int
    rows: int
    seed: int
    max_weight_raw: tuple[float, float]
    max_weight_scaled: tuple[float, float]
    gradient_raw: tuple[float, float]
    gradient_scaled: tuple[float, float]
    stuck_raw: float
    stuck_scaled: float


@functools.lru_cache(maxsize=8)
def many_rows(d: int, T: int = DEFAULT_T, rows: int = MANY_ROWS, seed: int = 0) -> ManyRows:
    """What the tab measures, over many more rows than it draws: the figure the notes quote.

    Drawn cheaply but exactly: for one query q and keys with independent standard-normal entries,
    the scores q·k_j are independent normals of spread |q|, so a row of T scores is |q| times T
    standard normals (d + T numbers a row instead of (T + 1)·d), from the same generator.
    """
    block = normals(seed, 0, rows * (d + T)).reshape(rows, d + T)
    S = np.sqrt(np.square(block[:, :d]).sum(axis=1, keepdims=True)) * block[:, d:]

    def softmax(Z):  # numpy's own exp: these figures are Python's alone (the page is given them)
        e = np.exp(Z - Z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    W_raw, W_scaled = softmax(S), softmax(S / math.sqrt(d))
    g_raw, g_scaled = jacobian_size(W_raw), jacobian_size(W_scaled)
    return ManyRows(
        d=d,
        T=T,
        rows=rows,
        seed=seed,
        max_weight_raw=mean_and_spread(W_raw.max(axis=-1)),
        max_weight_scaled=mean_and_spread(W_scaled.max(axis=-1)),
        gradient_raw=mean_and_spread(g_raw),
        gradient_scaled=mean_and_spread(g_scaled),
        stuck_raw=float((g_raw < STUCK).mean()),
        stuck_scaled=float((g_scaled < STUCK).mean()),
    )


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
    ent_raw = ent_scaled = 0.0
    per_row: dict[str, list] = {"max_raw": [], "max_scaled": [], "grad_raw": [], "grad_scaled": []}
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
        per_row["max_raw"].append(W_raw.max(axis=-1))
        per_row["max_scaled"].append(W_scaled.max(axis=-1))
        per_row["grad_raw"].append(jacobian_size(W_raw))
        per_row["grad_scaled"].append(jacobian_size(W_scaled))
        ent_raw += float(entropy(W_raw).sum())
        ent_scaled += float(entropy(W_scaled).sum())

    mean = total / n
    # Population spread of all scores pooled; max(…, 0) guards rounding when T·trials is 1.
    score_std = math.sqrt(max(total_sq / n - mean * mean, 0.0))
    rows = {name: np.concatenate(parts) for name, parts in per_row.items()}
    max_raw, max_raw_spread = mean_and_spread(rows["max_raw"])
    max_scaled, max_scaled_spread = mean_and_spread(rows["max_scaled"])
    grad_raw, grad_raw_spread = mean_and_spread(rows["grad_raw"])
    grad_scaled, grad_scaled_spread = mean_and_spread(rows["grad_scaled"])
    return SaturationPoint(
        d=d,
        T=T,
        trials=trials,
        seed=seed,
        sqrt_d=sqrt_d,
        score_std=score_std,
        scaled_score_std=score_std / sqrt_d,
        max_weight_raw=max_raw,
        max_weight_scaled=max_scaled,
        entropy_raw=ent_raw / trials,
        entropy_scaled=ent_scaled / trials,
        uniform_entropy=math.log(T),
        max_weight_raw_spread=max_raw_spread,
        max_weight_scaled_spread=max_scaled_spread,
        gradient_raw=grad_raw,
        gradient_scaled=grad_scaled,
        gradient_raw_spread=grad_raw_spread,
        gradient_scaled_spread=grad_scaled_spread,
        gradient_raw_low=quantile(rows["grad_raw"], LOW_QUANTILE),
        gradient_raw_high=quantile(rows["grad_raw"], HIGH_QUANTILE),
        gradient_scaled_low=quantile(rows["grad_scaled"], LOW_QUANTILE),
        gradient_scaled_high=quantile(rows["grad_scaled"], HIGH_QUANTILE),
        stuck_raw=float((rows["grad_raw"] < STUCK).mean()),
        stuck_scaled=float((rows["grad_scaled"] < STUCK).mean()),
        # a uniform row, w = 1/T everywhere: ‖J‖² = T·(1/T)²·((1 − 1/T)² + (T − 1)/T²) = (T − 1)/T²
        uniform_gradient=math.sqrt(T - 1) / T,
        least_gradient_row=int(np.argmin(rows["grad_raw"])),
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
    gradient_raw: np.ndarray
    gradient_scaled: np.ndarray
    gradient_raw_low: np.ndarray
    gradient_raw_high: np.ndarray
    gradient_scaled_low: np.ndarray
    gradient_scaled_high: np.ndarray
    stuck_raw: np.ndarray
    stuck_scaled: np.ndarray
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
        "gradient_raw",
        "gradient_scaled",
        "gradient_raw_low",
        "gradient_raw_high",
        "gradient_scaled_low",
        "gradient_scaled_high",
        "stuck_raw",
        "stuck_scaled",
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
