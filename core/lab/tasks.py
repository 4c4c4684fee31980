"""The lab's tasks: batches of token sequences and the next-token targets the model is trained on.

Each task takes a stream of draws (core.rng.Draws) and returns (tokens [B, T], targets [B, T]); a target
of −1 means "no prediction here". Every random number is taken from the stream in the order written here
(arrays filled row by row), so a port drawing the same numbers builds the same batches.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from core.rng import Draws


def previous_token_task(draws: Draws, B: int, V: int, T: int):
    """Random tokens; at position i the answer is the token at i−1, which only reading i−1 can give."""
    x = draws.below(V, (B, T))
    y = np.full((B, T), -1)
    y[:, 1:] = x[:, :-1]
    return x, y


def repeated_halves_task(draws: Draws, B: int, V: int, T: int):
    """Random first half, repeated as the second; predict the next token. Only the repeat is predictable."""
    h = T // 2
    first = draws.below(V, (B, h))
    x = np.concatenate([first, first], axis=1)
    y = np.full((B, T), -1)
    y[:, :-1] = x[:, 1:]
    return x, y


N_TRIGGERS = 3
TRIGGER_SHARE = 0.2  # of the next-token mass after an ordinary token; with less, second occurrences are rare
BIGRAM_SEED = 1234  # one table for every run and seed: it is the language, not the sample


@lru_cache(maxsize=4)
def bigram_table(V: int) -> np.ndarray:
    """A fixed random bigram table, the same for every sequence (Bietti et al.'s "global" knowledge).

    Row a gives the chances of each token after a. Ordinary tokens get weights u⁴ (u uniform: a few likely
    successors and many unlikely ones, about as peaked as a Dirichlet(½) row), scaled to 1 − TRIGGER_SHARE;
    the triggers share the rest equally, so each shows up about every 15 tokens."""
    u = Draws(BIGRAM_SEED).uniform((V, V))
    w = (u * u) * (u * u)
    w[:, :N_TRIGGERS] = 0.0
    sums = w[:, 0]
    for k in range(1, V):  # each row's sum, added in order
        sums = sums + w[:, k]
    table = w * ((1 - TRIGGER_SHARE) / sums)[:, None]
    table[:, :N_TRIGGERS] = TRIGGER_SHARE / N_TRIGGERS
    table.setflags(write=False)
    return table


def triggers_task(draws: Draws, B: int, V: int, T: int, n_triggers: int = N_TRIGGERS):
    """Bigram sequences with trigger tokens (Bietti et al. 2023, "Birth of a Transformer").

    Tokens 0..n_triggers−1 are triggers. Each sequence draws its own output token for each trigger; after
    a trigger always comes its output, everything else follows the fixed bigram table. The outputs change
    from sequence to sequence, so after a trigger's second occurrence the only way to predict is to look up
    what followed it last time: the induction job.

    Draws, in order: the outputs [B, n_triggers], the first tokens [B], then one uniform u per later
    position [B, T − 1]; the next token after a is the number of entries of a's running sum (the table's
    row added left to right) that are below u.
    """
    cdf = np.cumsum(bigram_table(V), axis=1)  # a running sum: each entry the one before plus the next term
    outputs = n_triggers + draws.below(V - n_triggers, (B, n_triggers))
    x = np.zeros((B, T), dtype=np.int64)
    x[:, 0] = draws.below(V, (B,))
    u = draws.uniform((B, T - 1))
    for t in range(1, T):
        prev = x[:, t - 1]
        nxt = np.minimum((u[:, t - 1, None] > cdf[prev]).sum(axis=1), V - 1)
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
