"""What each preset and each switch shows, in words, with the head's own numbers.

Every note is a pure function of a Head (and the token labels): the numbers
in it are computed, never typed, so an edit to a preset or to the core that
makes a sentence false changes the sentence or fails a test
(tests/test_claims.py, one test per claim).  A preset's note describes the
preset as loaded: the page shows it only while the head on screen is that
preset (any edit makes it "your own head"), so the numbers are the ones on
screen.  The switch notes describe the chapter's example with one switch
flipped, and say so.

Nothing here imports Panel or Bokeh; the views escape the text.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from core.attention import Head, attend
from core.cost import CHAPTER_GPU_MEMORY_GB, GPU_PARTS_GB, LongContextCost, human_bytes, sci
from core.presets import CHAPTER
from core.saturation import DEFAULT_T, STUCK, ManyRows, SaturationPoint, many_rows
from core.trace import fmt, fmt_vector

# The slider step the "top-1" note walks a component of the query token by.
STEP = 0.05
# The head width the "Why ÷√d" tab opens on (seed 0, its default), quoted by the ÷√d notes.
SATURATION_D = 128
# The chapter's long-context case: 128,000 tokens, 32 heads, 2 bytes a score.
CHAPTER_CONTEXT = 128_000


# --- small helpers -------------------------------------------------------------


def options_of(head: Head) -> dict:
    """The head's switches (its Options), as keywords for `attend`.

    X is kept as used, so x_scale is 1 here; a switch added to Options is carried along.
    """
    return head.options.as_dict() | {"x_scale": 1.0}


def variant(head: Head, X=None, **options) -> Head:
    """The same head with some switches changed, or other token vectors (x_scale multiplies again).

    A tied head keeps W_Q as its keys' matrix: untying it here gives W_K = W_Q, not the original W_K.
    """
    return attend(head.X if X is None else X, head.W_Q, head.W_K, head.W_V, **(options_of(head) | options))


def row(labels, label: str) -> int:
    return list(labels).index(label)


def weight(head: Head, labels, query: str, key: str) -> float:
    """The weight token `query` puts on token `key`."""
    return float(head.weights[row(labels, query), row(labels, key)])


def top_key(head: Head, i: int) -> int:
    return int(np.argmax(head.weights[i]))


def near_one(head: Head, i: int, j: int) -> str:
    """Row i's weight on key j when within a hair of 1, as '1 − 5.5 × 10⁻¹²' ('1' when exactly 1).

    The gap is the sum of the other weights, which keeps the digits that 1 − w would lose.
    """
    gap = float(np.delete(head.weights[i], j).sum())
    return "1" if gap <= 0 else f"1 − {sci(gap)}"


def norm(v) -> float:
    return float(np.linalg.norm(v))


def query_row(labels, query: str | None, T: int) -> int:
    return row(labels, query) if query is not None else T - 1


# --- facts the notes quote (each tested in tests/test_claims.py) -----------------


def self_reading(head: Head) -> list[tuple[int, float, float]]:
    """(token, |q|, weight on itself) per token, for the W_K = W_Q notes."""
    return [(i, norm(head.Q[i]), float(head.weights[i, i])) for i in range(head.T)]


def even_split(head: Head, i: int, tol: float = 1e-9) -> tuple[int, int] | None:
    """Two keys that row i weights equally and most, if there are two; else None."""
    w = head.weights[i]
    order = np.argsort(-w, kind="stable")
    if w.size >= 2 and abs(w[order[0]] - w[order[1]]) < tol and w[order[0]] > 0:
        return int(min(order[:2])), int(max(order[:2]))
    return None


def first_flip(head: Head, i: int, step: float = STEP, low: float = -2.0, high: float = 2.0):
    """The nearest slider position of one of token i's components where its top-1 key changes.

    Walks each component of x_i away from its value in steps of `step` (as a slider moves)
    and returns (component, value before, value at the flip, new key), the flip closest to the
    start, or None when no component flips anywhere in low..high.
    """
    X = head.X
    start = top_key(head, i)
    best = None
    for c in range(head.C):
        for direction in (-1, 1):
            k = 1
            while True:
                v = round(float(X[i, c]) + direction * k * step, 10)
                if not low - 1e-9 <= v <= high + 1e-9:
                    break
                moved = X.copy()
                moved[i, c] = v
                h = variant(head, X=moved)
                j = top_key(h, i)
                if j != start:
                    if best is None or k < best[0]:
                        best = (k, c, round(v - direction * step, 10), v, j)
                    break
                k += 1
    return None if best is None else best[1:]


def rounding_slip(head: Head, i: int, coordinate: int = 0, digits: int = 2):
    """Row i's blend, coordinate `coordinate`, added up from terms rounded as the chapter prints them.

    Returns (rounded terms, their sum, the exact sum); the sum of rounded terms can differ from
    the exact sum rounded, which is the chapter's step-6 slip.
    """
    terms = head.weights[i] * head.V[:, coordinate]
    rounded = [round(float(t), digits) for t in terms]
    return rounded, round(sum(rounded), digits), float(terms.sum())


def raw_row_sizes(head: Head) -> list[tuple[int, int, float]]:
    """(token, keys it reads, |output|) per row: with raw scores as weights the size is not bounded."""
    visible = (~head.future).sum(axis=1)
    return [(i, int(visible[i]), norm(head.output[i])) for i in range(head.T)]


def outside_values(head: Head, i: int) -> int | None:
    """A coordinate where row i's output is beyond every value's, if any (so it is outside their hull)."""
    out = head.output[i]
    for c in range(head.d):
        if out[c] > head.V[:, c].max() + 1e-12 or out[c] < head.V[:, c].min() - 1e-12:
            return c
    return None


def later_reader(head: Head) -> int | None:
    """The first token whose largest weight is on a token after it (only possible with the mask off)."""
    for i in range(head.T):
        if top_key(head, i) > i:
            return i
    return None


# --- preset notes ---------------------------------------------------------------


def _chapter(head: Head, labels) -> list[str]:
    it, cat = row(labels, "it"), row(labels, "cat")
    i = it
    rounded, rounded_sum, exact = rounding_slip(head, i)
    text = [
        f"Four tokens, C = {head.C}, d = {head.d}. 'it' is a little noun-like "
        f"(x_it[1] = {fmt(head.X[it, 1])}): W_Q doubles that into q_it[0] = {fmt(head.Q[it, 0])}, "
        f"and W_K turns cat's noun-ness into "
        f"k_cat[0] = {fmt(head.K[cat, 0])}. So 'it' scores 'cat' {fmt(head.scores[it, cat])}, its largest "
        f"score, and puts {fmt(head.weights[it, cat])} of its attention there."
    ]
    if rounded_sum != round(exact, 2):
        terms = " + ".join(fmt(t) if t else "0" for t in rounded)
        text.append(
            f"Footnote: the chapter's step 6 adds the rounded terms {terms}, which make {fmt(rounded_sum)}, "
            f"and prints {fmt(exact)}; that is right, since the unrounded terms add to {fmt(exact, 4)}."
        )
    return text


def looks_along(head: Head, i: int) -> int:
    """The head dimension token i's query looks along most (its largest |q| entry)."""
    return int(np.argmax(np.abs(head.Q[i])))


