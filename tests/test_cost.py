"""The long-context cost arithmetic, checked against the chapter's own figures."""

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.attention import AttentionError
from core.cost import (
    CHAPTER_GPU_MEMORY_GB,
    GPU_MEMORY_GB,
    GPU_PARTS_GB,
    PRESETS,
    CostInputs,
    crossover_context,
    decode_flops,
    human_bytes,
    kv_cache_bytes,
    long_context_cost,
    projection_flops,
    qk_flops,
    sci,
    score_entries,
    times_gpu_memory,
)

LLAMA_8B_128K = PRESETS["Llama 3.1 8B (128k)"]
LLAMA_405B = PRESETS["Llama 3.1 405B (128k)"]

counts = st.integers(min_value=1, max_value=4096)


# --- the chapter's box: one head, one layer, 128k tokens ---------------------


def test_score_matrix_numbers_match_the_chapter():
    cost = long_context_cost(LLAMA_8B_128K)
    assert cost.score_entries_per_head == 128_000**2 == 16_384_000_000
    assert sci(cost.score_entries_per_head) == "1.6 × 10¹⁰"
    assert cost.score_bytes_per_head == 3.2768e10
    assert sci(cost.score_bytes_per_head) == "3.3 × 10¹⁰"
    assert human_bytes(cost.score_bytes_per_head) == "33 GB"
    assert cost.score_bytes_per_layer == 32 * 3.2768e10 == 1.048576e12
    assert human_bytes(cost.score_bytes_per_layer) == "1 TB"
    assert cost.score_bytes_per_model == 32 * cost.score_bytes_per_layer


def test_one_layer_of_scores_overflows_every_gpu():
    # The chapter's "by a factor of ten per layer" is the 80 GB case (13×); against today's largest
    # parts (288 GB) it is 3.6×, and against the chapter's own 192 GB 5.5×.
    cost = long_context_cost(LLAMA_8B_128K)
    assert GPU_MEMORY_GB == (80, 288) and CHAPTER_GPU_MEMORY_GB == (80, 192)
    assert {141, 192, 256, 288} <= set(GPU_PARTS_GB)
    big, small = cost.score_layer_vs_gpu
    assert big == pytest.approx(1.048576e12 / 80e9)
    assert small == pytest.approx(1.048576e12 / 288e9)
    assert 3 < small < big < 15
    assert 1 < times_gpu_memory(cost.score_bytes_per_layer, max(GPU_PARTS_GB))


def test_presets_carry_the_published_shapes():
    assert LLAMA_8B_128K == CostInputs(T=128_000, d=128, heads=32, kv_heads=8, layers=32, C=4096)
    assert PRESETS["Llama 3 8B (8k)"].T == 8_000
    assert (LLAMA_405B.d, LLAMA_405B.heads, LLAMA_405B.kv_heads) == (128, 128, 8)
    assert (LLAMA_405B.layers, LLAMA_405B.C, LLAMA_405B.T) == (126, 16384, 128_000)
    assert all(p.heads * p.d == p.C for p in PRESETS.values())
    assert all(p.grouped for p in PRESETS.values())


def test_qk_flops_are_two_t_squared_d_per_head():
    cost = long_context_cost(LLAMA_405B)
    assert cost.qk_flops_per_head == 2 * 128_000**2 * 128
    assert cost.qk_flops_per_layer == 128 * cost.qk_flops_per_head
    assert cost.qk_flops_per_model == 126 * cost.qk_flops_per_layer


def test_projection_flops_formula():
    cost = long_context_cost(LLAMA_405B)
    T, C, d = 128_000, 16384, 128
    q = 2 * T * C * (128 * d)
    kv = 2 * T * C * (8 * d)
    assert cost.projection_flops_per_layer == q + 2 * kv
    assert cost.projection_flops_per_layer_mha == 3 * q
    assert cost.projection_flops_per_model == 126 * (q + 2 * kv)


# --- crossover -----------------------------------------------------------------


