"""The "Why ÷√d" explorer's settings: a seeded random head and what it measures.

`SaturationSettings` holds the choices (the head width d marked in the
figures, the seed, keys per query T, trials, the row worked out in the open)
and the measurements they give: the sweep over every width in WIDTHS, the
point at the chosen d and that row's softmax and gradient.  It
imports no Panel or Bokeh; static/saturation.js repeats its checks word for
word.  A refused change (a width outside 2..512, a negative seed, a request
too big to compute quickly) leaves everything as it was and says why in
`message` (widgets/refusal.py).
"""

from __future__ import annotations

import dataclasses
import functools

import param

from core.attention import AttentionError
from core.cost import as_count
from core.notes import SATURATION_D
from core.rng import LARGEST_SEED
from core.saturation import (
    DEFAULT_T,
    DEFAULT_WIDTHS,
    HIGH_QUANTILE,
    LOW_QUANTILE,
    STUCK,
    SaturationCurve,
    SaturationPoint,
    WorkedRow,
    as_seed,
    many_rows,
    saturation_curve,
    saturation_point,
    worked_row,
)
from widgets.refusal import REFUSED, Refusing

WIDTHS = DEFAULT_WIDTHS  # 2, 4, …, 512: the sweep drawn in every figure
MIN_D, MAX_D = WIDTHS[0], WIDTHS[-1]
MIN_T, MAX_T = 2, 1024
MAX_TRIALS = 4096
DEFAULT_TRIALS = 128
# Random numbers one sweep may draw, trials · (T + 1) · Σd: about a second of work.
SWEEP_BUDGET = 60_000_000

INPUTS = ("d", "seed", "T", "trials", "row")


@functools.lru_cache(maxsize=32)
def sweep(seed: int, T: int, trials: int) -> SaturationCurve:
    """The measurements at every width in WIDTHS, shared by every session (same inputs, same numbers)."""
    return saturation_curve(WIDTHS, seed=seed, T=T, trials=trials)


@functools.lru_cache(maxsize=256)
def point(d: int, seed: int, T: int, trials: int) -> SaturationPoint:
    """The measurement at one width."""
    return saturation_point(d, seed=seed, T=T, trials=trials)


@functools.lru_cache(maxsize=256)
def row_of(d: int, seed: int, T: int, row: int) -> WorkedRow:
    """Row `row` (1 = the first random query) worked out."""
    return worked_row(d, seed=seed, T=T, row=row - 1)


def check_inputs(d, seed, T, trials, row=1) -> tuple[int, int, int, int, int]:
    """The five inputs as ints, or AttentionError naming the one that cannot be used.

    A row past the trials is taken as the last one (fewer trials keep the row in range).
    """
    d = as_count("d", d, MAX_D)
    if d < MIN_D:
        raise AttentionError(f"d is {d}; pick a head width from {MIN_D} to {MAX_D}")
    seed = as_seed(seed)
    T = as_count("T", T, MAX_T)
    if T < MIN_T:
        raise AttentionError(f"T is {T}; a softmax over one key is always 1, so use {MIN_T} to {MAX_T} keys")
    trials = as_count("trials", trials, MAX_TRIALS)
    draws = trials * (T + 1) * sum(WIDTHS)
    if draws > SWEEP_BUDGET:
        raise AttentionError(
            f"trials × (T + 1) = {trials * (T + 1):,} is too much to redraw quickly "
            f"(at most {SWEEP_BUDGET // sum(WIDTHS):,}); use fewer trials or fewer keys"
        )
    row = min(as_count("row", row, MAX_TRIALS), trials)
    return d, seed, T, trials, row


class SaturationSettings(Refusing):
    """The random head's settings and what it measures; no GUI."""

    d = param.Integer(default=SATURATION_D, bounds=(MIN_D, MAX_D), doc="The head width marked in the figures")
    seed = param.Integer(default=0, bounds=(0, None), doc="Seed for the random queries and keys")
    T = param.Integer(default=DEFAULT_T, bounds=(MIN_T, MAX_T), doc="Keys each query is scored against")
    trials = param.Integer(default=DEFAULT_TRIALS, bounds=(1, MAX_TRIALS), doc="Queries averaged over")
    row = param.Integer(default=1, bounds=(1, MAX_TRIALS), doc="The random query worked out in the open")

    curve = param.Parameter(default=None, constant=True, doc="The sweep over d = 2 … 512")
    point = param.Parameter(default=None, constant=True, doc="The measurement at the chosen d")
    worked = param.Parameter(default=None, constant=True, doc="The chosen row at the chosen d, worked out")

    def __init__(self, **params):
        super().__init__(**params)
        d, seed, T, trials, row = check_inputs(self.d, self.seed, self.T, self.trials, self.row)
        with param.edit_constant(self):
            self.param.update(row=row, curve=sweep(seed, T, trials), point=point(d, seed, T, trials))
            self.worked = row_of(d, seed, T, row)

    def inputs(self) -> dict:
        """The current inputs by name (what static/saturation.js calls the state)."""
        return {name: getattr(self, name) for name in INPUTS}

    def apply(self, **changes) -> bool:
        """Change any inputs together; refuse (and say why) if they cannot be used.

        Returns True when the change was taken.
        """
        unknown = set(changes) - set(INPUTS)
        if unknown:
            raise TypeError(f"not an input of SaturationSettings: {', '.join(sorted(unknown))}")
        try:
            d, seed, T, trials, row = check_inputs(**{**self.inputs(), **changes})
            curve = sweep(seed, T, trials)
            measured = point(d, seed, T, trials)
            worked = row_of(d, seed, T, row)
        except REFUSED as exc:
            return self.refuse(exc)
        with param.parameterized.batch_call_watchers(self), param.edit_constant(self):
            self.param.update(d=d, seed=seed, T=T, trials=trials, row=row, message="")
            if curve is not self.curve:
                self.curve = curve
            self.param.update(point=measured, worked=worked)
        return True


def js_config(settings: SaturationSettings | None = None, *, with_curve: bool = False) -> dict:
    """What static/saturation.js needs to know, from the one place each fact is declared: limits, start.

    `with_curve` adds the start's sweep as Python measured it, so the page need not redraw it on opening.
    """
    from widgets.saturation_viewdata import REFERENCE_STEPS

    s = settings or SaturationSettings()
    extra = {}
    if with_curve:
        c = s.curve
        points = [dataclasses.asdict(point(int(d), c.seed, c.T, c.trials)) for d in WIDTHS]
        extra["start_curve"] = {
            "columns": c.columns(), "T": c.T, "trials": c.trials, "seed": c.seed, "points": points,
        }  # fmt: skip
    return {
        **extra,
        "widths": list(WIDTHS),
        "min_d": MIN_D,
        "max_d": MAX_D,
        "min_T": MIN_T,
        "max_T": MAX_T,
        "max_trials": MAX_TRIALS,
        "sweep_budget": SWEEP_BUDGET,
        "largest_seed": LARGEST_SEED,
        "reference_steps": list(REFERENCE_STEPS),
        "saturation_d": SATURATION_D,  # the width core/notes.py saturation_note speaks of
        # …and the figures it quotes, over more rows than a page draws (Python's; the page is given them)
        "many_rows": dataclasses.asdict(many_rows(SATURATION_D, DEFAULT_T)),
        "stuck": STUCK,
        "quantiles": [LOW_QUANTILE, HIGH_QUANTILE],
        "start": s.inputs(),
    }
