"""This tree's served explorer against an earlier commit's, at 4 and at 64 tokens, interleaved in rounds.

    .venv/bin/python bench/bench_paint_ab.py [--base 4158a23] [--rounds 3] [--moves 40] [--out FILE]

The machine is shared and its load moves from minute to minute, so bench/bench_latency.py's T = 64 ratio
swings from round to round. Here the base commit (`git archive` into a temporary folder) and this tree
each serve app/main.py and bench/app_t64.py (four `panel serve` processes at once); every round visits
base T = 4, base T = 64, this T = 4, this T = 64 (the two versions' order swapped every other round),
each a fresh tab: its first render (navigation → the weights line shown), 5 warm-up moves and `--moves`
timed moves drawn by the page itself, timed as bench_latency.py does (slider value set → the weights-cells
source changed → one animation frame); then, in the same tab, the page's channel set to "the server
draws" (tests/conftest.py SERVER_DRAWS) and as many moves drawn by the server's answers, with the server
process's CPU over them. Prints and writes the medians, each version's T = 64 / T = 4 ratio per round,
this tree against the base round by round, and the load average.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_latency import APPS, cpu_seconds, moves, open_page, serve  # noqa: E402
from bench.common import load_average  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS, SERVER_DRAWS  # noqa: E402


def turn(browser, key: str, url: str, proc, n: int) -> dict:
    _, slider, wait_text = APPS[key]
    page, first = open_page(browser, url, wait_text)
    page.wait_for_function("() => window.HeadExplorerPage && HeadExplorerPage.pages.length > 0")
    moves(page, slider, 5)
    m = moves(page, slider, n)
    page.evaluate(SERVER_DRAWS)
    moves(page, slider, 5)
    c0 = cpu_seconds(proc)
    by_server = moves(page, slider, n)
    cpu = (cpu_seconds(proc) - c0) * 1000 / n
    page.close()
    return {
        "first": first,
        "painted": statistics.median(m["painted"]),
        "arrived": statistics.median(by_server["arrived"]),
        "server_painted": statistics.median(by_server["painted"]),
        "cpu": cpu,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="4158a23")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--moves", type=int, default=40)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    started, load_before = dt.datetime.now(dt.UTC), load_average()
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        base = Path(tmp)
        archive = subprocess.run(
            ["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        trees = {"base": base, "this": ROOT}
        served = {
            (v, k): stack.enter_context(serve(APPS[k][0], tree))
            for v, tree in trees.items()
            for k in ("ours", "t64")
        }
        rounds = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            for r in range(args.rounds):
                order = ["base", "this"] if r % 2 == 0 else ["this", "base"]
                rnd = {"load": load_average()}
                for v in order:
                    for k in ("ours", "t64"):
                        url, proc = served[(v, k)]
                        rnd[(v, k)] = turn(browser, k, url, proc, args.moves)
                rounds.append(rnd)
                print(
                    r + 1,
                    {f"{v} {k}": f"{rnd[(v, k)]['painted']:.1f}" for v in trees for k in ("ours", "t64")},
                )
            browser.close()
    med = statistics.median
    lines = [
        f"`bench/bench_paint_ab.py --base {args.base} --rounds {args.rounds} --moves {args.moves}`, "
        f"{started:%Y-%m-%d %H:%M} UTC; load average {' '.join(load_before)} before, "
        f"{' '.join(load_average())} after; at each round: "
        + "; ".join(" ".join(r["load"]) for r in rounds)
        + ".",
        "",
        "| version | T = 4 repainted | T = 64 repainted | T = 64 / T = 4, per round | median ratio "
        "| T = 64 arrived (server) | T = 64 server CPU / move |",
        "|---|---|---|---|---|---|---|",
    ]
    for v, name in (("base", f"{args.base} (before)"), ("this", "this tree")):
        ratios = [r[(v, "t64")]["painted"] / r[(v, "ours")]["painted"] for r in rounds]
        lines.append(
            f"| {name} | {med(r[(v, 'ours')]['painted'] for r in rounds):.1f} ms "
            f"| {med(r[(v, 't64')]['painted'] for r in rounds):.1f} ms "
            f"| {', '.join(f'{x:.2f}' for x in ratios)} "
            f"| {med(ratios):.2f}× | {med(r[(v, 't64')]['arrived'] for r in rounds):.1f} ms "
            f"| {med(r[(v, 't64')]['cpu'] for r in rounds):.1f} ms |"
        )
    lines += [
        "",
        "This tree / the base, the median of the rounds' ratios (each round measures both at the same load):",
        "",
        "| T | first render | repainted (the page's own drawing) | repainted by the server's answer "
        "| server CPU / move |",
        "|---|---|---|---|---|",
    ]
    for k, t in (("ours", 4), ("t64", 64)):
        ratio = {m: med(r[("this", k)][m] / r[("base", k)][m] for r in rounds)
                 for m in ("first", "painted", "server_painted", "cpu")}
        cells = " | ".join(f"{ratio[m]:.3f}×" for m in ("first", "painted", "server_painted", "cpu"))
        lines.append(f"| {t} | {cells} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