def _sentence(referent: str, other: str, adjective: str):
    """The honest, causal reading: the adjective, last, reads back to the noun it describes."""

    def describe(head: Head, labels) -> list[str]:
        me, it, r, o = (row(labels, t) for t in (adjective, "it", referent, other))
        k = looks_along(head, me)
        return [
            f"'{adjective}' comes last, so with the mask on it reads every word before it: it puts "
            f"{fmt(head.weights[me, r])} of its attention on '{referent}' and {fmt(head.weights[me, o])} on "
            f"'{other}'. Its query {fmt_vector(head.Q[me])} looks along dimension {k}, where '{referent}' "
            f"offers {fmt(head.K[r, k])} and '{other}' {fmt(head.K[o, k])}.",
            f"As in the chapter, 'it' has the same vector in both sentences (x_it = "
            f"{fmt_vector(head.X[it], 0)}), and the mask hides the adjective after it, so nothing at 'it' "
            f"can tell the two apart. The adjective does the reading instead. The preset '{adjective}-trace' "
            f"is the thought experiment in which 'it' already knows the adjective.",
        ]

    return describe


def _sentence_trace(referent: str, other: str, adjective: str):
    """The thought experiment: 'it' carries a trace of the later adjective, with the mask off."""

    def describe(head: Head, labels) -> list[str]:
        it = row(labels, "it")
        masked = variant(head, causal=not head.causal)
        on, off = (masked, head) if masked.causal else (head, masked)
        later = [labels[j] for j in range(it + 1, head.T)]
        on_referent, on_other = weight(head, labels, "it", referent), weight(head, labels, "it", other)
        return [
            f"A thought experiment: 'it' puts {fmt(on_referent)} of its attention on '{referent}' and "
            f"{fmt(on_other)} on '{other}', because x_it already carries a trace of '{adjective}' "
            f"(x_it = {fmt_vector(head.X[it], 1)}), as if an earlier layer that reads the whole sentence had "
            f"put it there; the mask is off to match that story. A causal model's 'it' cannot carry a word "
            f"that comes after it (the preset '{adjective}' shows what it does instead).",
            f"The trace does the work, not the mask: with the mask on, 'it' loses "
            f"{' and '.join(repr(t) for t in later)} and puts "
            f"{fmt(on.weights[it, row(labels, referent)])} on '{referent}' "
            f"({fmt(off.weights[it, row(labels, referent)])} with it off).",
        ]

    return describe


