"""What one attention layer costs when the context gets long.

Plain arithmetic on a handful of model shapes: how big the T × T score
matrix is, how many floating-point operations Q·Kᵀ takes compared with the
Q/K/V projections, where those two cross (and where Q·Kᵀ with the blend A·V
crosses all four projections, the output's too), what generating one more
token costs once past keys and values are cached, and how little memory the
scores need when they are computed in tiles (FlashAttention) instead of
stored whole.  Everything is counted per query head, then multiplied up to a
layer and to the whole model.

Conventions: one multiply-add is 2 FLOPs; bytes use decimal units
(1 GB = 10⁹ bytes), as the chapter does.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import operator
from dataclasses import dataclass

from core.attention import AttentionError

# Upper bounds for the inputs.  They are generous (no real model is near
# them) and exist so that a slider typo cannot ask for astronomically large
# numbers; the arithmetic itself is exact Python integers.
LARGEST = {
    "T": 10_000_000,
    "d": 65_536,
    "heads": 65_536,
    "kv_heads": 65_536,
    "layers": 10_000,
    "C": 10_000_000,
}
LARGEST_ELEMENT_BYTES = 64.0
# A tile of B queries × B keys: FlashAttention's blocks are 64 or 128 on today's GPUs.
DEFAULT_TILE = 128
LARGEST_TILE = 65_536

# The chapter: "a top GPU holds 80–192 GB of memory in total" (decimal gigabytes).
CHAPTER_GPU_MEMORY_GB = (80, 192)
# Memory sizes of data-centre GPUs on sale today, smallest to largest; the
# explorer's GPU slider spans them.
GPU_PARTS_GB = (80, 141, 192, 256, 288)
GPU_MEMORY_GB = (GPU_PARTS_GB[0], GPU_PARTS_GB[-1])


# --- input checks ------------------------------------------------------------


def as_count(name: str, value, largest: int) -> int:
    """`value` as an int in 1..largest, or AttentionError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AttentionError(f"{name} is {value!r}; expected a whole number")
    try:
        n = operator.index(value)
    except TypeError:
        x = float(value)
        if not math.isfinite(x) or not x.is_integer():
            raise AttentionError(f"{name} is {value!r}; expected a whole number") from None
        n = int(x)
    if not 1 <= n <= largest:
        raise AttentionError(f"{name} is {n}; expected a whole number from 1 to {largest:,}")
    return n


def as_finite(name: str, value) -> float:
    """`value` as a finite float, or AttentionError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AttentionError(f"{name} is {value!r}; expected a number")
    x = float(value)
    if not math.isfinite(x):
        raise AttentionError(f"{name} is {x}; expected a finite number")
    return x


def as_non_negative(name: str, value) -> float:
    """`value` as a finite float ≥ 0, or AttentionError naming `name`."""
    x = as_finite(name, value)
    if x < 0:
        raise AttentionError(f"{name} is {x:g}; expected a number ≥ 0")
    return x


def as_element_bytes(value) -> float:
    """Bytes per stored number: positive, at most LARGEST_ELEMENT_BYTES (0.5 is fine for 4-bit)."""
    x = as_finite("element_bytes", value)
    if not 0 < x <= LARGEST_ELEMENT_BYTES:
        raise AttentionError(
            f"element_bytes is {x:g}; expected a number above 0 and at most {LARGEST_ELEMENT_BYTES:g}"
        )
    return x


# --- inputs ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CostInputs:
    """The shape of one model at one context length.

    `heads` counts query heads.  `kv_heads` counts key/value heads: fewer than
    `heads` is grouped-query attention (each K/V head serves heads ÷ kv_heads
    query heads); None or equal to `heads` is plain multi-head attention.
    `element_bytes` is the storage per number (2 for 16-bit floats).
    Values are checked on construction; AttentionError names the bad field.
    """

    T: int
    d: int
    heads: int
    kv_heads: int | None = None
    layers: int
    C: int
    element_bytes: float = 2

    def __post_init__(self) -> None:
        for name in ("T", "d", "heads", "layers", "C"):
            object.__setattr__(self, name, as_count(name, getattr(self, name), LARGEST[name]))
        kv = self.heads if self.kv_heads is None else as_count("kv_heads", self.kv_heads, LARGEST["kv_heads"])
        if kv > self.heads:
            raise AttentionError(f"kv_heads is {kv}; it cannot exceed heads ({self.heads})")
        if self.heads % kv:
            raise AttentionError(
                f"kv_heads is {kv}; it must divide heads ({self.heads}) so each K/V head serves a whole group"
            )
        object.__setattr__(self, "kv_heads", kv)
        object.__setattr__(self, "element_bytes", as_element_bytes(self.element_bytes))

    @property
    def grouped(self) -> bool:
        """True when K/V heads are shared between query heads (grouped-query attention)."""
        return self.kv_heads < self.heads


# Llama 3 figures.  d, the head counts and the context lengths are the ones in
# the chapter's table; layers and C (model width) are the public model-card
# figures.  The 128k window came with Llama 3.1 (the 8B model's shape is
# unchanged), so that preset is named Llama 3.1 8B.  The chapter rounds the
# contexts to 8,000 and 128,000 tokens (the released windows are 8,192 and
# 131,072), and so do these presets, so that they reproduce its arithmetic
# exactly.
PRESETS: dict[str, CostInputs] = {
    "Llama 3 8B (8k)": CostInputs(T=8_000, d=128, heads=32, kv_heads=8, layers=32, C=4096),
    "Llama 3.1 8B (128k)": CostInputs(T=128_000, d=128, heads=32, kv_heads=8, layers=32, C=4096),
    "Llama 3.1 405B (128k)": CostInputs(T=128_000, d=128, heads=128, kv_heads=8, layers=126, C=16384),
}


# --- the score matrix --------------------------------------------------------


def score_entries(T: int) -> int:
    """Entries in one head's score matrix: one per (query, key) pair, T²."""
    return T * T


