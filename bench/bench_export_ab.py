"""This tree's export against the export of an earlier commit, and the floor file, interleaved in rounds.

    .venv/bin/python bench/bench_export_ab.py [--base bae9598] [--rounds 3] [--heights 1500 900]

On a shared machine the load moves every time (bench/bench_export.py); comparing two versions of the page
in the same rounds shows what a change itself buys. Each round opens, at each window height, the base
commit's export and this tree's (each first in every other round), then the floor, each in a fresh
context, and measures as bench_export.py does (time to interactive, slider → weights repainted,
chapter ⇄ tired → repainted; with `--cpu N`, the main thread's CPU a move). The base's export is made
by its own code (`git archive` of the commit into a temporary folder, `python -m app.export` there).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from app.export import export  # noqa: E402
from bench.bench_export import floor_page, measure_export, measure_floor  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402


def base_export(ref: str, folder: Path) -> Path:
    tree = folder / "base"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    out = folder / "base.html"
    subprocess.run([sys.executable, "-m", "app.export", str(out)], cwd=tree, check=True, capture_output=True)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="bae9598")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--moves", type=int, default=40)
    parser.add_argument("--shapes", type=int, default=3)
    parser.add_argument("--heights", type=int, nargs="+", default=[1500, 900])
    parser.add_argument("--cpu", type=int, default=0, help="moves traced for the main-thread CPU a move")
    args = parser.parse_args(argv)
    load_before = open("/proc/loadavg").read().split()[:3]
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pages = {"base": base_export(args.base, tmp), "this": export(tmp / "this.html")}
        floor = floor_page(tmp / "floor.html")
        got = {(v, h): [] for v in pages for h in args.heights}
        floors = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            for k in range(args.rounds):
                for h in args.heights:
                    order = list(pages.items())[:: 1 if k % 2 == 0 else -1]  # neither always first
                    for v, path in order:
                        got[v, h].append(measure_export(browser, path, args.moves, args.shapes, h, args.cpu))
                floors.append(measure_floor(browser, floor, args.moves, args.cpu))
            browser.close()
    load_after = open("/proc/loadavg").read().split()[:3]
    loads = f"load {' '.join(load_before)} before, {' '.join(load_after)} after"
    print(f"base {args.base}; {args.rounds} rounds; {loads}")
    cpu_head = " CPU a move, ms (/ floor) |" if args.cpu else ""
    print(f"| window | page | TTI / floor | move (ms) | move / floor | shape change median (ms) |{cpu_head}")
    print("|---|---|---|---|---|---|" + ("---|" if args.cpu else ""))
    for h in args.heights:
        for v in pages:
            rounds = list(zip(got[v, h], floors))
            tti = med(e["tti"] / f["tti"] for e, f in rounds)
            move = med(med(e["moves"]) for e, _ in rounds)
            ratio = med(med(e["moves"]) / med(f["moves"]) for e, f in rounds)
            shape = med(t for e, _ in rounds for t in e["shape"])
            label = f"{args.base} (before)" if v == "base" else "this tree"
            cpu = ""
            if args.cpu:
                e_cpu, f_cpu = med(e["cpu"] for e, _ in rounds), med(f["cpu"] for _, f in rounds)
                ratio_cpu = med(e["cpu"] / f["cpu"] for e, f in rounds)
                cpu = f" {e_cpu:.1f} ({ratio_cpu:.2f}×, floor {f_cpu:.1f}) |"
            print(f"| 1400 × {h} | {label} | {tti:.2f}× | {move:.1f} | {ratio:.2f}× | {shape:.0f} |{cpu}")
    # this tree against the base, round by round (each round measures both at the same load)
    print("\n| window | this / base: TTI | move | shape change |" + (" CPU a move |" if args.cpu else ""))
    print("|---|---|---|---|" + ("---|" if args.cpu else ""))
    for h in args.heights:
        pairs = list(zip(got["this", h], got["base", h]))
        tti = med(t["tti"] / b["tti"] for t, b in pairs)
        move = med(med(t["moves"]) / med(b["moves"]) for t, b in pairs)
        shape = med(med(t["shape"]) / med(b["shape"]) for t, b in pairs)
        cpu = f" {med(t['cpu'] / b['cpu'] for t, b in pairs):.3f}× |" if args.cpu else ""
        print(f"| 1400 × {h} | {tti:.3f}× | {move:.3f}× | {shape:.3f}× |{cpu}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
