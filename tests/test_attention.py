"""core.attention: the chapter's numbers, the softmax's edge cases, properties and input checks."""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core.attention import (
    AttentionError,
    Head,
    attend,
    causal_mask,
    mask,
    raw_weights,
    softmax,
    top1,
)
from core.presets import CHAPTER

X = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.2, 0.3, 0.0]]
W_Q = [[0, 1], [2, 0], [0, 1]]
W_K = [[0.5, 0], [4, 0], [0, 2]]
W_V = [[1, 0], [0, 1], [0.5, 0.5]]
IT = 3
# The chapter's printout of the whole head, rounded to three decimals (also a claim: tests/test_claims.py).
PRINTED_WEIGHTS = [
    [1.0, 0.0, 0.0, 0.0],
    [0.007, 0.993, 0.0, 0.0],
    [0.164, 0.164, 0.673, 0.0],
    [0.127, 0.559, 0.136, 0.178],
]
PRINTED_OUTPUT = [[1.0, 0.0], [0.007, 0.993], [0.5, 0.5], [0.23, 0.681]]


def assert_printed_at_three_decimals(head) -> None:
    assert np.round(head.weights, 3).tolist() == PRINTED_WEIGHTS
    assert np.round(head.output, 3).tolist() == PRINTED_OUTPUT