def score_bytes(T: int, element_bytes: float) -> float:
    """Bytes to hold one head's full T × T score matrix."""
    return score_entries(T) * element_bytes


# --- FLOPs of a forward pass over T tokens -----------------------------------


def qk_flops(T: int, d: int) -> int:
    """FLOPs of Q·Kᵀ for one head: T² dot products of length d, 2·T²·d.

    (The value blend A·V costs the same again: `blend_flops`.)
    """
    return 2 * T * T * d


def blend_flops(T: int, d: int) -> int:
    """FLOPs of the blend A·V for one head: each of T outputs is T weights times d-wide values, 2·T²·d."""
    return 2 * T * T * d


def output_projection_flops(T: int, C: int, d: int, heads: int) -> int:
    """FLOPs of the output projection, one layer: the heads' outputs [T, heads·d] times W_O [heads·d, C]."""
    return 2 * T * heads * d * C


def projection_flops(T: int, C: int, d: int, heads: int, kv_heads: int) -> int:
    """FLOPs of X·W_Q, X·W_K and X·W_V for one layer.

        Q:  2 · T · C · (heads · d)
        K:  2 · T · C · (kv_heads · d)
        V:  2 · T · C · (kv_heads · d)
        total = 2 · T · C · d · (heads + 2 · kv_heads)

    Each output entry of X [T, C] · W [C, n] is a length-C dot product.
    With grouped-query attention K and V have only kv_heads · d columns,
    so they cost less; with kv_heads = heads this is 6 · T · C · heads · d.
    """
    return 2 * T * C * d * (heads + 2 * kv_heads)


def crossover_context(C: int, heads: int, kv_heads: int | None = None) -> float:
    """The context length T at which Q·Kᵀ FLOPs equal the projection FLOPs.

    Per layer, heads · 2·T²·d = 2·T·C·d·(heads + 2·kv_heads).  Both sides
    share 2·T·d, so T = C · (heads + 2·kv_heads) / heads, independent of d.
    Above it the T² term dominates.  Plain multi-head attention gives 3·C;
    grouped-query attention makes the projections cheaper, so the crossover
    comes sooner.
    """
    shape = CostInputs(T=1, d=1, heads=heads, kv_heads=kv_heads, layers=1, C=C)
    return shape.C * (shape.heads + 2 * shape.kv_heads) / shape.heads