def _exercise_1(head: Head, labels) -> list[str]:
    it, sat = row(labels, "it"), row(labels, "sat")
    split = even_split(head, it)
    others = [j for j in range(head.T) if split is None or j not in split]
    return [
        f"x_it = {fmt_vector(head.X[it], 0)}, the same vector as 'sat', so "
        f"q_it = q_sat = {fmt_vector(head.Q[it])} and k_it = k_sat = {fmt_vector(head.K[it])}. "
        f"'it' scores 'sat' and itself alike "
        f"({fmt(head.scores[it, sat])} each) and splits its attention evenly between them, "
        f"{fmt(head.weights[it, sat])} and {fmt(head.weights[it, it])}; "
        + ", ".join(f"'{labels[j]}' gets {fmt(head.weights[it, j])}" for j in others)
        + ". The weights come from W_Q and W_K alone; W_V only decides what they blend, "
        f"here {fmt_vector(head.output[it])}."
    ]


def _exercise_3_unscaled(head: Head, labels) -> list[str]:
    it, cat = row(labels, "it"), row(labels, "cat")
    base = variant(head, x_scale=1.0 / head.x_scale)
    growth = head.scores[it, cat] / base.scores[it, cat]
    return [
        f"X × {fmt(head.x_scale, 0)} goes into both queries and keys, so every score is "
        f"{fmt(growth, 0)} times the chapter's ('it' on 'cat': "
        f"{fmt(head.scores[it, cat])} instead of {fmt(base.scores[it, cat])}). "
        f"Without ÷√d the rows are one-hot to the eye: 'it' puts {near_one(head, it, cat)} on 'cat'."
    ]


def _exercise_3_scaled(head: Head, labels) -> list[str]:
    it, cat = row(labels, "it"), row(labels, "cat")
    unscaled = variant(head, scaling=False)
    growth = head.scores[it, cat] / variant(head, x_scale=1.0 / head.x_scale).scores[it, cat]
    return [
        f"The same X × {fmt(head.x_scale, 0)} with ÷√d back on. The scores grew {fmt(growth, 0)}-fold and "
        f"÷√{head.d} takes back only {fmt(math.sqrt(head.d))} of that, so the rows still look one-hot: 'it' "
        f"puts {near_one(head, it, cat)} on 'cat' ({near_one(unscaled, it, cat)} without the "
        f"division). Dividing by √d cannot undo scores that grew because X did; what it is for, spreads that "
        f"grow with d, shows at d = {SATURATION_D} in the 'Why ÷√d' tab."
    ]


