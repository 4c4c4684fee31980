"""The lab's command line: `python -m core.train RUN` trains a run and prints how it did on its last
line; `--all` regenerates every shipped run and the index in static/lab/."""

from __future__ import annotations

import argparse
import os
import sys
import time

from core.lab.runs import RUNS, final_line, train
from core.lab.store import write_index, write_run

DESCRIPTION = "Train the training lab's tiny attention models in numpy."


def one_blas_thread() -> None:
    """Re-run this command with one BLAS thread: for these tiny matrices threads only add overhead."""
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        os.execve(sys.executable, [sys.executable, "-m", "core.train", *sys.argv[1:]], env)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.train", description=DESCRIPTION)
    parser.add_argument("run", nargs="?", choices=sorted(RUNS), help="the run to train")
    parser.add_argument("--all", action="store_true", help="regenerate every shipped run in static/lab/")
    parser.add_argument("--steps", type=int, help="training steps (default: the run's own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="also write the run's data file")
    args = parser.parse_args(argv)
    if args.all == bool(args.run):
        parser.error("name one run, or --all")
    if args.steps is not None and args.steps < 1:
        parser.error("--steps must be at least 1")
    if argv is None:
        one_blas_thread()
    names = list(RUNS) if args.all else [args.run]
    for name in names:
        t0 = time.perf_counter()
        if args.all or args.write:
            _, line = write_run(name, seed=args.seed, steps=args.steps)
        else:
            line = final_line(train(RUNS[name], seed=args.seed, steps=args.steps, record=False))
        print(f"{name}: trained in {time.perf_counter() - t0:.1f} s")
        print(line, flush=True)
    if args.all or args.write:
        write_index()
    return 0


if __name__ == "__main__":
    sys.exit(main())
