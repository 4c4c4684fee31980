"""The "spread ≈ √d" argument, measured on seeded random heads."""

import dataclasses
import math
import warnings
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.attention import AttentionError, softmax
from core.rng import normals
from core.saturation import (
    DEFAULT_WIDTHS,
    STUCK,
    SaturationCurve,
    entropy,
    jacobian,
    jacobian_size,
    many_rows,
    quantile,
    row_gradient,
    saturation_curve,
    saturation_point,
    worked_row,
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


# --- the softmax's gradient --------------------------------------------------------


def plain_softmax(z):
    """numpy's own softmax (np.exp), independent of core.attention's."""
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def rows_of(d, seed, T, trials):
    """The trials' raw scores, drawn again here as core/saturation.py's docstring says they are."""
    block = normals(seed, 0, trials * (T + 1) * d).reshape(trials, T + 1, d)
    return np.einsum("bd,btd->bt", block[:, 0, :], block[:, 1:, :])


def finite_difference_jacobian(z, h=1e-6):
    """∂softmax(z)/∂z by central differences, column j from moving z_j by ±h."""
    J = np.empty((z.size, z.size))
    for j in range(z.size):
        up, down = z.copy(), z.copy()
        up[j] += h
        down[j] -= h
        J[:, j] = (plain_softmax(up) - plain_softmax(down)) / (2 * h)
    return J


def exact_jacobian_size(z) -> float:
    """‖∂softmax(z)/∂z‖ in decimal arithmetic with enough digits that 1 − w keeps a saturated row's
    tiny weights (a gap of 350 in the scores makes them 1e-152), independent of core/saturation.py's
    way of keeping them."""
    with localcontext() as ctx:
        ctx.prec = 400
        e = [Decimal(float(v - z.max())).exp() for v in z]
        total = sum(e)
        w = [x / total for x in e]
        square = sum(
            ((wi if i == j else 0) - wi * wj) ** 2 for i, wi in enumerate(w) for j, wj in enumerate(w)
        )
        return float(square.sqrt())


def test_the_jacobian_is_diag_w_minus_w_w_transposed_as_finite_differences_say():
    rng = np.random.default_rng(3)
    for spread in (0.5, 3.0, 12.0):
        z = rng.normal(0, spread, 9)
        J = jacobian(plain_softmax(z))
        assert np.linalg.norm(J) == pytest.approx(exact_jacobian_size(z), rel=1e-12)
        fd = finite_difference_jacobian(z)
        big = np.abs(J) > 1e-4  # where a central difference keeps 1e-6 of relative accuracy
        np.testing.assert_allclose(fd[big], J[big], rtol=1e-6)


def test_jacobian_size_is_the_norm_of_the_full_jacobian_even_when_one_hot():
    rng = np.random.default_rng(4)
    Z = rng.normal(0, 1, (200, 16)) * rng.choice([0.1, 1, 10, 40, 80], size=(200, 1))
    W = plain_softmax(Z)
    sizes = jacobian_size(W)
    for z, size in zip(Z, sizes):
        exact = exact_jacobian_size(z)  # independent of the weights' rounding
        assert size == pytest.approx(exact, rel=1e-6, abs=1e-300), (size, exact)
    assert sizes.min() < 1e-12  # some rows are one-hot to 12 digits: their size is still exact
    assert jacobian_size(np.array([[1.0, 0.0, 0.0]])) == 0.0
    assert jacobian_size(np.full((1, 64), 1 / 64))[0] == pytest.approx(math.sqrt(63) / 64)
    assert jacobian_size(np.array([[0.5, 0.5]]))[0] == pytest.approx(0.5)


def test_a_rows_gradient_names_its_jacobians_largest_and_smallest_entries():
    rng = np.random.default_rng(5)
    for spread in (0.3, 2.0, 9.0):
        w = plain_softmax(rng.normal(0, spread, 12))
        g = row_gradient(w)
        J = jacobian(w)
        assert g.largest == pytest.approx(J.max(), rel=1e-12) and J[g.largest_at, g.largest_at] == J.max()
        assert g.smallest == pytest.approx(J.min(), rel=1e-12)
        assert J[g.smallest_at] == pytest.approx(J.min(), rel=1e-12) and g.smallest_at[0] != g.smallest_at[1]
        assert g.size == pytest.approx(np.linalg.norm(J), rel=1e-12)
    one_key = row_gradient(np.array([1.0]))
    assert (one_key.largest, one_key.smallest, one_key.size) == (0.0, 0.0, 0.0)


def test_the_points_gradient_figures_agree_with_finite_differences_and_numpy():
    for d in (4, 128):
        p = saturation_point(d, seed=2, T=12, trials=40)
        S = rows_of(d, 2, 12, 40)
        for scale, which in ((1.0, "raw"), (math.sqrt(d), "scaled")):
            parts = ("", "_spread", "_low", "_high")
            mean, spread, low, high = (getattr(p, f"gradient_{which}{k}") for k in parts)
            stuck = getattr(p, f"stuck_{which}")
            by_differences = np.array([np.linalg.norm(finite_difference_jacobian(z / scale)) for z in S])
            by_numpy = np.array([np.linalg.norm(jacobian(plain_softmax(z / scale))) for z in S])
            assert mean == pytest.approx(by_differences.mean(), rel=1e-6)
            assert mean == pytest.approx(by_numpy.mean(), rel=1e-12)
            assert spread == pytest.approx(by_numpy.std(), rel=1e-9)
            assert (low, high) == pytest.approx(tuple(np.quantile(by_numpy, [0.1, 0.9])), rel=1e-9)
            assert stuck == (by_numpy < STUCK).mean()
        assert p.least_gradient_row == int(np.argmin([np.linalg.norm(jacobian(plain_softmax(z))) for z in S]))


def test_without_the_division_more_and_more_rows_pass_back_nothing(curve):
    # the module's curve: seed 0, T = 64, 400 trials at d = 2, 16, 128, 512
    assert np.all(np.diff(curve.stuck_raw) >= 0) and curve.stuck_raw[0] == 0 and curve.stuck_raw[-1] > 0.4
    assert np.all(curve.stuck_scaled == 0)
    assert np.all(curve.gradient_raw_low[1:] < curve.gradient_scaled_low[1:])
    assert curve.gradient_raw_low[-1] < 1e-4  # a tenth of the rows at d = 512 pass back next to nothing
    assert np.ptp(curve.gradient_scaled) < 0.02  # with the division every width's rows alike


def test_worked_row_is_that_trial_of_the_sweep():
    p = saturation_point(128, seed=0, T=64, trials=128)
    r = worked_row(128, seed=0, T=64, row=p.least_gradient_row)
    S = rows_of(128, 0, 64, p.least_gradient_row + 1)[-1]
    np.testing.assert_allclose(r.scores, S, rtol=1e-12)
    sizes = jacobian_size(softmax(rows_of(128, 0, 64, 128)))
    assert r.raw.size == pytest.approx(sizes.min(), rel=1e-9)
    assert r.raw.weights.max() > 0.999 and r.raw.size < 1e-3  # the quietest row is one-hot
    assert r.scaled.size > 0.1  # …and soft with ÷√d
    with pytest.raises(AttentionError, match="^row is"):
        worked_row(8, row=-1)


def test_quantile_is_numpys_linear_rule():
    rng = np.random.default_rng(6)
    for n in (1, 2, 7, 128):
        x = rng.normal(size=n)
        for q in (0.0, 0.1, 0.5, 0.9, 1.0):
            assert quantile(x, q) == pytest.approx(float(np.quantile(x, q)), rel=1e-12, abs=1e-15)


def test_many_rows_draw_the_same_experiment_as_the_sweep():
    """many_rows draws a row's scores as |q| times T normals; the sweep draws q and every key. Same law:
    their means agree within four standard errors."""
    many = many_rows(128, 64)
    p = saturation_point(128, seed=1, T=64, trials=2048)
    for (mean, spread), theirs in (
        (many.max_weight_raw, p.max_weight_raw),
        (many.max_weight_scaled, p.max_weight_scaled),
        (many.gradient_raw, p.gradient_raw),
        (many.gradient_scaled, p.gradient_scaled),
    ):
        error = spread * math.sqrt(1 / many.rows + 1 / p.trials)
        assert abs(mean - theirs) < 4 * error, (mean, theirs, error)
    assert abs(many.stuck_raw - p.stuck_raw) < 0.04 and many.stuck_scaled == p.stuck_scaled == 0