def _no_scaling(head: Head, labels) -> list[str]:
    it, cat = row(labels, "it"), row(labels, "cat")
    scaled = variant(head, scaling=True)
    return [
        f"Without ÷√d 'it' keeps its raw scores {fmt_vector(head.scores[it])}, and its weight on 'cat' "
        f"rises from {fmt(scaled.weights[it, cat])} to {fmt(head.weights[it, cat])}: at d = {head.d} the "
        f"division is only by {fmt(math.sqrt(head.d))}, so dropping it sharpens the rows a little. At "
        f"d = {SATURATION_D} it divides by {fmt(math.sqrt(SATURATION_D), 1)} (the 'Why ÷√d' tab)."
    ]


def tied_lines(head: Head, labels) -> list[str]:
    """What tying W_K to W_Q does to every row, in the head's numbers."""
    reading = self_reading(head)
    longest = max(reading, key=lambda r: r[1])
    lines = [
        f"'{labels[longest[0]]}' has the longest query (|q| = {fmt(longest[1])}) and keeps "
        f"{fmt(longest[2])} on itself"
    ]
    for i in range(head.T):
        split = even_split(head, i)
        if split is not None and i in split and head.T > 1:
            j = split[0] if split[1] == i else split[1]
            if np.allclose(head.Q[i], head.Q[j]):
                lines.append(
                    f"'{labels[i]}' has the same query as '{labels[j]}', {fmt_vector(head.Q[i])}, so now the "
                    f"same key too, and splits evenly between them ({fmt(head.weights[i, i])} each)"
                )
    for i in range(head.T):
        j = top_key(head, i)
        if j != i and norm(head.K[j]) > norm(head.Q[i]) and even_split(head, i) is None:
            lines.append(
                f"'{labels[i]}' (|q| = {fmt(norm(head.Q[i]))}) still reads '{labels[j]}' most, "
                f"{fmt(head.weights[i, j])}, because that key is longer than its own"
            )
    return lines


def _tied_qk(head: Head, labels) -> list[str]:
    untied = CHAPTER.head()
    cat = row(labels, "cat")
    text = [
        "W_K is replaced by W_Q, so each key is its token's query and a token's score against itself is "
        "its query's squared length, the most that any key no longer than that query can give "
        "(q·k ≤ |q||k|). " + "; ".join(tied_lines(head, labels)) + ".",
        f"Tying is not why 'cat' reads itself: untied, in the chapter's example, it already put "
        f"{fmt(untied.weights[cat, cat], 3)} there ({fmt(head.weights[cat, cat], 3)} tied).",
    ]
    elsewhere = [i for i in range(head.T) if head.weights[i].max() > head.weights[i, i] + 1e-9]
    if elsewhere:
        text.append(
            "Footnote: the chapter says that with tied matrices every token attends mostly to itself; that "
            "holds for a token whose query is at least as long as the keys it sees. Here "
            + " and ".join(f"'{labels[i]}'" for i in elsewhere)
            + (" reads" if len(elsewhere) == 1 else " read")
            + " another token most."
        )
    return text


