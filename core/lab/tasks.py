"""The lab's tasks: batches of token sequences and the next-token targets the model is trained on.

Each task returns (tokens [B, T], targets [B, T]); a target of −1 means "no prediction here".
"""

from __future__ import annotations

import numpy as np


def previous_token_task(rng, B: int, V: int, T: int):
    """Random tokens; at position i the answer is the token at i−1, which only reading i−1 can give."""
    x = rng.integers(0, V, (B, T))
    y = np.full((B, T), -1)
    y[:, 1:] = x[:, :-1]
    return x, y


def repeated_halves_task(rng, B: int, V: int, T: int):
    """Random first half, repeated as the second; predict the next token. Only the repeat is predictable."""
    h = T // 2
    first = rng.integers(0, V, (B, h))
    x = np.concatenate([first, first], axis=1)
    y = np.full((B, T), -1)
    y[:, :-1] = x[:, 1:]
    return x, y


N_TRIGGERS = 3
TRIGGER_SHARE = 0.2  # of the next-token mass after an ordinary token; with less, second occurrences are rare


def bigram_chain(V: int, seed: int = 1234) -> np.ndarray:
    """A fixed random bigram table, the same for every sequence (Bietti et al.'s "global" knowledge)."""
    rng = np.random.default_rng(seed)
    table = rng.dirichlet(np.full(V, 0.5), size=V)
    table[:, :N_TRIGGERS] = 0.0  # triggers get a fixed share, so each shows up about every 15 tokens
    table *= (1 - TRIGGER_SHARE) / table.sum(axis=1, keepdims=True)
    table[:, :N_TRIGGERS] += TRIGGER_SHARE / N_TRIGGERS
    return table


def triggers_task(rng, B: int, V: int, T: int, n_triggers: int = N_TRIGGERS):
    """Bigram sequences with trigger tokens (Bietti et al. 2023, "Birth of a Transformer").

    Tokens 0..n_triggers−1 are triggers. Each sequence draws its own output token for each trigger; after
    a trigger always comes its output, everything else follows the fixed bigram table. The outputs change
    from sequence to sequence, so after a trigger's second occurrence the only way to predict is to look up
    what followed it last time: the induction job.
    """
    table = bigram_chain(V)
    outputs = rng.integers(n_triggers, V, (B, n_triggers))
    cdf = np.cumsum(table, axis=1)
    x = np.zeros((B, T), dtype=np.int64)
    x[:, 0] = rng.integers(0, V, B)
    u = rng.random((B, T))
    for t in range(1, T):
        prev = x[:, t - 1]
        nxt = np.minimum((u[:, t, None] > cdf[prev]).sum(axis=1), V - 1)
        is_trig = prev < n_triggers
        nxt[is_trig] = outputs[is_trig, prev[is_trig]]
        x[:, t] = nxt
    y = np.full((B, T), -1)
    y[:, :-1] = x[:, 1:]
    return x, y


TASKS = {
    "previous-token": previous_token_task,
    "repeated-halves": repeated_halves_task,
    "triggers": triggers_task,
}
