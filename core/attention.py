"""Scaled dot-product attention for one head, one small function per step.

The names follow the chapter: project X into queries, keys and values;
score every query against every key; scale; mask the future; normalise each
row into weights; blend the values.  `attend` runs the whole head and keeps
every intermediate so a reader (or a view) can look at any of them.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from core.options import (  # noqa: F401  (re-exported: the names many callers know)
    LARGEST_ENTRY,
    NORMALISERS,
    OPTION_NAMES,
    AttentionError,
    Options,
    OptionsByName,
    as_finite_number,
    check_option,
)

# What a head too large for float64 is told, by attend here and in static/attention.js.
SCORES_OVERFLOW = (
    "X, the W matrices and the X multiplier are too large together: the scores overflow to infinity"
)

# --- arithmetic the browser repeats bit for bit ---------------------------------
# The static page computes the same head in JavaScript (static/attention.js) and its downloads must be
# byte-identical to the served app's.  numpy's `@` (BLAS) may sum a product in any order, and np.exp and
# Math.exp each round their last bit their own way, so the head uses these two instead: every step is a
# plain IEEE operation done in the same order on both sides.


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A · B, each entry summed left to right over k (the order of the port's loop).

    Leading axes broadcast as with `@`, so a batch of sequences (the training lab's) works too.
    """
    out = np.zeros((*np.broadcast_shapes(A.shape[:-2], B.shape[:-2]), A.shape[-2], B.shape[-1]))
    for k in range(A.shape[-1]):
        out = out + A[..., k, None] * B[..., k, None, :]
    return out


def _from_words(high: int) -> float:
    return struct.unpack(">d", struct.pack(">II", high, 0))[0]


# fdlibm's e_exp.c: reduce x to r = x − k·ln2 with |r| ≤ ln2/2, a rational approximation on r, then × 2^k.
_HALF_LN2, _THREE_HALVES_LN2 = _from_words(0x3FD62E43), _from_words(0x3FF0A2B2)
_LN2_HI, _LN2_LO, _INV_LN2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.44269504088896338700e00
_P = (1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05,
      -1.65339022054652515390e-06, 4.13813679705723846039e-08)
_OVER, _UNDER = 7.09782712893383973096e02, -7.45133219101941108420e02


@np.errstate(all="ignore")
def exp(x) -> np.ndarray:
    """e^x as fdlibm computes it (what most browsers' Math.exp is), in float steps numpy and JS share."""
    x = np.asarray(x, dtype=float)
    a, neg = np.abs(x), x < 0
    mid = (a >= _HALF_LN2) & (a < _THREE_HALVES_LN2)
    far = (a >= _THREE_HALVES_LN2) & np.isfinite(x)
    kf = np.trunc(_INV_LN2 * x + np.where(neg, -0.5, 0.5))
    k = np.where(mid, np.where(neg, -1.0, 1.0), np.where(far, kf, 0.0))
    hi = np.where(mid, x - np.where(neg, -_LN2_HI, _LN2_HI), np.where(far, x - kf * _LN2_HI, x))
    lo = np.where(mid, np.where(neg, -_LN2_LO, _LN2_LO), np.where(far, kf * _LN2_LO, 0.0))
    r = np.where(mid | far, hi - lo, x)
    t = r * r
    c = r - t * (_P[0] + t * (_P[1] + t * (_P[2] + t * (_P[3] + t * _P[4]))))
    y = np.where(k == 0, 1.0 - ((r * c) / (c - 2.0) - r), 1.0 - ((lo - (r * c) / (2.0 - c)) - hi))
    out = np.ldexp(y, np.where(np.isfinite(k), k, 0).astype(int))
    out = np.where(a < 2.0**-28, 1.0 + x, out)
    out = np.where(x > _OVER, np.inf, np.where(x < _UNDER, 0.0, out))
    return np.where(np.isnan(x), np.nan, out)


# --- the six steps -----------------------------------------------------------


