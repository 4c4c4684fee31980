"""One attention head in plain numpy: the computation Chapter 3 walks through.

Nothing here imports Panel or Bokeh, so the command line, the tests, the
served widget and the static export's parity check all share one source.
"""

from core.attention import (
    NORMALISERS,
    AttentionError,
    Head,
    attend,
    blend,
    causal_mask,
    key,
    mask,
    normalise,
    query,
    raw_weights,
    scale,
    scores,
    softmax,
    top1,
    value,
)

__all__ = [
    "NORMALISERS",
    "AttentionError",
    "Head",
    "attend",
    "blend",
    "causal_mask",
    "key",
    "mask",
    "normalise",
    "query",
    "raw_weights",
    "scale",
    "scores",
    "softmax",
    "top1",
    "value",
]
