"""The six steps for one query token, as numbers and as short lines of text.

The command line prints this and the widget shows it, so both say the same
thing in the same words.  The static export's JavaScript port produces the
same text; a parity test holds the two together, so keep the formatting
rules here simple and explicit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.attention import AttentionError, Head, exp

# Above this a number is printed in exponent form so columns stay narrow.
EXPONENT_FROM = 1e6
# exp() of a scaled score is shown as is up to here, else relative to the row's max.
EXP_SHOWN_UP_TO = 50.0


def fmt(x: float, digits: int = 2) -> str:
    """One number for display: −∞ for masked, no "-0.00", exponent form when huge."""
    x = float(x)
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    if math.isnan(x):
        return "NaN"
    text = f"{x:.{digits}e}" if abs(x) >= EXPONENT_FROM else f"{x:.{digits}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]
    return text


def fmt_vector(values, digits: int = 2) -> str:
    return "[" + ", ".join(fmt(v, digits) for v in values) + "]"


@dataclass(frozen=True)
class Step:
    number: int
    name: str
    lines: tuple[str, ...]
    values: np.ndarray  # the query's row (or output) after this step


@dataclass(frozen=True)
class RowChecks:
    """What a careful reader would verify about the query's row of weights."""

    row_sum: float
    masked_keys: int  # how many keys the mask hid from this query
    masked_max: float  # largest |weight| on a masked key; 0 when nothing is masked
    max_weight: float
    max_key: int
    entropy: float | None  # nats; None when the weights are not a distribution
    shown_hundredths: int  # the weights as the steps show them (two places) added up, in hundredths


@dataclass(frozen=True)
class Trace:
    query: int
    label: str
    steps: tuple[Step, ...]
    checks: RowChecks

    def text(self) -> str:
        width = max(len(f"step {s.number} {s.name}") for s in self.steps)
        out = []
        for s in self.steps:
            head = f"step {s.number} {s.name}".ljust(width)
            out.append(f"{head}  {s.lines[0]}")
            out.extend(" " * width + f"  {line}" for line in s.lines[1:])
        return "\n".join(out)


# Near float64's limit, s − max and sums of raw weights overflow to ±∞ (shown as ∞): not worth a warning.
@np.errstate(over="ignore")
def row_checks(head: Head, i: int) -> RowChecks:
    w = head.weights[i]
    hidden = head.future[i]
    is_distribution = head.normaliser != "raw" or bool(np.all(w >= 0) and abs(w.sum() - 1) < 1e-9)
    entropy = None
    if is_distribution:
        p = w[w > 0]
        entropy = float(-(p * np.log(p)).sum()) + 0.0
    return RowChecks(
        row_sum=float(w.sum()),
        masked_keys=int(hidden.sum()),
        masked_max=float(np.abs(w[hidden]).max()) if hidden.any() else 0.0,
        max_weight=float(w.max()),
        max_key=int(np.argmax(w)),
        entropy=entropy,
        shown_hundredths=shown_hundredths(w),
    )


def shown_hundredths(w) -> int:
    """What the weights add to as printed at two places ("0.13" + "0.56" + … ), in hundredths, exactly:
    the chapter's own rounded weights for 'it' add to 1.01. Only meaningful for weights below 1e6."""
    return sum(int(fmt(v).replace(".", "")) for v in w) if np.all(np.abs(w) < 1e6) else 0


@np.errstate(over="ignore")
def trace(head: Head, i: int, labels) -> Trace:
    """Walk query token i through the head, one line or two per step."""
    labels = tuple(str(x) for x in labels)
    if len(labels) != head.T:
        raise AttentionError(f"labels has {len(labels)} entries; expected {head.T}, one per token")
    if not 0 <= i < head.T:
        raise AttentionError(f"query is {i}; expected a token index from 0 to {head.T - 1}")
    me = labels[i]
    q, S, scaled, masked, w = head.Q[i], head.scores[i], head.scaled[i], head.masked[i], head.weights[i]
    steps = [
        Step(
            1,
            "project",
            (
                f"q_{me} = x_{me}·W_Q = {fmt_vector(q)}",
                "keys   " + "  ".join(f"{k} {fmt_vector(v)}" for k, v in zip(labels, head.K)),
                "values " + "  ".join(f"{k} {fmt_vector(v)}" for k, v in zip(labels, head.V)),
            ),
            q.copy(),
        ),
        Step(2, "scores", (f"q_{me} · k_j = {fmt_vector(S)}",), S.copy()),
        Step(3, "scale", _scale_lines(head, S, scaled), scaled.copy()),
        Step(4, "mask", (_mask_line(head, i, labels),), masked.copy()),
        Step(5, _normaliser_name(head), _normaliser_lines(head, masked, w, labels), w.copy()),
        Step(6, "blend", _blend_lines(w, head.V, head.output[i]), head.output[i].copy()),
    ]
    return Trace(query=i, label=me, steps=tuple(steps), checks=row_checks(head, i))


def _scale_lines(head: Head, S: np.ndarray, scaled: np.ndarray) -> tuple[str, ...]:
    """÷√d (or why not), then ÷τ when the temperature is not 1."""
    tau = head.temperature
    if tau == 1:
        rooted = scaled
    else:
        rooted = S / math.sqrt(head.d) if head.scaling else S
    if not head.scaling:
        first = "scaling is off, so the scores are used as they are"
    else:
        first = f"divide by √{head.d} = {fmt(math.sqrt(head.d), 3)}: {fmt_vector(rooted)}"
    if tau == 1:
        return (first,)
    return (first, f"divide by the temperature τ = {fmt(tau)}: {fmt_vector(scaled)}")


def _mask_line(head: Head, i: int, labels) -> str:
    if not head.causal:
        return "the mask is off, so every key stays, later ones too"
    later = labels[i + 1 :]
    if not later:
        return f"no token comes after '{labels[i]}', so nothing changes"
    names = ", ".join(f"'{k}'" for k in later)
    return f"{names} come{'s' if len(later) == 1 else ''} later: set to −∞"


def _normaliser_name(head: Head) -> str:
    return {"softmax": "softmax", "raw": "no softmax", "top1": "top-1"}[head.normaliser]


def _normaliser_lines(head: Head, masked: np.ndarray, w: np.ndarray, labels) -> tuple[str, ...]:
    if head.normaliser == "raw":
        return (f"weights = the scores, masked ones 0 = {fmt_vector(w)}, sum {fmt(w.sum())}",)
    if head.normaliser == "top1":
        j = int(np.argmax(w))
        return (f"all the weight on the largest score, '{labels[j]}': {fmt_vector(w)}",)
    visible = np.isfinite(masked)
    top = float(masked[visible].max())
    if top <= EXP_SHOWN_UP_TO:
        e = np.where(visible, exp(np.where(visible, masked, 0.0)), 0.0)
        lead = "exp →"
    else:  # exp itself would overflow the page; the ratios are what matter
        e = np.where(visible, exp(np.where(visible, masked - top, 0.0)), 0.0)
        lead = f"exp(s − {fmt(top)}) →"
    return (f"{lead} {fmt_vector(e)}, sum {fmt(e.sum())}", f"weights = {fmt_vector(w)}")


def _blend_lines(w: np.ndarray, V: np.ndarray, out: np.ndarray) -> tuple[str, ...]:
    terms = " + ".join(f"{fmt(wj)}·{fmt_vector(vj)}" for wj, vj in zip(w, V) if wj != 0)
    return (f"{terms or '0'}", f"= {fmt_vector(out)}")