def _no_softmax(head: Head, labels) -> list[str]:
    i = row(labels, "it")
    w = head.weights[i]
    negative = [j for j in range(head.T) if w[j] < 0]
    sizes = raw_row_sizes(head)
    growing = sizes[:1]
    for r in sizes[1:]:
        if r[2] <= growing[-1][2]:
            break
        growing.append(r)
    soft = variant(head, normaliser="softmax")
    return [
        f"Scores used as weights: 'it' weights {fmt_vector(w)}, summing to {fmt(w.sum())}"
        + (
            ", with a negative weight on " + " and ".join(f"'{labels[j]}' ({fmt(w[j])})" for j in negative)
            if negative
            else ""
        )
        + ". 'dog' has the vector of 'cat', and 'not' minus it.",
        "With the mask each row reads one key more than the row above, and here the output grows with them: "
        + ", ".join(f"'{labels[k]}' {fmt(size)} ({n} key{'s' if n > 1 else ''})" for k, n, size in growing)
        + ". The softmax keeps these rows averages of the values: "
        + ", ".join(fmt(norm(soft.output[k])) for k, _, _ in growing)
        + ".",
    ]


def _no_mask(head: Head, labels) -> list[str]:
    the = row(labels, "The")
    j = top_key(head, the)
    masked = variant(head, causal=True)
    return [
        f"Tokens can read the ones after them: weights appear above the diagonal, and 'The' now puts "
        f"{fmt(head.weights[the, j])} on '{labels[j]}', a later token "
        f"(with the mask it can only read itself, {fmt(masked.weights[the, the])})."
    ]


def tied_top(head: Head, i: int) -> list[int]:
    """The keys whose (masked, scaled) scores tie for row i's largest, when more than one does."""
    m = head.masked[i]
    best = np.flatnonzero(m == m.max())
    return best.tolist() if best.size > 1 else []


def top1_lines(head: Head, labels, i: int) -> list[str]:
    j = top_key(head, i)
    me = labels[i]
    lines = [f"'{me}' takes the value of '{labels[j]}' whole: output {fmt_vector(head.output[i])}"]
    flip = first_flip(head, i)
    if flip is not None:
        c, before, at, k = flip
        moved = head.X.copy()
        moved[i, c] = before
        last = variant(head, X=moved)  # the last slider position before the jump
        tie = tied_top(last, i)
        lines.append(
            f"drag {me}[{c}] from {fmt(head.X[i, c])} to {fmt(before)} and it stays there"
            + (
                f" (at {fmt(before)} "
                + " and ".join(f"'{labels[t]}'" for t in tie)
                + f" score exactly alike, {fmt(last.scores[i, tie[0]])} each, and top-1 gives a tie to the "
                "earlier key)"
                if tie
                else ""
            )
            + f"; one step more, at {fmt(at)}, it jumps to the value of '{labels[k]}', "
            f"{fmt_vector(head.V[k])}, with nothing in between"
        )
    return lines


def _top_1(head: Head, labels) -> list[str]:
    it = row(labels, "it")
    soft = variant(head, normaliser="softmax")
    return [
        "Each row puts all its weight on its largest score. "
        + "; ".join(top1_lines(head, labels, it))
        + f". The softmax's blend was {fmt_vector(soft.output[it])}."
    ]


def _largest_weight(head, i: int) -> tuple[float, int]:
    w = head.weights[i]
    j = max(range(len(w)), key=lambda k: (w[k], -k))
    return float(w[j]), j


def temperature_note(head, i: int | None = None, labels=None) -> str:
    """What τ is doing to the head on screen, with its numbers (the same head at τ = 1 beside it)."""
    if head is None:  # no head to quote: what to look for in general
        return (
            "scores ÷ τ before the softmax: below 1 the weights sharpen towards one key, above 1 they "
            "flatten."
        )

    i = head.T - 1 if i is None else i
    labels = [str(k) for k in range(head.T)] if labels is None else list(labels)
    at_one = attend(
        head.X, head.W_Q, head.W_K, head.W_V, options=head.options.replace(x_scale=1.0, temperature=1.0)
    )
    w, j = _largest_weight(head, i)
    w1, j1 = _largest_weight(at_one, i)
    tau = head.options.temperature
    if head.options.normaliser == "raw":
        return (
            f"τ = {tau:g} divides the scores, and raw weights are the scores: each weight is "
            f"{1 / tau:.2f} times its size at τ = 1."
        )
    if head.options.normaliser == "top1":
        return f"τ = {tau:g} divides every score alike, so top-1 still picks the same key."
    if tau == 1:
        return (
            f"τ = 1 leaves the scores as they are: '{labels[i]}' puts {w:.2f} on '{labels[j]}'. "
            "Below 1 the softmax sharpens towards one key; above 1 it flattens towards an even split."
        )
    way = "sharpens" if tau < 1 else "flattens"
    return (
        f"τ = {tau:g} divides every score by {tau:g}, so the softmax {way}: '{labels[i]}' puts {w:.2f} on "
        f"'{labels[j]}' (at τ = 1: {w1:.2f} on '{labels[j1]}')."
    )


