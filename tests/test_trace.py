"""core.trace: the chapter's six steps for "it" as text, the row checks and the number format."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.attention import AttentionError, attend
from core.presets import CHAPTER, PRESETS
from core.trace import EXPONENT_FROM, fmt, fmt_vector, row_checks, trace

LABELS = CHAPTER.tokens


@pytest.fixture(scope="module")
def head():
    return CHAPTER.head()


@pytest.fixture(scope="module")
def it(head):
    return trace(head, 3, LABELS)


def test_the_trace_for_it_has_the_chapters_numbers(it):
    text = it.text()
    for expected in (
        "q_it = x_it·W_Q = [0.60, 0.20]",
        "it [1.30, 0.00]",  # k_it
        "q_it · k_j = [0.30, 2.40, 0.40, 0.78]",
        "divide by √2 = 1.414: [0.21, 1.70, 0.28, 0.55]",
        "no token comes after 'it', so nothing changes",
        "exp → [1.24, 5.46, 1.33, 1.74], sum 9.76",
        "weights = [0.13, 0.56, 0.14, 0.18]",
        "0.13·[1.00, 0.00] + 0.56·[0.00, 1.00] + 0.14·[0.50, 0.50] + 0.18·[0.20, 0.30]",
        "= [0.23, 0.68]",
    ):
        assert expected in text, expected
    assert it.label == "it" and it.query == 3


def test_the_trace_has_six_numbered_steps_whose_values_are_the_heads(head, it):
    assert [s.number for s in it.steps] == [1, 2, 3, 4, 5, 6]
    assert [s.name for s in it.steps] == ["project", "scores", "scale", "mask", "softmax", "blend"]
    np.testing.assert_array_equal(it.steps[0].values, head.Q[3])
    np.testing.assert_array_equal(it.steps[1].values, head.scores[3])
    np.testing.assert_array_equal(it.steps[4].values, head.weights[3])
    np.testing.assert_array_equal(it.steps[5].values, head.output[3])
    lines = it.text().splitlines()
    assert sum(line.startswith("step ") for line in lines) == 6
    # continuation lines line up under the first line's text
    indent = lines[0].index("q_it")
    assert all(line[:indent].strip() == "" for line in lines if not line.startswith("step "))


def test_the_mask_line_names_the_later_tokens(head):
    text = trace(head, 0, LABELS).text()
    assert "'cat', 'sat', 'it' come later: set to −∞" in text
    assert "'it' comes later: set to −∞" in trace(head, 2, LABELS).text()
    unmasked = attend(CHAPTER.X, CHAPTER.W_Q, CHAPTER.W_K, CHAPTER.W_V, causal=False)
    assert "the mask is off" in trace(unmasked, 0, LABELS).text()


def test_the_masked_steps_show_minus_infinity(head):
    t = trace(head, 0, LABELS)
    assert t.steps[3].values[1:].tolist() == [-math.inf] * 3
    assert "exp → [1.00, 0.00, 0.00, 0.00], sum 1.00" in t.text()
    assert "weights = [1.00, 0.00, 0.00, 0.00]" in t.text()


def test_the_checks_for_it(it):
    c = it.checks
    assert c.row_sum == pytest.approx(1.0, abs=1e-12)
    assert c.masked_max == 0.0  # nothing is masked for the last token
    assert c.max_key == 1 and c.max_weight == pytest.approx(0.5594, abs=1e-4)
    w = CHAPTER.head().weights[3]
    assert c.entropy == pytest.approx(float(-(w * np.log(w)).sum()), abs=1e-12)


@pytest.mark.parametrize("i", range(4))
def test_the_checks_for_every_row(head, i):
    c = row_checks(head, i)
    assert c.row_sum == pytest.approx(1.0, abs=1e-12)
    assert c.masked_max == 0.0
    assert 0.0 <= c.entropy <= math.log(i + 1) + 1e-12  # at most uniform over the visible keys
    if i == 0:
        assert c.entropy == 0.0  # 'The' can only read itself


def test_the_checks_for_the_ablations():
    raw = PRESETS["no-softmax"].head()
    c = row_checks(raw, 3)
    assert c.entropy is None  # the raw scores are not a distribution
    assert c.row_sum == pytest.approx(float(raw.scaled[3].sum()))
    top = row_checks(PRESETS["top-1"].head(), 3)
    assert (top.row_sum, top.max_weight, top.max_key, top.entropy) == (1.0, 1.0, 1, 0.0)


def test_the_step_wording_follows_the_options():
    h = attend(CHAPTER.X, CHAPTER.W_Q, CHAPTER.W_K, CHAPTER.W_V, scaling=False)
    assert "scaling is off, so the scores are used as they are" in trace(h, 3, LABELS).text()
    assert "step 5 no softmax" in trace(PRESETS["no-softmax"].head(), 3, LABELS).text()
    assert "all the weight on the largest score, 'cat'" in trace(PRESETS["top-1"].head(), 3, LABELS).text()


def test_huge_scores_are_shown_relative_to_the_largest_without_warnings():
    h = attend(CHAPTER.X, CHAPTER.W_Q, CHAPTER.W_K, CHAPTER.W_V, x_scale=10, scaling=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = trace(h, 3, LABELS).text()
    assert "exp(s − 240.00) →" in text
    h = attend([[1e100], [-1e100]], [[1e54]], [[1e54]], [[1.0]])  # scores ±1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = trace(h, 1, "ab").text()
    assert "exp(s − 1.00e+308) → [0.00, 1.00]" in text


@pytest.mark.parametrize("i", [-1, 4, 100])
def test_a_bad_query_index_raises(head, i):
    with pytest.raises(AttentionError, match="query is"):
        trace(head, i, LABELS)


def test_labels_must_match_the_tokens(head):
    with pytest.raises(AttentionError, match="labels has 3 entries; expected 4"):
        trace(head, 0, LABELS[:3])


# --- fmt ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, text",
    [
        (-math.inf, "−∞"),
        (math.inf, "∞"),
        (math.nan, "NaN"),
        (0.0, "0.00"),
        (-0.0, "0.00"),
        (-0.004, "0.00"),
        (-0.005001, "-0.01"),
        (1.2345, "1.23"),
        (-2.5, "-2.50"),
        (999999.0, "999999.00"),
        (1e6, "1.00e+06"),
        (-2.5e7, "-2.50e+07"),
        (1e308, "1.00e+308"),
    ],
)
def test_fmt(x, text):
    assert fmt(x) == text


def test_fmt_digits_and_vectors():
    assert fmt(math.sqrt(2), 3) == "1.414"
    assert fmt_vector([0.3, -0.0001, -math.inf]) == "[0.30, 0.00, −∞]"


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_fmt_never_shows_negative_zero_and_uses_exponents_for_huge(x):
    text = fmt(x)
    assert not re.fullmatch(r"-0\.0+(e[+-]\d+)?", text)
    assert ("e" in text) == (abs(x) >= EXPONENT_FROM)
    if abs(x) < 1e300:  # "1.80e+308" reads back as inf
        assert float(text) == pytest.approx(x, abs=0.005 + 0.005 * abs(x))
