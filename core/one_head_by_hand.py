"""One attention head by hand: print the chapter's weights and outputs.

    python core/one_head_by_hand.py                 # the block the chapter prints
    python -m core.one_head_by_hand --x it=0,0,1 --trace
    python -m core.one_head_by_hand --no-scale --x-scale 4

Every flag changes one thing about the head; --trace walks one query token
through the six steps.  A bad flag or value exits with status 2 and one line.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

if not __package__:  # run as a script: import `core` from the repo root, not from core/
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import numpy as np  # noqa: E402

from core.attention import AttentionError  # noqa: E402
from core.options import add_flags, flags_given  # noqa: E402
from core.presets import PRESETS, Preset  # noqa: E402
from core.trace import trace  # noqa: E402

WEIGHTS_TITLE = {
    "softmax": "weights (softmax per row) =",
    "raw": "weights (raw scores per row) =",
    "top1": "weights (top-1 per row) =",
}


class UsageError(ValueError):
    """A flag's value this command cannot use; its text is written for the reader."""


class Parser(argparse.ArgumentParser):
    """argparse, but every error is a single line on stderr (status 2)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> Parser:
    p = Parser(description="One attention head, computed by hand and printed.")
    p.add_argument("--preset", default="chapter", help=f"one of: {', '.join(PRESETS)} (default chapter)")
    p.add_argument("--query", metavar="TOKEN", help="token label or index to trace (implies --trace)")
    p.add_argument("--trace", action="store_true", help="walk the query token through the six steps")
    p.add_argument("--x", action="append", default=[], metavar="TOKEN=a,b,c",
                   help="set one token's vector (C numbers); repeatable")
    add_flags(p)  # one flag per switch, from core.options.SWITCHES
    return p


def token_index(tokens: tuple[str, ...], name: str) -> int:
    """A token given by its label or by its position."""
    if name in tokens:
        return tokens.index(name)
    if name.lstrip("-").isdecimal() and 0 <= int(name) < len(tokens):
        return int(name)
    raise UsageError(f"unknown token {name!r}; expected one of {', '.join(tokens)} or 0 to {len(tokens) - 1}")


def set_vector(preset: Preset, spec: str) -> Preset:
    """Apply one --x TOKEN=a,b,c."""
    name, sep, values = spec.partition("=")
    if not sep:
        raise UsageError(f"--x {spec!r} should look like TOKEN=a,b,c")
    i = token_index(preset.tokens, name.strip())
    try:
        x = tuple(float(v) for v in values.split(","))
    except ValueError:
        raise UsageError(f"--x {spec!r}: the values must be numbers") from None
    if not all(math.isfinite(v) for v in x):
        raise UsageError(f"--x {spec!r}: the values must be finite numbers")
    C = len(preset.X[0])
    if len(x) != C:
        raise UsageError(f"--x {spec!r} gives {len(x)} values; expected {C}, one per column of X")
    return replace(preset, X=preset.X[:i] + (x,) + preset.X[i + 1:])


def configure(args: argparse.Namespace) -> Preset:
    """The preset named by --preset with every other flag applied."""
    if args.preset not in PRESETS:
        raise UsageError(f"unknown preset {args.preset!r}; expected one of {', '.join(PRESETS)}")
    preset = PRESETS[args.preset]
    for spec in args.x:
        preset = set_vector(preset, spec)
    return preset.with_options(**flags_given(args))


def show(preset: Preset, query: str | None, show_trace: bool) -> None:
    """Print the weights and outputs (numpy's own print), then the trace if asked for."""
    head = preset.head()
    steps = None
    if show_trace or query is not None:
        i = token_index(preset.tokens, query if query is not None else preset.query)
        steps = trace(head, i, preset.tokens)
    with np.printoptions(precision=3, suppress=True):
        print(WEIGHTS_TITLE[head.normaliser])
        print(head.weights)
        print("output = weights · V =")
        print(head.output)
    if steps is not None:
        print()
        print(steps.text())


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        show(configure(args), args.query, args.trace)
    except (AttentionError, UsageError) as exc:  # messages written for the reader
        parser.error(str(exc))
    except Exception as exc:  # a bug: still one line, never a traceback or a library's own words
        parser.exit(1, f"{parser.prog}: error: this head could not be worked out ({type(exc).__name__}); "
                       "please report the command you ran\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