def test_crossover_for_the_presets():
    assert crossover_context(C=16384, heads=128, kv_heads=8) == 16384 * 144 / 128 == 18432.0
    assert crossover_context(C=16384, heads=128) == 3 * 16384
    assert long_context_cost(LLAMA_8B_128K).crossover_T == 4096 * 48 / 32
    assert long_context_cost(LLAMA_405B).crossover_T_mha == 49152.0


@given(C=counts, d=st.integers(1, 256), groups=st.integers(1, 16), group_size=st.integers(1, 8))
def test_crossover_is_where_the_two_flop_counts_meet(C, d, groups, group_size):
    heads, kv_heads = groups * group_size, groups
    T_star = crossover_context(C, heads, kv_heads)
    qk_layer = lambda T: heads * 2 * T * T * d  # noqa: E731
    proj_layer = lambda T: projection_flops(T, C, d, heads, kv_heads)  # noqa: E731
    assert qk_layer(T_star) == pytest.approx(proj_layer(T_star), rel=1e-12)
    below, above = math.floor(T_star * 0.9), math.ceil(T_star * 1.1) + 1
    if below >= 1:
        assert qk_layer(below) < proj_layer(below)
    assert qk_layer(above) > proj_layer(above)


def test_qk_overtakes_projections_flag():
    assert long_context_cost(LLAMA_405B).qk_overtakes_projections
    assert not long_context_cost(LLAMA_405B, T=8_000).qk_overtakes_projections


# --- grouped-query attention -------------------------------------------------------


@given(T=counts, C=counts, d=st.integers(1, 256), heads=st.sampled_from([2, 4, 8, 32, 128]))
def test_gqa_reduces_kv_projection_cost_and_cache(T, C, d, heads):
    kv = heads // 2
    gqa = long_context_cost(T=T, d=d, heads=heads, kv_heads=kv, layers=2, C=C)
    mha = long_context_cost(T=T, d=d, heads=heads, layers=2, C=C)
    assert gqa.projection_flops_per_layer < mha.projection_flops_per_layer
    assert gqa.projection_flops_per_layer == gqa.projection_flops_per_layer_mha - 2 * 2 * T * C * kv * d
    assert mha.projection_flops_per_layer == mha.projection_flops_per_layer_mha
    assert gqa.kv_cache_bytes_per_layer < mha.kv_cache_bytes_per_layer
    assert gqa.crossover_T < mha.crossover_T == 3 * C
    # Query heads still each score every key: score matrix and QKᵀ are unchanged.
    assert gqa.score_bytes_per_layer == mha.score_bytes_per_layer
    assert gqa.qk_flops_per_layer == mha.qk_flops_per_layer


def test_kv_heads_default_to_heads():
    x = CostInputs(T=10, d=4, heads=6, layers=1, C=24)
    assert x.kv_heads == 6 and not x.grouped


# --- generating one token -----------------------------------------------------------


@given(T=st.integers(1, 1_000_000), d=st.integers(1, 512), k=st.integers(2, 10))
def test_per_token_cost_is_linear_in_t(T, d, k):
    assert decode_flops(T, d) == 4 * T * d
    assert decode_flops(k * T, d) == k * decode_flops(T, d)
    assert kv_cache_bytes(k * T, 8, d, 2) == k * kv_cache_bytes(T, 8, d, 2)


def test_per_token_figures_for_llama_8b():
    cost = long_context_cost(LLAMA_8B_128K)
    assert cost.decode_flops_per_head == 2 * 128_000 * 128 + 2 * 128_000 * 128
    assert cost.decode_flops_per_model == cost.decode_flops_per_head * 32 * 32
    assert cost.kv_cache_bytes_per_layer == 2 * 128_000 * 8 * 128 * 2
    assert cost.kv_cache_bytes_per_model == 32 * cost.kv_cache_bytes_per_layer
    assert cost.kv_cache_bytes_per_layer_mha == 4 * cost.kv_cache_bytes_per_layer
    # Quadratic prefill versus linear decode: one new token costs far less than Q·Kᵀ.
    assert cost.decode_flops_per_head * 1000 < cost.qk_flops_per_head


# --- overrides and small helpers ----------------------------------------------


