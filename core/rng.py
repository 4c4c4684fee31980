"""A small seeded generator of standard normal numbers, the same in Python and JavaScript.

The saturation experiment (core/saturation.py) draws its random heads from
here, and static/saturation.js draws them from its own copy of these few
lines, so the served page and the static page show the very same numbers
for a seed.  numpy's generators cannot be reproduced in a browser; this one
is two lines of integer arithmetic there.

Uniforms come from mulberry32, a 32-bit generator whose state only ever
advances by a constant, so the k-th number can be computed directly from
the seed and k (here for many k at once, with numpy).  Normals come from
them by the Box-Muller transform, two per pair of uniforms:

    u₁, u₂ = uniform(2p), uniform(2p + 1)
    r = √(−2 ln u₁),  θ = 2π u₂
    normal(2p) = r cos θ,  normal(2p + 1) = r sin θ

Good enough to show that spreads grow like √d; not for cryptography or
careful statistics (32 bits of resolution per uniform).
"""

from __future__ import annotations

import numpy as np

GOLDEN = 0x6D2B79F5  # mulberry32's step
LARGEST_SEED = 2**32 - 1  # the generator's state is 32 bits


def mulberry32(seed: int, k: np.ndarray) -> np.ndarray:
    """The k-th 32-bit output (k = 0, 1, …) of mulberry32 started from `seed`, for an array of k < 2³².

    Its state after k + 1 steps is seed + (k + 1)·GOLDEN (mod 2³²); the rest
    mixes that state.  uint32 arithmetic wraps as JavaScript's Math.imul does.
    """
    state = k.astype(np.uint32)
    state += np.uint32(1)
    state *= np.uint32(GOLDEN)
    state += np.uint32(seed)
    t = state >> np.uint32(15)
    t ^= state
    state |= np.uint32(1)
    t *= state  # t = (s ^ s >> 15) · (s | 1)
    u = t >> np.uint32(7)
    u ^= t
    u *= t | np.uint32(61)
    u += t
    u ^= t  # u = (t + (t ^ t >> 7) · (t | 61)) ^ t
    u ^= u >> np.uint32(14)
    return u


def uniform(seed: int, k: np.ndarray) -> np.ndarray:
    """The k-th uniform number in (0, 1): never 0, so its logarithm is finite."""
    return (mulberry32(seed, k).astype(np.float64) + 0.5) / 4294967296.0


def normals(seed: int, start: int, stop: int) -> np.ndarray:
    """Standard normal numbers start, start + 1, …, stop − 1 of the seed's sequence."""
    first, last = start // 2, (stop + 1) // 2  # the Box-Muller pairs that cover them
    pairs = np.arange(first, last, dtype=np.int64)
    u1 = uniform(seed, 2 * pairs)
    u2 = uniform(seed, 2 * pairs + 1)
    r = np.sqrt(-2.0 * np.log(u1))
    theta = 2.0 * np.pi * u2
    out = np.empty(2 * len(pairs))
    out[0::2] = r * np.cos(theta)
    out[1::2] = r * np.sin(theta)
    offset = start - 2 * first
    return out[offset : offset + (stop - start)]


class Draws:
    """Uniform numbers taken one after another from a seed's sequence: the n-th taken is uniform(seed, n).

    The training lab draws its initial weights and its tasks' tokens from these (core/train.py,
    core/lab/tasks.py), filling arrays in row-major order, so a port that takes the same numbers in the
    same order trains the very same model.
    """

    def __init__(self, seed: int):
        self.seed = int(seed) % 2**32
        self.taken = 0

    def uniform(self, shape) -> np.ndarray:
        """The next numbers in (0, 1), as an array of `shape`."""
        n = int(np.prod(shape, dtype=np.int64))
        k = np.arange(self.taken, self.taken + n, dtype=np.int64)
        self.taken += n
        return uniform(self.seed, k).reshape(shape)

    def below(self, n: int, shape) -> np.ndarray:
        """The next whole numbers in 0 … n − 1 (each ⌊u · n⌋ of the next uniform u)."""
        return np.floor(self.uniform(shape) * n).astype(np.int64)


def seed_for(seed: int, purpose: int) -> int:
    """A seed of its own for each use of a run's seed (weights, batches, held-out data, …): mulberry32's
    output number `purpose` from `seed`, so neighbouring seeds give unrelated sequences."""
    return int(mulberry32(int(seed) % 2**32, np.array([purpose]))[0])
