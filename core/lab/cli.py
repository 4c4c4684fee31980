"""The lab's command line: `python -m core.train RUN [--seed S] [--steps N] [switches]` trains a run and
prints how it did on its last line; `--all` regenerates every shipped run (at every seed of
core.lab.runs.SEEDS) and the index in static/lab/, `RUN --write` one run's file and the index.

The switches are the explorer's flags (core.options.SWITCHES: `--no-mask`, `--temperature 0.3`, ...), set on
top of the run's own, so a run a student trains in the page (static/train.js) can be trained here too: the
page shows the command, and its last line is this one's."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from core.lab.runs import DEFAULT_SEED, RUNS, SEEDS, final_line, train
from core.lab.store import write_index, write_run
from core.options import AttentionError, add_flags, flags_given

DESCRIPTION = "Train the training lab's tiny attention models in numpy."


def with_switches(run, changes: dict):
    """`run` with some switches set; a run whose mask is off is also evaluated honestly (static/train.js
    does the same)."""
    if not changes:
        return run
    switches = run.switches.replace(**changes)
    return replace(run, switches=switches, honest=not switches.causal)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.train", description=DESCRIPTION)
    parser.add_argument("run", nargs="?", choices=list(RUNS), help="the run to train")
    parser.add_argument("--all", action="store_true", help="regenerate every shipped run in static/lab/")
    parser.add_argument("--steps", type=int, help="training steps (default: the run's own)")
    parser.add_argument("--seed", type=int, help=f"the seed (default {DEFAULT_SEED})")
    parser.add_argument(
        "--write", action="store_true", help=f"regenerate the run's data file (seeds {SEEDS[0]}–{SEEDS[-1]})"
    )
    add_flags(parser)  # one flag per switch, as the explorer's command line has them
    args = parser.parse_args(argv)
    if args.all == bool(args.run):
        parser.error("name one run, or --all")
    if args.steps is not None and args.steps < 1:
        parser.error("--steps must be at least 1")
    writing = args.all or args.write
    if writing and args.seed is not None:
        parser.error("a data file holds every shipped seed: --seed trains and prints one run only")
    if args.seed is not None and not 0 <= args.seed < 2**32:
        parser.error("--seed must be a whole number from 0 to 4294967295")
    try:
        changes = flags_given(args)
    except AttentionError as err:
        parser.error(str(err))
    if writing and changes:
        parser.error("a data file holds a shipped run as declared: switches train and print one run only")
    for name in list(RUNS) if args.all else [args.run]:
        t0 = time.perf_counter()
        if writing:
            write_run(name, steps=args.steps, echo=lambda line: print(line, flush=True))
            print(f"{name}: {len(SEEDS)} seeds trained in {time.perf_counter() - t0:.1f} s", flush=True)
        else:
            seed = DEFAULT_SEED if args.seed is None else args.seed
            result = train(with_switches(RUNS[name], changes), seed=seed, steps=args.steps, record=False)
            print(f"{name}: trained in {time.perf_counter() - t0:.1f} s")
            print(final_line(result), flush=True)
    if writing:
        write_index()
    return 0


if __name__ == "__main__":
    sys.exit(main())
