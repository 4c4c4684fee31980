"""Where a slider move's main-thread CPU goes, this tree's export against an earlier commit's, in rounds.

    .venv/bin/python bench/bench_export_trace.py [--base 86d4677] [--rounds 4] [--moves 40]

Each round opens the base commit's export and this tree's (1400 × 1500, all five figures in sight; which
goes first alternates by round), each in a fresh context, makes 5 moves of the x-3-0 slider, waits a second,
then traces `--moves` more under Chromium's trace (as bench/bench_export.py --cpu does) and reports the
renderer main thread's CPU a move (its tasks' thread time) and that time split by the trace's events, each
event's own time (script in animation frames and other calls, commit, layerize, layout, paint, style).
Prints the per-round totals, their medians and the split of the median round; records the load average.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from app.export import export  # noqa: E402
from bench.bench_export import TIMED_SETS_JS, main_thread_events, open_offline, slider_values  # noqa: E402
from bench.bench_export_ab import base_export  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402


def traced_moves(page, moves: int) -> tuple[float, collections.Counter]:
    """Main-thread CPU a move (ms) and each trace event's own CPU a move, over `moves` traced moves."""
    spans = sorted(
        (e for e in main_thread_events(page, moves) if e.get("ph") == "X" and "tdur" in e),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    own: collections.Counter = collections.Counter()
    open_spans: list = []
    for e in spans:  # each event's time less its children's
        while open_spans and open_spans[-1]["ts"] + open_spans[-1]["dur"] <= e["ts"]:
            open_spans.pop()
        if open_spans:
            own[open_spans[-1]["name"]] -= e["tdur"]
        own[e["name"]] += e["tdur"]
        open_spans.append(e)
    total = sum(e["tdur"] for e in spans if e["name"] == "RunTask")
    return total / 1000 / moves, collections.Counter({k: v / 1000 / moves for k, v in own.items()})


def measure(browser, path: Path, moves: int) -> tuple[float, collections.Counter]:
    context, page, _requests = open_offline(browser, path.as_uri(), 1500)
    page.evaluate(TIMED_SETS_JS, ["x-3-0", "value", "weights-cells", slider_values(5)])
    page.wait_for_timeout(1000)
    out = traced_moves(page, moves)
    context.close()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="86d4677")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--moves", type=int, default=40)
    args = parser.parse_args(argv)
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    with tempfile.TemporaryDirectory() as tmp:
        pages = {args.base: base_export(args.base, Path(tmp)), "this tree": export(Path(tmp) / "head.html")}
        runs: dict = {name: [] for name in pages}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            for r in range(args.rounds):
                order = list(pages) if r % 2 == 0 else list(pages)[::-1]
                for name in order:
                    runs[name].append(measure(browser, pages[name], args.moves))
            browser.close()
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    print(f"base {args.base}; {args.rounds} rounds of {args.moves} traced moves at 1400 × 1500; load "
          f"{' '.join(load_before)} before, {' '.join(load_after)} after")
    for name, rounds in runs.items():
        totals = [t for t, _ in rounds]
        median_round = sorted(rounds, key=lambda run: run[0])[len(rounds) // 2]
        split = ", ".join(f"{k} {v:.2f}" for k, v in median_round[1].most_common(8))
        print(f"- {name}: CPU a move median {statistics.median(totals):.1f} ms "
              f"(rounds {', '.join(f'{t:.1f}' for t in totals)}); a round near the median: {split}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