def _temperature(head: Head, labels) -> list[str]:
    return [temperature_note(head, row(labels, "it"), labels)]


PRESET_NOTES: dict[str, Callable[[Head, tuple], list[str]]] = {
    "chapter": _chapter,
    "tired": _sentence("cat", "mat", "tired"),
    "soft": _sentence("mat", "cat", "soft"),
    "tired-trace": _sentence_trace("cat", "mat", "tired"),
    "soft-trace": _sentence_trace("mat", "cat", "soft"),
    "exercise-1": _exercise_1,
    "exercise-3-unscaled": _exercise_3_unscaled,
    "exercise-3-scaled": _exercise_3_scaled,
    "no-scaling": _no_scaling,
    "tied-qk": _tied_qk,
    "no-softmax": _no_softmax,
    "no-mask": _no_mask,
    "top-1": _top_1,
    "temperature-low": _temperature,
    "temperature-high": _temperature,
}


def note(name: str, head: Head, labels) -> list[str]:
    """The note for preset `name`, as paragraphs, with the numbers of `head` (that preset as loaded).

    A paragraph starting "Footnote:" marks a slip in the chapter's own arithmetic.
    An unknown name gets no note ([]).
    """
    describe = PRESET_NOTES.get(name)
    return describe(head, tuple(str(x) for x in labels)) if describe else []


# --- "What each switch shows": the chapter's example with one switch flipped --------


@functools.cache
def chapter_switch_notes() -> dict[str, str]:
    """switch_notes() of the chapter's example, worked out once (the top-1 note tries ~500 positions)."""
    return switch_notes()


