"""The head's switches, declared once.

`Options` is the frozen value a head is computed with; `SWITCHES` is the one
table that says, for each option, how people meet it: its label on the page,
its key in a link, its command-line flag, the kind of control, its limits and
what to look for when it is flipped.  The controls, the link codec, the
command line, the step trace, the downloads and the JavaScript page all read
this table (the page gets it as JSON through `table_json`), so a new switch is
one row here plus its arithmetic in `core.attention` and its port.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields

# Above this, products of entries overflow float64 somewhere in Q·Kᵀ; well
# before it the softmax is one-hot anyway, so nothing is lost by refusing.
LARGEST_ENTRY = 1e100


class AttentionError(ValueError):
    """The head's inputs or options cannot be used; the message names the field."""


@dataclass(frozen=True)
class Options:
    """How the head computes: the chapter's head is Options() (every switch at its default)."""

    scaling: bool = True  # divide the scores by √d
    causal: bool = True  # hide keys after the query
    tied_qk: bool = False  # use W_Q for the keys too
    normaliser: str = "softmax"  # softmax | raw | top1
    x_scale: float = 1.0  # multiply X first
    temperature: float = 1.0  # divide the scores by τ after the optional ÷√d

    def as_dict(self) -> dict:
        return asdict(self)

    def replace(self, **changes) -> Options:
        """A checked copy with some options changed (AttentionError names a bad one)."""
        values = self.as_dict()
        for name, value in changes.items():
            values[name] = check_option(name, value)
        return Options(**values)


OPTION_NAMES = tuple(f.name for f in fields(Options))


class OptionsByName:
    """A mixin for anything with an `options` field: each option reads as its own attribute.

    `head.causal` is `head.options.causal`, and so on for every name in
    OPTION_NAMES, as the rest of the code and the chapter say them.
    """

    __slots__ = ()


for _name in OPTION_NAMES:
    setattr(OptionsByName, _name, property(lambda self, _name=_name: getattr(self.options, _name)))
del _name


@dataclass(frozen=True)
class Switch:
    """One option as the user meets it.

    kind: "toggle" (on/off), "choice" (one of `choices`) or "number" (a float within low..high;
    `slider` = (start, end, step) when the page shows a slider for it, else a number box).
    `look_for()` says, in plain text, what to watch when the switch is flipped: it quotes the chapter's
    example with that switch flipped (core/notes.py works the numbers out), not the head on screen, as the
    panel that shows it says ("Each flipped alone on the chapter's example").
    `cli_flag`: for a toggle, the flag that sets the opposite of its default.
    """

    name: str
    label: str
    url_key: str
    cli_flag: str
    kind: str
    look_for: Callable
    choices: tuple[str, ...] = ()
    choice_labels: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    slider: tuple[float, float, float] | None = None
    cli_help: str = ""
    cli_metavar: str = "N"
    flipped: str = ""  # how the notes name the switch once flipped ("Mask off")

    @property
    def default(self):
        return getattr(Options(), self.name)


def _chapter_note(*keys: str) -> Callable:
    """What to look for, as core/notes.py words it: the chapter's example with this switch flipped."""

    def look_for() -> str:
        from core.notes import chapter_switch_notes  # here: core.notes imports this module

        notes = chapter_switch_notes()
        if len(keys) == 1:
            return notes[keys[0]]
        return " ".join(f"{label}: {notes[k]}" for k, label in zip(keys, ("raw scores", "top-1")))

    return look_for