@contextlib.contextmanager
def no_warnings():
    """Any Python warning, or a numpy overflow / division / invalid operation, fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", divide="raise", invalid="raise"):
            yield


@pytest.fixture(scope="module")
def head() -> Head:
    return attend(X, W_Q, W_K, W_V)


# --- the worked example, number by number ------------------------------------


def test_projections_are_the_printed_matrices(head):
    np.testing.assert_allclose(head.Q, [[0.0, 1.0], [2.0, 0.0], [0.0, 1.0], [0.6, 0.2]], atol=1e-12)
    np.testing.assert_allclose(head.K, [[0.5, 0.0], [4.0, 0.0], [0.0, 2.0], [1.3, 0.0]], atol=1e-12)
    np.testing.assert_allclose(head.V, [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.2, 0.3]], atol=1e-12)
    assert (head.T, head.C, head.d) == (4, 3, 2)


def test_the_steps_for_it_at_two_decimals(head):
    assert np.round(head.scores[IT], 2).tolist() == [0.30, 2.40, 0.40, 0.78]
    assert np.round(head.scaled[IT], 2).tolist() == [0.21, 1.70, 0.28, 0.55]
    np.testing.assert_array_equal(head.masked[IT], head.scaled[IT])  # nothing comes after "it"
    e = np.exp(head.masked[IT])
    assert np.round(e, 2).tolist() == [1.24, 5.46, 1.33, 1.74]
    assert round(float(e.sum()), 2) == 9.76
    assert np.round(head.weights[IT], 2).tolist() == [0.13, 0.56, 0.14, 0.18]
    assert np.round(head.output[IT], 2).tolist() == [0.23, 0.68]


def test_the_printed_weights_and_output_at_three_decimals(head):
    assert_printed_at_three_decimals(head)


def test_the_preset_is_the_same_head(head):
    np.testing.assert_array_equal(CHAPTER.head().weights, head.weights)


# --- the softmax and the other normalisers -----------------------------------


def test_masked_entries_are_exactly_zero_and_rows_sum_to_one(head):
    assert head.future.tolist() == causal_mask(4).tolist()
    assert (head.weights[head.future] == 0.0).all()
    assert np.all(np.abs(head.weights.sum(axis=1) - 1.0) <= 1e-12)


@pytest.mark.parametrize("big", [1e6, 1e12, 1e300])
def test_softmax_of_huge_scores_is_finite_and_silent(big):
    S = np.array([[big, -big, 0.0], [-big, -big, -big], [big, big, -np.inf]])
    with no_warnings():
        W = softmax(S)
    assert np.isfinite(W).all()
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    assert W[0].tolist() == [1.0, 0.0, 0.0]
    np.testing.assert_allclose(W[1], [1 / 3] * 3)
    assert W[2].tolist() == [0.5, 0.5, 0.0]


def test_softmax_of_scores_at_float64s_limit_is_silent():
    S = np.array([[1.7e308, -1.7e308], [-1.7e308, 1.7e308]])
    with no_warnings():
        W = softmax(S)
    assert W.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_a_fully_masked_row_gets_zero_weight_not_nan():
    with no_warnings():
        W = softmax(np.array([[-np.inf, -np.inf], [0.0, -np.inf]]))
    assert W.tolist() == [[0.0, 0.0], [1.0, 0.0]]


def test_top1_ties_go_to_the_earliest_key():
    S = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [0.0, -np.inf, -np.inf, -np.inf]])
    assert top1(S).tolist() == [[0, 1, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]


def test_top1_through_the_head_with_a_tie():
    # exercise 1: 'it' looks like 'sat', so its scores against them tie; the earlier key wins
    h = attend(X[:3] + [[0.0, 0.0, 1.0]], W_Q, W_K, W_V, normaliser="top1")
    assert h.weights[IT].tolist() == [0.0, 0.0, 1.0, 0.0]


def test_raw_keeps_masked_scores_at_zero(head):
    h = attend(X, W_Q, W_K, W_V, normaliser="raw")
    assert (h.weights[h.future] == 0.0).all()
    np.testing.assert_array_equal(h.weights[~h.future], head.scaled[~head.future])
    assert raw_weights(np.array([[2.0, -np.inf]])).tolist() == [[2.0, 0.0]]


def test_tied_qk_uses_w_q_for_the_keys():
    h = attend(X, W_Q, W_K, W_V, tied_qk=True)
    np.testing.assert_array_equal(h.W_K, np.array(W_Q, dtype=float))
    np.testing.assert_array_equal(h.K, h.Q)
    # 'cat' now mostly reads itself: q_cat · q_cat = 4 is its largest score
    assert int(np.argmax(h.weights[1])) == 1


def test_options_are_recorded(head):
    h = attend(X, W_Q, W_K, W_V, scaling=False, causal=False, tied_qk=True, normaliser="top1", x_scale=4)
    assert (h.scaling, h.causal, h.tied_qk, h.normaliser, h.x_scale) == (False, False, True, "top1", 4.0)
    assert (head.scaling, head.causal, head.tied_qk, head.normaliser, head.x_scale) == (
        True, True, False, "softmax", 1.0)
    np.testing.assert_array_equal(h.X, 4 * np.array(X))
    assert not h.future.any()


# --- properties over random heads --------------------------------------------

FINITE = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@st.composite
def random_heads(draw):
    T, C, d = draw(st.integers(1, 8)), draw(st.integers(1, 5)), draw(st.integers(1, 5))
    mats = [draw(arrays(np.float64, shape, elements=FINITE)) for shape in ((T, C), (C, d), (C, d), (C, d))]
    return mats


OPTIONS = st.fixed_dictionaries({"scaling": st.booleans(), "causal": st.booleans()})


@settings(max_examples=150, deadline=None)
@given(random_heads(), OPTIONS, st.sampled_from(["softmax", "top1"]))
def test_rows_sum_to_one_masked_are_zero_and_outputs_stay_in_the_values_range(mats, opts, normaliser):
    with no_warnings():
        h = attend(*mats, normaliser=normaliser, **opts)
    np.testing.assert_allclose(h.weights.sum(axis=1), 1.0, atol=1e-12)
    assert (h.weights >= 0).all()
    assert (h.weights[h.future] == 0.0).all()
    if opts["causal"]:
        assert h.future.tolist() == causal_mask(h.T).tolist()
    slack = 1e-9 * (1 + np.abs(h.V).max())
    assert (h.output >= h.V.min(axis=0) - slack).all()
    assert (h.output <= h.V.max(axis=0) + slack).all()


@settings(max_examples=150, deadline=None)
@given(random_heads(), st.sampled_from(["softmax", "raw", "top1"]))
def test_masked_weights_are_zero_for_every_normaliser(mats, normaliser):
    h = attend(*mats, normaliser=normaliser)
    assert (h.weights[causal_mask(h.T)] == 0.0).all()


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(1, 8), st.integers(1, 8))
def test_adding_a_constant_to_a_row_changes_nothing(data, T, n):
    S = data.draw(arrays(np.float64, (T, n), elements=st.floats(-1e3, 1e3)))
    hidden = data.draw(arrays(np.bool_, (T, n)))
    S = np.where(hidden, -np.inf, S)
    c = data.draw(arrays(np.float64, (T, 1), elements=st.floats(-1e3, 1e3)))
    with no_warnings():
        np.testing.assert_allclose(softmax(S + c), softmax(S), atol=1e-9)


@settings(max_examples=150, deadline=None)
@given(random_heads(), st.booleans())
def test_scaling_is_dividing_the_scores_by_root_d(mats, causal):
    plain = attend(*mats, scaling=False, causal=causal)
    scaled = attend(*mats, scaling=True, causal=causal)
    d = plain.d
    np.testing.assert_allclose(scaled.scaled, plain.scores / math.sqrt(d), rtol=1e-12, atol=1e-12)
    S = plain.scores / math.sqrt(d)
    expected = softmax(mask(S, causal_mask(plain.T)) if causal else S)
    np.testing.assert_allclose(scaled.weights, expected, atol=1e-12)
    # the same as shrinking W_Q by √d and not scaling
    X_, W_Q_, W_K_, W_V_ = mats
    shrunk = attend(X_, W_Q_ / math.sqrt(d), W_K_, W_V_, scaling=False, causal=causal)
    np.testing.assert_allclose(shrunk.weights, scaled.weights, atol=1e-9)


@settings(max_examples=150, deadline=None)
@given(random_heads())
def test_tied_qk_gives_symmetric_scores(mats):
    h = attend(*mats, tied_qk=True)
    tol = 1e-12 * (1 + np.abs(h.scores).max())
    np.testing.assert_allclose(h.scores, h.scores.T, atol=tol, rtol=0)
    assert (np.diag(h.scores) >= -tol).all()  # q·q is a squared length


@settings(max_examples=150, deadline=None)
@given(st.data(), random_heads())
def test_without_the_mask_permuting_tokens_permutes_the_weights(data, mats):
    X_, W_Q_, W_K_, W_V_ = mats
    perm = np.array(data.draw(st.permutations(range(X_.shape[0]))), dtype=int)
    h = attend(X_, W_Q_, W_K_, W_V_, causal=False)
    p = attend(X_[perm], W_Q_, W_K_, W_V_, causal=False)
    np.testing.assert_allclose(p.weights, h.weights[perm][:, perm], atol=1e-9)
    np.testing.assert_allclose(p.output, h.output[perm], atol=1e-9 * (1 + np.abs(h.V).max()))


# --- bad input ---------------------------------------------------------------

GOOD = {"X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V}


@pytest.mark.parametrize(
    "field, bad, says",
    [
        ("X", [[1.0, float("nan"), 0.0]] * 4, "X[0, 1] is nan"),
        ("X", [[1.0, 0.0, float("inf")]] * 4, "X[0, 2] is inf"),
        ("W_Q", [[0, 1], [2, -float("inf")], [0, 1]], "W_Q[1, 1] is -inf"),
        ("W_V", [[1, 0], [0, 1e308], [0.5, 0.5]], "W_V[1, 1] is 1e+308"),
        ("X", [[10**400, 0, 0]], "X must be a matrix of numbers"),
        ("W_K", "text", "W_K must be a matrix of numbers"),
        ("W_K", [["a", "b"], ["c", "d"], ["e", "f"]], "W_K must be a matrix of numbers"),
        ("X", [1.0, 0.0, 0.0], "X has shape (3,); expected a 2-D matrix"),
        ("X", [], "X has shape (0,)"),
        ("X", [[]], "X has shape (1, 0); it needs at least one row and one column"),
        ("X", [[1, 2, 3], [4, 5]], "X must be a matrix of numbers"),
        ("W_V", [[[1, 0]], [[0, 1]], [[0, 0]]], "W_V has shape (3, 1, 2)"),
        ("W_Q", [[0, 1], [2, 0]], "W_Q has shape (2, 2); expected (3, d) to match X's 3 columns"),
        ("W_K", [[0.5], [4], [0]], "W_K has shape (3, 1); expected (3, 2) to match W_Q"),
        ("W_V", [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "W_V has shape (3, 3); expected (3, 2) to match W_Q"),
        ("X", None, "X has shape ()"),
        ("X", {"a": 1}, "X must be a matrix of numbers"),
    ],
)
def test_bad_matrices_raise_attention_error_naming_the_field(field, bad, says):
    with no_warnings(), pytest.raises(AttentionError) as err:
        attend(**{**GOOD, field: bad})
    assert says in str(err.value)
    assert field in str(err.value)


@pytest.mark.parametrize(
    "options, says",
    [
        ({"normaliser": "max"}, "normaliser is 'max'"),
        ({"x_scale": float("nan")}, "x_scale is nan"),
        ({"x_scale": float("inf")}, "x_scale is inf"),
        ({"x_scale": "four"}, "x_scale is 'four'; expected a number"),
        ({"x_scale": 1e101}, "x_scale is 1e+101"),
        ({"x_scale": 10**400}, "x_scale is"),
    ],
)
def test_bad_options_raise_attention_error(options, says):
    with no_warnings(), pytest.raises(AttentionError) as err:
        attend(X, W_Q, W_K, W_V, **options)
    assert says in str(err.value)


def test_attention_error_is_a_value_error():
    assert issubclass(AttentionError, ValueError)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"X": [[1e100, 0, 0]] * 4, "W_Q": [[1e100, 0]] * 3, "W_K": [[1e100, 0]] * 3},  # scores overflow
        {"X": [[1e100, 1e100, 1e100]] * 4, "x_scale": 1e100},  # fine alone, too big with the multiplier
        {"X": [[1e60, 1e60, 1e60]] * 4, "W_Q": [[1e100, 0]] * 3, "W_K": [[-1e100, 0]] * 3},
    ],
)
def test_huge_finite_values_that_overflow_raise_without_warnings(kwargs):
    args = {**GOOD, **kwargs}
    opts = {"x_scale": args.pop("x_scale")} if "x_scale" in args else {}
    with no_warnings(), pytest.raises(AttentionError, match="overflow"):
        attend(**args, **opts)


def test_raw_weights_whose_blend_overflows_raise_without_warnings():
    with no_warnings(), pytest.raises(AttentionError, match="output overflows"):
        attend([[1e100], [1e100]], [[1e54]], [[1e54]], [[1e100]], normaliser="raw")


def test_scores_near_float64s_limit_are_fine():
    # scores of ±1e308 are finite; the softmax must not warn while subtracting the row's maximum
    with no_warnings():
        h = attend([[1e100], [-1e100]], [[1e54]], [[1e54]], [[1.0]])
    assert h.weights.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_scores_that_overflow_only_once_divided_by_tau_are_refused():
    """Issue 27: ÷τ (τ < 1) can overflow a finite score; the softmax would read +∞ as a masked entry."""
    X_, W_Q_, W_K_ = [[1.0], [1e-100]], [[1e100]], [[1e7]]
    with no_warnings():
        h = attend(X_, W_Q_, W_K_, [[1.0]], causal=False, x_scale=1e100, temperature=0.1)  # still finite
        assert h.weights[0].tolist() == [1.0, 0.0] and h.output[0, 0] == 1e100
        with pytest.raises(AttentionError, match=r"overflow to infinity once divided by τ = 0\.05$"):
            attend(X_, W_Q_, W_K_, [[1.0]], causal=False, x_scale=1e100, temperature=0.05)
        with pytest.raises(AttentionError, match="overflow"):  # the mask on: the row would be all zeros
            big = [[1e53] * 3] + [list(r) for r in CHAPTER.X[1:]]
            attend(big, W_Q, W_K, W_V, x_scale=1e100, temperature=0.05)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(-9.99, 9.99).filter(lambda m: abs(m) > 0.01), min_size=1, max_size=4),
    st.integers(-10, 10),
    st.sampled_from((0.05, 0.1, 0.37, 1.0, 5.0)),
    st.booleans(),
    st.sampled_from(("softmax", "top1")),
)
def test_near_float64s_limit_a_head_is_right_or_refused(mantissas, k, tau, causal, normaliser):
    """Scores from 1e284 to 1e310, divided by τ: a head either refuses or weighs its largest scores most."""
    X_ = [[m * 1e99] for m in mantissas]
    with no_warnings():
        try:
            options = dict(causal=causal, temperature=tau, normaliser=normaliser)
            h = attend(X_, [[10.0**k]], [[1e100]], [[1.0]], **options)
        except AttentionError as exc:
            assert "overflow" in str(exc)
            return
    assert np.isfinite(h.scaled).all() and np.isfinite(h.output).all()
    for i in range(h.T):
        visible = ~h.future[i]
        assert h.weights[i].sum() == pytest.approx(1.0) and (h.weights[i] >= 0).all()
        best = np.flatnonzero(visible & (h.masked[i] == h.masked[i][visible].max()))
        assert int(np.argmax(h.weights[i])) in best


LEAVES = st.one_of(
    st.floats(), st.integers(), st.text(max_size=4), st.booleans(), st.none(),
    st.sampled_from(["1", "nan", "-inf", "1e400", "2.5", " 3 "]),
)
NESTED = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=4), max_leaves=24)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["X", "W_Q", "W_K", "W_V"]), NESTED)
def test_anything_gives_a_head_or_an_attention_error(field, junk):
    with no_warnings():
        try:
            h = attend(**{**GOOD, field: junk})
        except AttentionError as exc:
            assert str(exc)
        else:
            assert isinstance(h, Head)
            assert np.isfinite(h.weights).all()


# --- the head is read-only ---------------------------------------------------

ARRAYS = ("X", "W_Q", "W_K", "W_V", "Q", "K", "V", "scores", "scaled", "masked", "weights", "output")


@pytest.mark.parametrize("name", ARRAYS)
def test_head_arrays_are_read_only(head, name):
    a = getattr(head, name)
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0] = 42.0


def test_head_fields_cannot_be_reassigned_and_inputs_are_copied(head):
    with pytest.raises(AttributeError):
        head.weights = None  # type: ignore[misc]
    X_in = np.array(X)
    h = attend(X_in, W_Q, W_K, W_V)
    X_in[3] = [9.0, 9.0, 9.0]
    np.testing.assert_array_equal(h.X[3], [0.2, 0.3, 0.0])