def test_keyword_overrides_replace_preset_fields():
    cost = long_context_cost(LLAMA_8B_128K, T=8_000)
    assert cost.inputs == PRESETS["Llama 3 8B (8k)"]
    assert cost.score_entries_per_head == score_entries(8_000)
    assert cost.qk_flops_per_head == qk_flops(8_000, 128)


def test_results_are_frozen():
    cost = long_context_cost(LLAMA_8B_128K)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cost.score_entries_per_head = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        LLAMA_8B_128K.T = 1


def test_integral_floats_are_accepted_as_counts():
    assert CostInputs(T=128000.0, d=128, heads=32, kv_heads=8.0, layers=32, C=4096).T == 128_000


def test_times_gpu_memory():
    assert times_gpu_memory(160e9, 80) == 2.0
    with pytest.raises(AttentionError, match="^gpu_gb is"):
        times_gpu_memory(1e9, 0)


# --- formatting -------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, digits, text",
    [
        (1.6384e10, 2, "1.6 × 10¹⁰"),
        (3.2768e10, 2, "3.3 × 10¹⁰"),
        (1.048576e12, 2, "1.0 × 10¹²"),
        (9.96e9, 2, "1.0 × 10¹⁰"),
        (9.96e9, 3, "9.96 × 10⁹"),
        (128, 3, "1.28 × 10²"),
        (-3e-5, 1, "−3 × 10⁻⁵"),
        (0, 2, "0"),
    ],
)
def test_sci(x, digits, text):
    assert sci(x, digits) == text


@pytest.mark.parametrize(
    "b, text",
    [
        (3.2768e10, "33 GB"),
        (1.048576e12, "1 TB"),
        (2.5e12, "2.5 TB"),
        (999.6e9, "1 TB"),
        (80e9, "80 GB"),
        (512, "512 B"),
        (0, "0 B"),
        (1.5e3, "1.5 kB"),
    ],
)
def test_human_bytes(b, text):
    assert human_bytes(b) == text


# --- bad inputs ---------------------------------------------------------------------


BASE = dict(T=1000, d=64, heads=8, kv_heads=2, layers=4, C=512)


@pytest.mark.parametrize(
    "field, bad",
    [
        ("T", 0),
        ("T", -5),
        ("T", 10_000_001),
        ("T", 12.5),
        ("T", float("nan")),
        ("T", float("inf")),
        ("T", "128000"),
        ("T", True),
        ("T", None),
        ("d", 0),
        ("heads", 0),
        ("kv_heads", 0),
        ("kv_heads", 16),  # more K/V heads than query heads
        ("kv_heads", 3),  # 8 query heads cannot be split into 3 groups
        ("layers", 0),
        ("layers", 2.5),
        ("C", -1),
        ("element_bytes", 0),
        ("element_bytes", -2),
        ("element_bytes", float("nan")),
        ("element_bytes", "2"),
    ],
)
def test_bad_inputs_raise_naming_the_field(field, bad):
    with pytest.raises(AttentionError, match=rf"^{field} is"):
        long_context_cost(**{**BASE, field: bad})
    with pytest.raises(AttentionError, match=rf"^{field} is"):
        CostInputs(**{**BASE, field: bad})


def test_largest_context_is_allowed():
    assert long_context_cost(**{**BASE, "T": 10_000_000}).score_entries_per_head == 10**14


def test_unknown_or_missing_fields_raise_attention_error():
    with pytest.raises(AttentionError):
        long_context_cost(**BASE, width=3)
    with pytest.raises(AttentionError):
        long_context_cost(T=10)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "1e9", None])
def test_formatters_reject_non_numbers(bad):
    with pytest.raises(AttentionError, match="^x is"):
        sci(bad)
    with pytest.raises(AttentionError, match="^b is"):
        human_bytes(bad)


def test_formatters_reject_bad_digits_and_negative_bytes():
    with pytest.raises(AttentionError, match="^digits is"):
        sci(1.0, digits=0)
    with pytest.raises(AttentionError, match="^b is"):
        human_bytes(-1)


def test_crossover_validates_its_arguments():
    with pytest.raises(AttentionError, match="^kv_heads is"):
        crossover_context(C=4096, heads=32, kv_heads=5)
    with pytest.raises(AttentionError, match="^C is"):
        crossover_context(C=0, heads=32)
