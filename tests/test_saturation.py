"""The "spread ≈ √d" argument, measured on seeded random heads."""

import dataclasses
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.attention import AttentionError
from core.rng import normals
from core.saturation import (
    DEFAULT_WIDTHS,
    SaturationCurve,
    entropy,
    saturation_curve,
    saturation_point,
)

WIDTHS = (2, 16, 128, 512)


@pytest.fixture(scope="module")
def curve() -> SaturationCurve:
    return saturation_curve(WIDTHS, seed=0, T=64, trials=400)


def test_raw_score_spread_is_about_sqrt_d(curve):
    for d, std in zip(curve.d, curve.score_std):
        assert std / math.sqrt(d) == pytest.approx(1, rel=0.15), d


def test_scaled_score_spread_is_about_one(curve):
    assert np.allclose(curve.scaled_score_std, 1, rtol=0.15)


def test_chapter_example_d_128_spreads_about_eleven(curve):
    # "With d = 128 ... raw scores have spread about 11."
    i = list(curve.d).index(128)
    assert 10 < curve.score_std[i] < 12.5


def test_unscaled_softmax_saturates_as_d_grows(curve):
    assert np.all(np.diff(curve.max_weight_raw) > 0)
    assert np.all(np.diff(curve.entropy_raw) < 0)
    assert curve.max_weight_raw[-1] > 0.9  # d = 512: close to one-hot
    assert curve.entropy_raw[-1] < 0.1 * curve.uniform_entropy


def test_scaled_softmax_stays_soft(curve):
    ent = curve.entropy_scaled
    assert ent.max() - ent.min() < 0.05 * curve.uniform_entropy  # roughly flat in d
    assert np.all(ent > 0.85 * curve.uniform_entropy)
    assert np.all(curve.max_weight_scaled < 0.2)  # T = 64: uniform would be 1/64


def test_point_fields_and_ratio():
    p = saturation_point(128, seed=3, T=32, trials=50)
    assert (p.d, p.T, p.trials, p.seed) == (128, 32, 50, 3)
    assert p.sqrt_d == math.sqrt(128)
    assert p.std_over_sqrt_d == p.score_std / p.sqrt_d
    assert p.scaled_score_std == pytest.approx(p.score_std / p.sqrt_d)
    assert p.uniform_entropy == math.log(32)
    assert 1 / 32 <= p.max_weight_scaled <= p.max_weight_raw <= 1
    assert 0 <= p.entropy_raw <= p.entropy_scaled <= math.log(32)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.d = 4


def test_deterministic_for_a_seed():
    assert saturation_point(64, seed=7, trials=30) == saturation_point(64, seed=7, trials=30)
    assert saturation_point(64, seed=7, trials=30) != saturation_point(64, seed=8, trials=30)
    a = saturation_curve((4, 32), seed=1, trials=20).columns()
    b = saturation_curve((4, 32), seed=1, trials=20).columns()
    assert a == b


def test_wide_heads_drawn_in_several_chunks_still_spread_sqrt_d():
    # At d = 4096 the 40 trials are drawn in three chunks to bound memory.
    p = saturation_point(4096, seed=2, T=64, trials=40)
    assert p.score_std / 64 == pytest.approx(1, rel=0.15)


def test_no_numpy_warnings_even_when_saturated():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = saturation_point(4096, seed=0, T=256, trials=4)
    assert np.isfinite([p.entropy_raw, p.max_weight_raw]).all()


def test_curve_columns_for_plotting():
    c = saturation_curve(seed=0, trials=16)
    cols = c.columns()
    assert list(cols) == list(SaturationCurve.COLUMNS)
    assert cols["d"] == list(DEFAULT_WIDTHS)
    assert all(len(v) == len(DEFAULT_WIDTHS) for v in cols.values())
    assert all(isinstance(x, float) for x in cols["score_std"])
    assert not c.score_std.flags.writeable
    assert (c.T, c.trials, c.seed) == (64, 16, 0)


def test_curve_matches_pointwise_calls():
    c = saturation_curve((8, 64), seed=5, T=16, trials=10)
    p = saturation_point(64, seed=5, T=16, trials=10)
    assert c.entropy_scaled[1] == p.entropy_scaled
    assert c.max_weight_raw[1] == p.max_weight_raw


def test_entropy_of_known_rows():
    W = np.array([[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])
    assert entropy(W) == pytest.approx([0.0, math.log(4)])


@settings(max_examples=25, deadline=None)
@given(d=st.integers(1, 64), T=st.integers(1, 64), trials=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_bounds_hold_for_any_small_head(d, T, trials, seed):
    p = saturation_point(d, seed=seed, T=T, trials=trials)
    for w in (p.max_weight_raw, p.max_weight_scaled):
        assert 1 / T - 1e-12 <= w <= 1 + 1e-12
    for h in (p.entropy_raw, p.entropy_scaled):
        assert -1e-12 <= h <= math.log(T) + 1e-12
    assert p.score_std >= 0


# --- bad inputs ------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, kwargs",
    [
        ("d", dict(d=0)),
        ("d", dict(d=4097)),
        ("d", dict(d=2.5)),
        ("d", dict(d="8")),
        ("d", dict(d=float("nan"))),
        ("T", dict(d=8, T=0)),
        ("T", dict(d=8, T=4097)),
        ("trials", dict(d=8, trials=0)),
        ("trials", dict(d=4096, T=4096, trials=100)),  # too much work for a live view
        ("seed", dict(d=8, seed=-1)),
        ("seed", dict(d=8, seed=1.5)),
        ("seed", dict(d=8, seed="0")),
        ("seed", dict(d=8, seed=None)),
        ("seed", dict(d=8, seed=2**32)),
    ],
)
def test_bad_point_inputs_raise_naming_the_field(field, kwargs):
    with pytest.raises(AttentionError, match=rf"^{field} is"):
        saturation_point(**kwargs)


@pytest.mark.parametrize("ds", [(), (2, 0), (8, 5000), 16])
def test_bad_widths_raise(ds):
    with pytest.raises(AttentionError, match=r"^(d|ds) is"):
        saturation_curve(ds, trials=2)


def test_the_generator_s_numbers_are_pinned():
    # The served page, the static page and any copy of it already published draw these numbers for seed 0
    # (core/rng.py, static/saturation.js): a change to the generator changes what readers were shown.
    assert normals(0, 0, 4).tolist() == pytest.approx(
        [1.6264323079191505, 0.00336973522237399, 1.0509958430290807, 1.3762763278932915], rel=1e-12
    )
    p = saturation_point(128, seed=0, T=64, trials=128)  # the explorer's defaults: "spread about 11"
    assert (p.score_std, p.max_weight_raw, p.entropy_scaled) == pytest.approx(
        (11.3507265491635, 0.8874506324627252, 3.681087410817393), rel=1e-9
    )
