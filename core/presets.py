"""Ready-made heads: the chapter's worked example, its two sentences, its
exercises and each item of its "what breaks" list.

A preset is plain data (tokens, matrices, options and the query to pick), so
the command line, the widget, the static export and URLs can all name one by
its slug.  What each preset shows, with its numbers, is worked out from its
head by core/notes.py, so no number here is typed twice.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core.attention import Head, attend
from core.options import Options, OptionsByName


@dataclass(frozen=True)
class Preset(OptionsByName):
    name: str
    title: str
    tokens: tuple[str, ...]
    X: tuple[tuple[float, ...], ...]
    W_Q: tuple[tuple[float, ...], ...]
    W_K: tuple[tuple[float, ...], ...]
    W_V: tuple[tuple[float, ...], ...]
    query: str
    options: Options = Options()

    def head(self) -> Head:
        return attend(self.X, self.W_Q, self.W_K, self.W_V, options=self.options)

    def with_options(self, **changes) -> Preset:
        return replace(self, options=self.options.replace(**changes))


# The worked example, exactly as the chapter prints it: 4 tokens, C = 3, d = 2.
CHAPTER = Preset(
    name="chapter",
    title="The chapter's example",
    tokens=("The", "cat", "sat", "it"),
    X=((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.2, 0.3, 0.0)),
    W_Q=((0.0, 1.0), (2.0, 0.0), (0.0, 1.0)),
    W_K=((0.5, 0.0), (4.0, 0.0), (0.0, 2.0)),
    W_V=((1.0, 0.0), (0.0, 1.0), (0.5, 0.5)),
    query="it",
)


# The two sentences.  The words up to "was" are the same in both, "it" included (as in the chapter, one
# vector for "it"), and with the causal mask nothing at "it" can see the adjective after it.  So in the
# presets "tired" and "soft" the adjective does the reading: it comes last, sees every word, and its query
# finds the noun it describes.
# Features (C = 4): animate, soft, noun, pronoun.  Head dimensions (d = 2): "animate thing", "soft thing".
#   W_K: a noun advertises on both dimensions, and its animacy or softness pushes one of them up
#        (cat → [3, 2], mat → [2, 3]); an adjective, no noun, offers little.
#   W_Q: "tired" (animate) seeks along the first dimension, "soft" along the second.
_SENTENCE_TOKENS = ("The", "cat", "sat", "on", "the", "mat", "because", "it", "was")
_SENTENCE_X = (
    (0.0, 0.0, 0.1, 0.0),  # The
    (1.0, 0.0, 1.0, 0.0),  # cat
    (0.2, 0.0, 0.0, 0.0),  # sat
    (0.0, 0.0, 0.0, 0.0),  # on
    (0.0, 0.0, 0.1, 0.0),  # the
    (0.0, 1.0, 1.0, 0.0),  # mat
    (0.0, 0.0, 0.0, 0.0),  # because
)
_SENTENCE_W_V = ((1.0, 0.0), (0.0, 1.0), (0.5, 0.5), (0.0, 0.0))

TIRED = Preset(
    name="tired",
    title="… because it was tired",
    tokens=_SENTENCE_TOKENS + ("tired",),
    X=_SENTENCE_X + ((0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)),
    W_Q=((3.0, 0.0), (0.0, 3.0), (0.0, 0.0), (1.0, 1.0)),
    W_K=((1.0, 0.0), (0.0, 1.0), (2.0, 2.0), (0.0, 0.0)),
    W_V=_SENTENCE_W_V,
    query="tired",
)
SOFT = replace(
    TIRED,
    name="soft",
    title="… because it was soft",
    tokens=_SENTENCE_TOKENS + ("soft",),
    X=TIRED.X[:-1] + ((0.0, 1.0, 0.0, 0.0),),
    query="soft",
)

# The same sentences as a thought experiment, labelled so: "it" already carries a trace of the adjective,
# as if an earlier layer of a model that reads the whole sentence (no mask, as an encoder) had put it there,
# and the mask is off to match.  A causal model's "it" could not: the adjective comes after it.
#   W_K: as above, but a noun's animacy or softness counts double (cat → [3, 1], mat → [1, 3]).
#   W_Q: a pronoun seeks nouns on both dimensions; the trace tilts its query towards one of them.
TIRED_TRACE = Preset(
    name="tired-trace",
    title="Thought experiment: 'it' already knows 'tired'",
    tokens=TIRED.tokens,
    X=_SENTENCE_X + ((0.8, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 0.2), (0.6, 0.0, 0.0, 0.0)),
    W_Q=((2.0, 0.0), (0.0, 2.0), (0.0, 0.0), (1.0, 1.0)),
    W_K=((2.0, 0.0), (0.0, 2.0), (1.0, 1.0), (0.0, 0.0)),
    W_V=_SENTENCE_W_V,
    query="it",
    options=Options(causal=False),
)
SOFT_TRACE = replace(
    TIRED_TRACE,
    name="soft-trace",
    title="Thought experiment: 'it' already knows 'soft'",
    tokens=SOFT.tokens,
    X=_SENTENCE_X + ((0.0, 0.8, 0.0, 1.0), (0.0, 0.0, 0.0, 0.2), (0.0, 0.6, 0.0, 0.0)),
)

# Exercise 1: make "it" look exactly like "sat".
EXERCISE_1 = replace(
    CHAPTER,
    name="exercise-1",
    title="Exercise 1: 'it' looks like 'sat'",
    X=CHAPTER.X[:3] + ((0.0, 0.0, 1.0),),
)

# Exercise 3: no scaling and X × 4, then the scaling back.
EXERCISE_3_UNSCALED = replace(
    CHAPTER,
    name="exercise-3-unscaled",
    title="Exercise 3a: X × 4, no scaling",
    options=Options(scaling=False, x_scale=4.0),
)
EXERCISE_3_SCALED = replace(
    EXERCISE_3_UNSCALED,
    name="exercise-3-scaled",
    title="Exercise 3b: X × 4, scaling restored",
    options=Options(x_scale=4.0),
)

# The "what breaks" list, each on the chapter's example but "no softmax".
NO_SCALING = replace(
    CHAPTER,
    name="no-scaling",
    title="Breaks: no scaling",
    options=Options(scaling=False),
)
TIED_QK = replace(
    CHAPTER,
    name="tied-qk",
    title="Breaks: W_K = W_Q",
    options=Options(tied_qk=True),
    query="cat",
)
# The chapter's two claims about raw scores need keys that point away from the
# query (so a weight goes negative) and several alike (so a row's output grows
# with the number of keys it reads): on the chapter's example every score is
# positive.  So this one keeps its matrices and "it" but reads "cat", "dog"
# (a second noun with cat's vector) and "not" (minus a noun's vector).
NO_SOFTMAX = replace(
    CHAPTER,
    name="no-softmax",
    title="Breaks: no softmax",
    tokens=("cat", "dog", "not", "it"),
    X=((0.0, 1.0, 0.0), (0.0, 1.0, 0.0), (0.0, -1.0, 0.0), CHAPTER.X[3]),
    options=Options(normaliser="raw"),
)
NO_MASK = replace(
    CHAPTER,
    name="no-mask",
    title="Breaks: no mask",
    options=Options(causal=False),
    query="The",
)
TOP_1 = replace(
    CHAPTER,
    name="top-1",
    title="Breaks: top-1 instead of a blend",
    options=Options(normaliser="top1"),
)

# The softmax temperature, both ways, on the chapter's example (query "it").
COLD = replace(
    CHAPTER,
    name="temperature-low",
    title="Temperature τ = 0.4: sharper",
    options=Options(temperature=0.4),
)
HOT = replace(
    CHAPTER,
    name="temperature-high",
    title="Temperature τ = 3: flatter",
    options=Options(temperature=3.0),
)

# The name of no preset: a link's preset=custom, and the picker's "(your own edits)".
CUSTOM = "custom"

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        CHAPTER,
        TIRED,
        SOFT,
        TIRED_TRACE,
        SOFT_TRACE,
        EXERCISE_1,
        EXERCISE_3_UNSCALED,
        EXERCISE_3_SCALED,
        NO_SCALING,
        TIED_QK,
        NO_SOFTMAX,
        NO_MASK,
        TOP_1,
        COLD,
        HOT,
    )
}
assert CUSTOM not in PRESETS