# What each switch is and what to look for when it is flipped; each note quotes the chapter's example with
# the switch flipped, its numbers worked out (core/notes.py), never typed.
SWITCHES: tuple[Switch, ...] = (
    Switch(
        "scaling",
        "Divide scores by √d",
        "scale",
        "--no-scale",
        "toggle",
        _chapter_note("scaling"),
        cli_help="skip the division by √d",
        flipped="÷√d off",
    ),
    Switch(
        "causal",
        "Causal mask (hide later tokens)",
        "mask",
        "--no-mask",
        "toggle",
        _chapter_note("causal"),
        cli_help="let tokens read the ones after them",
        flipped="Mask off",
    ),
    Switch(
        "tied_qk",
        "Tie keys to queries (W_K = W_Q)",
        "tied",
        "--tied-qk",
        "toggle",
        _chapter_note("tied_qk"),
        cli_help="use W_Q for the keys too",
        flipped="W_K = W_Q",
    ),
    Switch(
        "normaliser",
        "Turn scores into weights with",
        "norm",
        "--normaliser",
        "choice",
        _chapter_note("raw", "top1"),
        choices=("softmax", "raw", "top1"),  # core.attention.NORMALISE has one rule for each
        choice_labels=("softmax", "raw scores", "top-1"),
        cli_help="how scores become weights (default softmax)",
        flipped="Raw scores or top-1",
    ),
    Switch(
        "x_scale",
        "Multiply X by",
        "xscale",
        "--x-scale",
        "number",
        _chapter_note("x_scale"),
        low=-LARGEST_ENTRY,
        high=LARGEST_ENTRY,
        cli_help="multiply X by F first",
        flipped="Multiply X",
        cli_metavar="F",
    ),
    Switch(
        "temperature",
        "Softmax temperature τ (scores ÷ τ)",
        "temp",
        "--temperature",
        "number",
        _chapter_note("temperature"),
        low=0.05,
        high=5.0,
        slider=(0.05, 5.0, 0.05),
        cli_help="divide the scores by T after the optional ÷√d (default 1)",
        flipped="Temperature τ",
        cli_metavar="T",
    ),
)
SWITCH = {s.name: s for s in SWITCHES}
assert tuple(SWITCH) == OPTION_NAMES, "every option needs one row in SWITCHES, in the same order"
NORMALISERS = SWITCH["normaliser"].choices


# --- checking a value against the table ------------------------------------------


def number_text(x: float) -> str:
    """A float as Python's repr writes it (the JavaScript port writes it the same way)."""
    return repr(float(x))


def as_finite_number(name: str, value) -> float:
    """`value` as a float, or AttentionError if it is not a usable number."""
    if isinstance(value, bool):
        value = float(value)
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise AttentionError(f"{name} is {value!r}; expected a number") from None
    if not math.isfinite(x):
        raise AttentionError(f"{name} is {x}; expected a finite number")
    if abs(x) > LARGEST_ENTRY:
        raise AttentionError(f"{name} is {x:g}; it must lie within ±{LARGEST_ENTRY:g}")
    return x


def check_option(name: str, value):
    """The value an option takes, or AttentionError naming it and saying what it accepts."""
    s = SWITCH.get(name)
    if s is None:
        raise AttentionError(f"there is no option called {name!r}")
    if s.kind == "toggle":
        return bool(value)
    if s.kind == "choice":
        if value not in s.choices:
            raise AttentionError(f"{name} is {value!r}; expected one of {', '.join(s.choices)}")
        return value
    x = as_finite_number(name, value)
    if not s.low <= x <= s.high:
        raise AttentionError(f"{name} is {x:g}; expected a number from {s.low:g} to {s.high:g}")
    return x


# --- the command lines' flags (core/one_head_by_hand.py, core/lab/cli.py) ------------------------------


def add_flags(parser) -> None:
    """One argparse flag per switch (its `cli_flag`), stored under the switch's name: a toggle's flag sets the
    opposite of its default, a choice or a number takes its value."""
    for s in SWITCHES:
        if s.kind == "toggle":
            flip = not s.default
            parser.add_argument(s.cli_flag, dest=s.name, action="store_const", const=flip, help=s.cli_help)
        elif s.kind == "choice":
            parser.add_argument(s.cli_flag, dest=s.name, choices=s.choices, help=s.cli_help)
        else:
            parser.add_argument(s.cli_flag, dest=s.name, type=float, metavar=s.cli_metavar, help=s.cli_help)


def flags_given(args) -> dict:
    """The switches set on the command line (parsed by a parser `add_flags` made), by name, checked."""
    given = {s.name: getattr(args, s.name) for s in SWITCHES if getattr(args, s.name) is not None}
    return {name: check_option(name, v) for name, v in given.items()}


def table_json() -> list[dict]:
    """The table as plain data for the JavaScript page (notes are sent computed, per state, by Python)."""
    keys = (
        "name",
        "label",
        "url_key",
        "cli_flag",
        "kind",
        "choices",
        "choice_labels",
        "low",
        "high",
        "slider",
    )
    return [
        {k: (list(v) if isinstance(v, tuple) else v) for k in keys for v in [getattr(s, k)]}
        | {"default": s.default}
        for s in SWITCHES
    ]
