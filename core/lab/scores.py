"""What a head does, as numbers: how much of its weight goes where, averaged over queries.

Each takes the head's weights A [B, T, T] (query × key, for a batch of sequences) and returns a mean
weight in 0..1 (raw weights can leave that range).
"""

from __future__ import annotations

import numpy as np


def previous_token_score(A: np.ndarray) -> float:
    """Mean weight a query puts on the position just before it (queries 1..T−1)."""
    return float(np.diagonal(A, offset=-1, axis1=-2, axis2=-1).mean())


def earlier_copies(tokens: np.ndarray):
    """same[b, i, j]: j < i holds the token at i."""
    T = tokens.shape[1]
    same = tokens[:, :, None] == tokens[:, None, :]
    return same & np.tril(np.ones((T, T), dtype=bool), k=-1)


def duplicate_token_score(A: np.ndarray, tokens: np.ndarray) -> float:
    """Mean total weight on earlier copies of the query's own token (queries that have one)."""
    same = earlier_copies(tokens)
    has = same.any(axis=-1)
    return float((A * same).sum(axis=-1)[has].mean()) if has.any() else float("nan")


def induction_score(A: np.ndarray, tokens: np.ndarray, queries: np.ndarray | None = None) -> float:
    """Mean total weight on the tokens that followed earlier copies of the query's token (only at
    `queries`, a [B, T] mask, when given)."""
    same = earlier_copies(tokens)
    after = np.zeros_like(same)
    after[:, :, 1:] = same[:, :, :-1]  # j+1 for each earlier copy j (j+1 ≤ i)
    has = after.any(axis=-1) if queries is None else after.any(axis=-1) & queries
    return float((A * after).sum(axis=-1)[has].mean()) if has.any() else float("nan")


def offset_score(A: np.ndarray, h: int) -> float:
    """Mean weight from each query i ≥ h on position i − h + 1, where the repeated halves' induction target
    sits. Measured on sequences that do not repeat, a high value means the head finds that spot by
    position alone (a positional look-up), not by matching tokens."""
    return float(np.diagonal(A, offset=-(h - 1), axis1=-2, axis2=-1)[..., 1:].mean())


def visible_rows(A: np.ndarray) -> np.ndarray:
    """The queries that see more than one key: all but the first (with the mask it sees only itself)."""
    return A[:, 1:, :]


def largest_weight(A: np.ndarray) -> float:
    """Mean of each row's largest weight (queries 1..T−1): near 1, the head reads one key; near 1/(keys
    seen), it spreads its weight evenly."""
    return float(visible_rows(A).max(axis=-1).mean())


def self_first(A: np.ndarray) -> float:
    """The share of queries (1..T−1) that put their largest weight on themselves."""
    rows = visible_rows(A)
    i = np.arange(1, A.shape[1])
    return float((rows.argmax(axis=-1) == i).mean())


def late_to_early_output(O: np.ndarray) -> float:
    """The head's output size at the last third of the positions over its size at the first third (after
    position 0): about 1 when a query's output does not depend on how many keys it sees."""
    size = np.sqrt((O * O).sum(axis=-1)).mean(axis=0)  # [T]: mean length of the output at each position
    third = max(1, (len(size) - 1) // 3)
    return float(size[-third:].mean() / size[1 : 1 + third].mean())