def query(X: np.ndarray, W_Q: np.ndarray) -> np.ndarray:
    """What each token is looking for: Q = X · W_Q, shape [T, d]."""
    return matmul(X, W_Q)


def key(X: np.ndarray, W_K: np.ndarray) -> np.ndarray:
    """What each token offers to those looking: K = X · W_K, shape [T, d]."""
    return matmul(X, W_K)


def value(X: np.ndarray, W_V: np.ndarray) -> np.ndarray:
    """What each token hands over if chosen: V = X · W_V, shape [T, d]."""
    return matmul(X, W_V)


def scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """S[i, j] = q_i · k_j, how much token i wants to read token j, shape [T, T]."""
    return matmul(Q, K.T)


def scale(S: np.ndarray, d: int) -> np.ndarray:
    """Divide by √d so the spread of the scores does not grow with head width."""
    return S / math.sqrt(d)


def cool(S: np.ndarray, temperature: float) -> np.ndarray:
    """Divide by the softmax temperature τ: below 1 the weights sharpen, above 1 they flatten."""
    return S / temperature


def causal_mask(T: int) -> np.ndarray:
    """True where the key comes after the query (above the diagonal)."""
    return np.triu(np.ones((T, T), dtype=bool), k=1)


def mask(S: np.ndarray, future: np.ndarray) -> np.ndarray:
    """Replace every score marked in `future` by −∞."""
    return np.where(future, -np.inf, S)