def full_crossover_context(C: int, heads: int, kv_heads: int | None = None) -> float:
    """The T at which Q·Kᵀ and A·V together cost what all four projections do (Q, K, V and the output's).

    Per layer, heads · 4·T²·d = 2·T·C·d·(heads + 2·kv_heads) + 2·T·C·d·heads, so
    T = C · (heads + kv_heads) / heads: 2·C without K/V sharing, C·(1 + kv_heads/heads) with it.
    Exercise 2 counts Q·Kᵀ against the Q, K, V projections only (`crossover_context`); counting
    the blend doubles the quadratic side and the output projection adds to the linear one.
    """
    shape = CostInputs(T=1, d=1, heads=heads, kv_heads=kv_heads, layers=1, C=C)
    return shape.C * (shape.heads + shape.kv_heads) / shape.heads


# --- attention in tiles ------------------------------------------------------


def tile_score_bytes(B: int, element_bytes: float) -> float:
    """Bytes of one B × B tile of scores (B queries against B keys), all that exists of the T × T matrix
    at once when it is computed in tiles and consumed by the softmax and the blend at once."""
    return B * B * element_bytes


def tile_bytes(B: int, d: int, element_bytes: float) -> float:
    """Bytes of everything one tile step holds for one head: B queries, B keys, B values and B running
    outputs (each d wide), the B × B scores, and each query's running maximum and running sum."""
    return (4 * B * d + B * B + 2 * B) * element_bytes


# --- generating one token with a KV cache ------------------------------------


def decode_flops(T: int, d: int) -> int:
    """FLOPs for one head to produce token T+1 from T cached keys and values.

    Scoring the new query against T keys is T·d multiplies (2·T·d FLOPs);
    blending T values is another 2·T·d.  Linear in T, not quadratic.
    """
    return 2 * T * d + 2 * T * d


def kv_cache_bytes(T: int, kv_heads: int, d: int, element_bytes: float) -> float:
    """Bytes of cached keys and values for one layer: 2 · T · kv_heads · d · element_bytes."""
    return 2 * T * kv_heads * d * element_bytes


# --- GPU comparison ----------------------------------------------------------


def times_gpu_memory(nbytes: float, gpu_gb: float) -> float:
    """How many GPUs' worth of memory `nbytes` fills (decimal GB)."""
    nbytes = as_non_negative("nbytes", nbytes)
    gpu_gb = as_non_negative("gpu_gb", gpu_gb)
    if gpu_gb == 0:
        raise AttentionError("gpu_gb is 0; expected a positive memory size")
    return nbytes / (gpu_gb * 1e9)


# --- everything at once ------------------------------------------------------


@dataclass(frozen=True)
class LongContextCost:
    """Every cost figure for one `CostInputs`, per head, per layer and per model.

    The score matrix is counted per query head: under grouped-query attention
    query heads share keys but each still scores them itself.  FLOP fields
    ending in `_mha` are what the same model would cost with kv_heads = heads.
    """

    inputs: CostInputs
    # the T × T score matrix, if it were materialised
    score_entries_per_head: int
    score_bytes_per_head: float
    score_bytes_per_layer: float
    score_bytes_per_model: float
    # how many GPUs' worth one layer's score matrices are, for GPU_MEMORY_GB
    score_layer_vs_gpu: tuple[float, ...]
    # forward pass over T tokens
    qk_flops_per_head: int
    qk_flops_per_layer: int
    qk_flops_per_model: int
    projection_flops_per_layer: int
    projection_flops_per_model: int
    projection_flops_per_layer_mha: int
    projection_flops_per_model_mha: int
    crossover_T: float
    crossover_T_mha: float
    # the same with the blend A·V and the output projection counted too
    blend_flops_per_layer: int
    output_projection_flops_per_layer: int
    full_crossover_T: float
    full_crossover_T_mha: float
    # generating token T+1 with a KV cache
    decode_flops_per_head: int
    decode_flops_per_layer: int
    decode_flops_per_model: int
    kv_cache_bytes_per_layer: float
    kv_cache_bytes_per_model: float
    kv_cache_bytes_per_layer_mha: float
    kv_cache_bytes_per_model_mha: float

    @property
    def qk_overtakes_projections(self) -> bool:
        """True when Q·Kᵀ already costs more than the projections at this T."""
        return self.qk_flops_per_layer > self.projection_flops_per_layer


