"""core.presets: the chapter's example as printed, the two sentences, and every preset runs."""

from __future__ import annotations

import numpy as np
import pytest

from core.attention import NORMALISERS
from core.options import Options
from core.presets import CHAPTER, CUSTOM, PRESETS, SOFT, SOFT_TRACE, TIRED, TIRED_TRACE


def weights_of(preset, query=None):
    head = preset.head()
    return head, head.weights[preset.tokens.index(query or preset.query)]


def test_chapter_preset_is_the_printed_example():
    assert CHAPTER.tokens == ("The", "cat", "sat", "it")
    assert CHAPTER.X == ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.2, 0.3, 0.0))
    assert CHAPTER.W_Q == ((0, 1), (2, 0), (0, 1))
    assert CHAPTER.W_K == ((0.5, 0), (4, 0), (0, 2))
    assert CHAPTER.W_V == ((1, 0), (0, 1), (0.5, 0.5))
    assert CHAPTER.query == "it"
    assert CHAPTER.options == Options()
    assert CHAPTER.options.as_dict() == dict(
        scaling=True, causal=True, tied_qk=False, normaliser="softmax", x_scale=1.0, temperature=1.0
    )
    assert PRESETS["chapter"] is CHAPTER


def test_chapter_preset_gives_the_printed_weights():
    head, w = weights_of(CHAPTER)
    assert np.round(w, 2).tolist() == [0.13, 0.56, 0.14, 0.18]
    assert np.round(head.output[3], 2).tolist() == [0.23, 0.68]


@pytest.mark.parametrize(
    "preset, referent, other",
    [(TIRED, "cat", "mat"), (SOFT, "mat", "cat"), (TIRED_TRACE, "cat", "mat"), (SOFT_TRACE, "mat", "cat")],
)
def test_the_query_finds_its_referent(preset, referent, other):
    """The adjective, with the mask on (the sentences); 'it', with a trace and the mask off (the thought
    experiment)."""
    assert preset.query == ("it" if preset.name.endswith("-trace") else preset.name)
    assert preset.causal != preset.name.endswith("-trace")
    _, w = weights_of(preset)
    j, k = preset.tokens.index(referent), preset.tokens.index(other)
    assert w[j] > 0.5
    assert int(np.argmax(w)) == j
    assert w[j] > 5 * w[k]


def test_the_two_sentences_differ_only_in_the_adjective_and_the_thought_experiment_from_it_on():
    assert TIRED.tokens[:-1] == SOFT.tokens[:-1] == TIRED_TRACE.tokens[:-1]
    assert TIRED.X[:-1] == SOFT.X[:-1]
    assert TIRED_TRACE.X[:7] == SOFT_TRACE.X[:7] == TIRED.X[:7]
    for a, b in ((TIRED, SOFT), (TIRED_TRACE, SOFT_TRACE)):
        assert (a.W_Q, a.W_K, a.W_V) == (b.W_Q, b.W_K, b.W_V)
    assert CUSTOM not in PRESETS


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_runs_and_is_well_formed(name):
    preset = PRESETS[name]
    assert preset.name == name
    assert preset.title
    assert preset.query in preset.tokens
    assert len(set(preset.tokens)) == len(preset.tokens), "labels must be unique"
    assert len(preset.X) == len(preset.tokens)
    assert len({len(row) for row in preset.X}) == 1
    assert preset.normaliser in NORMALISERS
    head = preset.head()
    assert head.weights.shape == (len(preset.tokens),) * 2
    assert np.isfinite(head.weights).all() and np.isfinite(head.output).all()
    if preset.normaliser != "raw":
        np.testing.assert_allclose(head.weights.sum(axis=1), 1.0, atol=1e-12)


def test_exercise_1_makes_it_look_like_sat():
    p = PRESETS["exercise-1"]
    assert p.X[3] == p.X[2] == (0.0, 0.0, 1.0)
    _, w = weights_of(p)
    assert np.round(w, 3).tolist() == [0.098, 0.098, 0.402, 0.402]


def test_exercise_3_is_nearly_one_hot_with_or_without_the_scaling():
    unscaled = PRESETS["exercise-3-unscaled"].head()
    scaled = PRESETS["exercise-3-scaled"].head()
    assert unscaled.weights.max(axis=1).min() > 0.99
    # the √2 division can only soften, and at d = 2 by far too little to see: both still look one-hot
    assert (scaled.weights.max(axis=1) <= unscaled.weights.max(axis=1) + 1e-12).all()
    assert scaled.weights.max(axis=1).min() > 0.99


def test_the_breaks_do_what_their_notes_say():
    _, w = weights_of(PRESETS["tied-qk"])
    assert int(np.argmax(w)) == CHAPTER.tokens.index("cat")  # 'cat' mostly reads itself
    head, w = weights_of(PRESETS["no-mask"])
    assert int(np.argmax(w)) > 0  # 'The' attends mostly to a later token
    assert head.weights[np.triu_indices(4, k=1)].min() > 0
    head = PRESETS["no-softmax"].head()
    assert not np.allclose(head.weights.sum(axis=1), 1.0)
    head = PRESETS["top-1"].head()
    assert set(np.unique(head.weights)) == {0.0, 1.0}
    _, w = weights_of(PRESETS["no-scaling"])
    assert w.max() > weights_of(CHAPTER)[1].max()


def test_temperature_presets_sharpen_and_flatten_and_say_so_with_their_own_numbers():
    cold, hot = PRESETS["temperature-low"], PRESETS["temperature-high"]
    _, w = weights_of(CHAPTER)
    _, w_cold = weights_of(cold)
    _, w_hot = weights_of(hot)
    assert w_cold.max() > w.max() > w_hot.max()  # low τ sharpens, high τ flattens


def test_temperature_one_is_todays_head_bit_for_bit():
    a = CHAPTER.head()
    b = CHAPTER.with_options(temperature=1.0).head()
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.masked, b.masked)