def softmax(S: np.ndarray) -> np.ndarray:
    """Row softmax; −∞ entries get exactly 0.

    Subtracting each row's largest finite score first keeps exp() in range
    for scores as large as ±1e6 and changes nothing mathematically.
    """
    finite = np.isfinite(S)
    row_max = np.max(np.where(finite, S, -np.inf), axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    with np.errstate(over="ignore"):  # S − max ≤ 0, so any overflow is to −∞, whose exp is 0
        shifted = np.where(finite, S - row_max, -np.inf)
    e = exp(shifted)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def raw_weights(S: np.ndarray) -> np.ndarray:
    """The "no softmax" ablation: scores used as weights, masked entries 0."""
    return np.where(np.isfinite(S), S, 0.0)


def top1(S: np.ndarray) -> np.ndarray:
    """The "hard choice" ablation: one-hot on each row's largest score.

    Ties go to the earliest key (np.argmax keeps the first maximum); masked
    entries are −∞ so they are never chosen while any key is visible.
    """
    W = np.zeros_like(S)
    W[np.arange(S.shape[0]), np.argmax(S, axis=-1)] = 1.0
    return W


# One rule per choice of the table's "normaliser" switch (core.options), in its order.
NORMALISE = {"softmax": softmax, "raw": raw_weights, "top1": top1}
assert tuple(NORMALISE) == NORMALISERS, "each choice of the normaliser switch needs its rule here"


def normalise(S: np.ndarray, normaliser: str = "softmax") -> np.ndarray:
    """Turn masked scores into weights with the chosen rule."""
    return NORMALISE[normaliser](S)


def blend(W: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Each token's output is its weighted sum of the values: Out = W · V."""
    return matmul(W, V)


# --- the whole head ----------------------------------------------------------


@dataclass(frozen=True)
class Head(OptionsByName):
    """Everything one forward pass of a head computed, read-only.

    `X` is the input as used (after the X multiplier); `masked` holds −∞
    where the causal mask switched a score off.
    """

    X: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    scores: np.ndarray
    scaled: np.ndarray
    masked: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    options: Options

    @property
    def T(self) -> int:
        return self.X.shape[0]

    @property
    def C(self) -> int:
        return self.X.shape[1]

    @property
    def d(self) -> int:
        return self.Q.shape[1]

    @property
    def future(self) -> np.ndarray:
        """True where the mask hid a score (all False with the mask off)."""
        return np.isneginf(self.masked)


def attend(
    X,
    W_Q,
    W_K,
    W_V,
    *,
    options: Options | None = None,
    **switches,
) -> Head:
    """Run one head on token vectors X [T, C] and keep every step.

    The options come as an Options value, or by name (scaling=False, ...), or both (names win):
    `tied_qk` takes W_K to be W_Q (the "same matrix for both" ablation); `x_scale` multiplies X
    before anything else (the exercise's "X × 4"); `temperature` divides the scores once more after
    the optional ÷√d.  Raises AttentionError, naming the field, for anything it cannot use.
    """
    unknown = set(switches) - set(OPTION_NAMES)
    if unknown:
        raise TypeError(f"attend() got unknown options: {', '.join(sorted(unknown))}")
    options = (options or Options()).replace(**switches) if switches else (options or Options())
    X = as_matrix("X", X)
    W_Q = as_matrix("W_Q", W_Q)
    W_K = as_matrix("W_K", W_K)
    W_V = as_matrix("W_V", W_V)
    C = X.shape[1]
    if W_Q.shape[0] != C:
        raise AttentionError(f"W_Q has shape {W_Q.shape}; expected ({C}, d) to match X's {C} columns")
    d = W_Q.shape[1]
    for name, W in (("W_K", W_K), ("W_V", W_V)):
        if W.shape != (C, d):
            raise AttentionError(f"{name} has shape {W.shape}; expected {(C, d)} to match W_Q")
    o = options

    Xs = X * o.x_scale
    W_K_used = W_Q if o.tied_qk else W_K
    with np.errstate(all="ignore"):
        Q = query(Xs, W_Q)
        K = key(Xs, W_K_used)
        V = value(Xs, W_V)
        S = scores(Q, K)
    if not (np.isfinite(S).all() and np.isfinite(V).all()):
        raise AttentionError(SCORES_OVERFLOW)
    scaled = scale(S, d) if o.scaling else S.copy()
    if o.temperature != 1:
        with np.errstate(over="ignore"):  # reported just below
            scaled = cool(scaled, o.temperature)
    if not np.isfinite(scaled).all():  # only ÷τ with τ < 1 can do it; the softmax would read +∞ as masked
        raise AttentionError(f"{SCORES_OVERFLOW} once divided by τ = {o.temperature:g}")
    masked = mask(scaled, causal_mask(X.shape[0])) if o.causal else scaled.copy()
    weights = normalise(masked, o.normaliser)
    with np.errstate(all="ignore"):  # an overflow here is reported just below
        output = blend(weights, V)
    if not np.isfinite(output).all():
        raise AttentionError("the output overflows to infinity: use smaller values")

    arrays = dict(
        X=Xs,
        W_Q=W_Q,
        W_K=W_K_used,
        W_V=W_V,
        Q=Q,
        K=K,
        V=V,
        scores=S,
        scaled=scaled,
        masked=masked,
        weights=weights,
        output=output,
    )
    for a in arrays.values():
        a.setflags(write=False)
    return Head(**arrays, options=o)


# --- input checks ------------------------------------------------------------


def as_matrix(name: str, values) -> np.ndarray:
    """A fresh float64 2-D copy of `values`, or AttentionError saying what is wrong."""
    try:
        a = np.array(values, dtype=float)
    except (TypeError, ValueError, OverflowError):  # numpy's own words would not help the reader
        raise AttentionError(f"{name} must be a matrix of numbers, its rows all the same length") from None
    if a.ndim != 2:
        raise AttentionError(f"{name} has shape {a.shape}; expected a 2-D matrix")
    if a.shape[0] < 1 or a.shape[1] < 1:
        raise AttentionError(f"{name} has shape {a.shape}; it needs at least one row and one column")
    bad = ~np.isfinite(a)
    if bad.any():
        i, j = (int(k) for k in np.argwhere(bad)[0])
        raise AttentionError(f"{name}[{i}, {j}] is {a[i, j]}; every entry must be a finite number")
    big = np.abs(a) > LARGEST_ENTRY
    if big.any():
        i, j = (int(k) for k in np.argwhere(big)[0])
        raise AttentionError(f"{name}[{i}, {j}] is {a[i, j]:g}; entries must lie within ±{LARGEST_ENTRY:g}")
    return a