def long_context_cost(inputs: CostInputs | None = None, /, **fields) -> LongContextCost:
    """All the cost figures for a model shape.

    Pass a `CostInputs`, or its fields as keywords, or both (the keywords
    then replace fields of `inputs`, e.g. `long_context_cost(preset, T=8000)`).
    """
    try:
        x = dataclasses.replace(inputs, **fields) if inputs is not None else CostInputs(**fields)
    except TypeError as exc:
        raise AttentionError(f"cost inputs: {exc}") from None
    T, d, H, G, L, eb = x.T, x.d, x.heads, x.kv_heads, x.layers, x.element_bytes

    per_head_bytes = score_bytes(T, eb)
    per_layer_bytes = per_head_bytes * H
    qk_head = qk_flops(T, d)
    proj_layer = projection_flops(T, x.C, d, H, G)
    proj_layer_mha = projection_flops(T, x.C, d, H, H)
    dec_head = decode_flops(T, d)
    cache_layer = kv_cache_bytes(T, G, d, eb)
    cache_layer_mha = kv_cache_bytes(T, H, d, eb)
    return LongContextCost(
        inputs=x,
        score_entries_per_head=score_entries(T),
        score_bytes_per_head=per_head_bytes,
        score_bytes_per_layer=per_layer_bytes,
        score_bytes_per_model=per_layer_bytes * L,
        score_layer_vs_gpu=tuple(times_gpu_memory(per_layer_bytes, gb) for gb in GPU_MEMORY_GB),
        qk_flops_per_head=qk_head,
        qk_flops_per_layer=qk_head * H,
        qk_flops_per_model=qk_head * H * L,
        projection_flops_per_layer=proj_layer,
        projection_flops_per_model=proj_layer * L,
        projection_flops_per_layer_mha=proj_layer_mha,
        projection_flops_per_model_mha=proj_layer_mha * L,
        crossover_T=crossover_context(x.C, H, G),
        crossover_T_mha=crossover_context(x.C, H, H),
        blend_flops_per_layer=blend_flops(T, d) * H,
        output_projection_flops_per_layer=output_projection_flops(T, x.C, d, H),
        full_crossover_T=full_crossover_context(x.C, H, G),
        full_crossover_T_mha=full_crossover_context(x.C, H, H),
        decode_flops_per_head=dec_head,
        decode_flops_per_layer=dec_head * H,
        decode_flops_per_model=dec_head * H * L,
        kv_cache_bytes_per_layer=cache_layer,
        kv_cache_bytes_per_model=cache_layer * L,
        kv_cache_bytes_per_layer_mha=cache_layer_mha,
        kv_cache_bytes_per_model_mha=cache_layer_mha * L,
    )


# --- formatting the way the chapter writes numbers ---------------------------

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_BYTE_UNITS = ("B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB")


def superscript(n: int) -> str:
    """An integer in superscript digits: 10 → '¹⁰', -3 → '⁻³'."""
    return str(int(n)).translate(_SUPERSCRIPT)


def sci(x: float, digits: int = 2) -> str:
    """`x` in scientific notation with `digits` significant digits: 1.6384e10 → '1.6 × 10¹⁰'."""
    x = as_finite("x", x)
    digits = as_count("digits", digits, 17)
    if x == 0:
        return "0"
    mantissa, exponent = f"{abs(x):.{digits - 1}e}".split("e")
    sign = "−" if x < 0 else ""
    return f"{sign}{mantissa} × 10{superscript(int(exponent))}"


def human_bytes(b: float) -> str:
    """A byte count in decimal units, rounded like the chapter: '33 GB', '1 TB', '2.5 TB'.

    Two significant figures at most, and a trailing '.0' is dropped.
    """
    b = as_non_negative("b", b)
    for power, unit in enumerate(_BYTE_UNITS):
        text = _round_for_bytes(b / 1000**power)
        if float(text) < 1000 or unit == _BYTE_UNITS[-1]:
            return f"{text} {unit}"
    raise AssertionError("unreachable")


def _round_for_bytes(v: float) -> str:
    # Whole numbers from 10 up, one decimal below that (1.05 → "1", 2.5 → "2.5").
    if round(v, 1) >= 10:
        return f"{round(v):d}"
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text