def switch_notes(head: Head | None = None, labels=None, query: str | None = None) -> dict[str, str]:
    """One sentence or two per switch, quoting what flipping it does to `head` (the chapter's by default).

    Keys: scaling, causal, tied_qk, raw, top1, x_scale.
    """
    if head is None:
        head, labels, query = CHAPTER.head(), CHAPTER.tokens, CHAPTER.query
    labels = tuple(str(x) for x in labels)
    i = query_row(labels, query, head.T)
    me = labels[i]
    j = top_key(head, i)
    top = labels[j]
    notes = {}

    flipped = variant(head, scaling=not head.scaling)
    on, off = (head, flipped) if head.scaling else (flipped, head)
    many = many_rows(SATURATION_D, DEFAULT_T)
    notes["scaling"] = (
        f"scores keep their full spread, so rows sharpen: at d = {head.d} only a little ('{me}' on '{top}' "
        f"{fmt(on.weights[i, j])} → {fmt(off.weights[i, j])}); at d = {SATURATION_D} a lot "
        f"(the 'Why ÷√d' tab: over {many.rows:,} random rows of {many.T} keys the largest weight averages "
        f"{fmt(many.max_weight_raw[0])} without the division, "
        f"{fmt(many.max_weight_scaled[0])} with it, and {percent(many.stuck_raw)} of the rows pass almost "
        "no gradient back)."
    )

    unmasked = variant(head, causal=False)
    k = later_reader(unmasked)
    notes["causal"] = "earlier tokens can read later ones; weights appear above the diagonal" + (
        f" ('{labels[k]}' puts {fmt(unmasked.weights[k, top_key(unmasked, k)])} on the later "
        f"'{labels[top_key(unmasked, k)]}')."
        if k is not None
        else "."
    )

    tied = variant(head, tied_qk=True)
    notes["tied_qk"] = (
        "each key becomes its token's query, so a token's score against itself is its query's squared "
        "length, the most any key no longer than that query can give: "
        + "; ".join(tied_lines(tied, labels))
        + "."
    )

    cooled = variant(head, temperature=0.5)
    notes["temperature"] = temperature_note(cooled, i, labels)

    raw = variant(head, normaliser="raw")
    w = raw.weights[i]
    c = outside_values(raw, i)
    negative = bool((raw.weights < 0).any())
    notes["raw"] = (
        f"no softmax, so the weights are the scores themselves: '{me}' weights {fmt_vector(w)}, summing to "
        f"{fmt(w.sum())}"
        + (
            f", and its output {fmt_vector(raw.output[i])} leaves the values' hull "
            f"(coordinate {c} is beyond every value's)"
            if c is not None
            else ""
        )
        + (
            ". Here no score is negative; the 'Breaks: no softmax' preset shows negative weights and outputs "
            "that grow with the keys read."
            if not negative
            else "."
        )
    )

    hard = variant(head, normaliser="top1")
    notes["top1"] = "all weight on one key: " + "; ".join(top1_lines(hard, labels, i)) + "."

    doubled = variant(head, x_scale=2.0)
    notes["x_scale"] = (
        f"every score grows with the square of the factor: × 2 makes each score "
        f"{fmt(doubled.scores[i, j] / head.scores[i, j], 0)} times larger, and '{me}' on '{top}' goes from "
        f"{fmt(head.weights[i, j])} to {fmt(doubled.weights[i, j])}."
    )
    return notes


# --- the explorer tabs ---------------------------------------------------------------


def gpu_note(cost: LongContextCost) -> str:
    """One layer's score matrices against today's GPU sizes, beside the chapter's 80–192 GB."""
    layer = cost.score_bytes_per_layer
    low, high = CHAPTER_GPU_MEMORY_GB
    ratios = ", ".join(f"{layer / (gb * 1e9):.2g}× {gb} GB" for gb in GPU_PARTS_GB)
    return (
        f"The chapter says a top GPU holds {low}–{high} GB; parts sold today hold "
        f"{GPU_PARTS_GB[0]} to {GPU_PARTS_GB[-1]} GB "
        f"({', '.join(str(g) for g in GPU_PARTS_GB)} GB among them). "
        f"One layer's score matrices here, ≈ {human_bytes(layer)}, are {ratios}."
        + (
            f" The chapter's 'by a factor of ten per layer' is the {GPU_PARTS_GB[0]} GB case."
            if cost.inputs.T == CHAPTER_CONTEXT and cost.inputs.heads == 32 and cost.inputs.element_bytes == 2
            else ""
        )
    )


def percent(share: float) -> str:
    """A share of rows as the notes write it: 0.297 → '30%'."""
    return f"{100 * share:.0f}%"


def saturation_note(point: SaturationPoint, many: ManyRows | None = None) -> str:
    """At d = 128, the chapter's "one-hot" against the mean over many random rows, with their spread
    ("" at other widths); `many` is many_rows(128, 64) unless given."""
    if point.d != SATURATION_D:
        return ""
    m = many or many_rows(SATURATION_D, DEFAULT_T)
    mean, spread = m.max_weight_raw
    return (
        f"The chapter calls the softmax of unscaled scores at d = {SATURATION_D} one-hot. Over {m.rows:,} "
        f"random rows of {m.T} keys its largest weight averages {fmt(mean)}, and rows spread "
        f"± {fmt(spread)} about that: "
        + ("nearly all of it on one key, but not one-hot" if mean >= 0.75 else "not one-hot yet")
        + f"; {percent(m.stuck_raw)} of those rows pass back a gradient smaller than {STUCK:g} "
        f"({percent(m.stuck_scaled)} with ÷√d)."
    )
