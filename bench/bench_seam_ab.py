"""static/bokeh_seam.js on against off (stock BokehJS), and against the commit before the seam, interleaved.

    .venv/bin/python bench/bench_seam_ab.py [--part export served] [--base 8570d2b] [--rounds 5]
        [--moves 40] [--cpu 20] [--without glyphCopies] [--also REF ...] [--json FILE]

The seam is switched off as `pytest --stock-bokeh` switches it off (tests/conftest.py OTHER_BOKEH_VERSION,
run before any script of the page): window.Bokeh reports another version than the seam was written for,
so it installs nothing and the page takes BokehJS's public way. Every page's own `BokehSeam.on` and the
number of patches in force are recorded, so a turn that did not get the seam it asked for shows.

* export: the same file of this tree opened with the seam on and off, the export of `--base` (made by its
  own code, bench/bench_export_ab.py base_export) and, for each `--without PATCH`, this tree's export with
  that one patch left out of a copy of static/bokeh_seam.js, and for each `--also REF` that commit's export
  (to set a change's own commits side by side); each in a fresh context, a window 1400 × 1500
  (every figure in sight), measured as bench/bench_export.py does: time to interactive, `--moves` slider
  moves (x-3-0 set → the weights-cells source changed → the next animation frame), chapter ⇄ tired, and
  with `--cpu N` N more moves under Chromium's trace (the renderer main thread's CPU a move).
* served: this tree's app/main.py (T = 4) and bench/app_t64.py (T = 64), each page opened with the seam
  on and off, and `--base`'s served the same (four `panel serve` processes); a fresh tab a turn: first
  render, 5 warm-up moves, `--moves` moves drawn by the page itself (as bench/bench_paint_ab.py), with
  `--cpu N` N moves under the trace; then (this tree) the channel set to "the server draws"
  (tests/conftest.py SERVER_DRAWS) and `--moves` moves drawn by the server's answers, with the server
  process's CPU over them. The base's server-drawn moves are in a second tab opened with its own switch
  (`window.headExplorerServerDraws = true` before load).

Every round visits every variant, in an order rotated each round; ratios are the median over rounds of
each round's variant / seam-on. The load average is recorded at the start, each round and the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_export import (  # noqa: E402
    LOGIC_JS,
    SHAPE_SETS_JS,
    TIMED_SETS_JS,
    main_thread_cpu,
    open_offline,
    slider_values,
)
from bench.bench_export_ab import base_export  # noqa: E402
from bench.bench_latency import APPS, cpu_seconds, moves, open_page, serve  # noqa: E402
from bench.common import load_average  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS, OTHER_BOKEH_VERSION, QUIET_SEAM_ERROR, SERVER_DRAWS  # noqa: E402

STOCK = OTHER_BOKEH_VERSION + "\n" + QUIET_SEAM_ERROR
BASE_SERVER_DRAWS = "window.headExplorerServerDraws = true;"  # the switch before the seam's channel
SEAM_STATE = """() => window.BokehSeam ? {on: BokehSeam.on,
  patches: Object.values(BokehSeam.patches).filter(Boolean).length} : null"""
med = statistics.median
PER_ROUND_HEAD = ["| page | per round |", "|---|---|"]


class WithScript:
    """A Playwright browser whose new contexts and pages run `script` before any script of theirs."""

    def __init__(self, browser, script: str | None):
        self.browser, self.script = browser, script

    def new_context(self, **kw):
        context = self.browser.new_context(**kw)
        if self.script:
            context.add_init_script(self.script)
        return context

    def new_page(self, **kw):
        page = self.browser.new_page(**kw)
        if self.script:
            page.add_init_script(self.script)
        return page


def tree_at(ref: str, folder: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    folder.mkdir()
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def export_without(patch: str, folder: Path) -> Path:
    """This tree's export with `patch`'s line taken out of a copy of static/bokeh_seam.js's PATCHES."""
    tree = tree_at("HEAD", folder / f"without-{patch}")
    seam = tree / "static" / "bokeh_seam.js"
    text = seam.read_text()
    line = next(ln for ln in text.splitlines(keepends=True) if ln.strip().startswith(f'["{patch}",'))
    seam.write_text(text.replace(line, "", 1))
    out = folder / f"without-{patch}.html"
    subprocess.run([sys.executable, "-m", "app.export", str(out)], cwd=tree, check=True, capture_output=True)
    return out


def export_turn(browser, path: Path, n: int, cpu: int) -> dict:
    context, page, requests = open_offline(browser, path.as_uri(), 1500)
    out = {"tti": page.evaluate("() => window.__tti"), "seam": page.evaluate(SEAM_STATE)}
    out["moves"] = page.evaluate(TIMED_SETS_JS, ["x-3-0", "value", "weights-cells", slider_values(n)])
    out["shape"], _ = page.evaluate(SHAPE_SETS_JS, [["tired", "chapter"], 300])
    out["logic"] = page.evaluate(LOGIC_JS, slider_values(n))
    if cpu:
        out["cpu"] = main_thread_cpu(page, cpu)
    out["requests"] = requests()
    context.close()
    return out


def served_turn(browser, key: str, url: str, proc, n: int, cpu: int, base_browser=None) -> dict:
    _, slider, wait_text, *_ = APPS[key]
    page, first = open_page(browser, url, wait_text)
    page.wait_for_function("() => window.HeadExplorerPage && HeadExplorerPage.pages.length > 0")
    out = {"first": first, "seam": page.evaluate(SEAM_STATE)}
    moves(page, slider, 5)
    out["painted"] = moves(page, slider, n)["painted"]
    if cpu:
        out["cpu"] = main_thread_cpu(page, cpu)
    if base_browser is None:
        page.evaluate(SERVER_DRAWS)
    else:  # before the seam's channel: a page told before it loads
        page.close()
        page, _ = open_page(base_browser, url, wait_text)
    moves(page, slider, 5)
    c0 = cpu_seconds(proc)
    by_server = moves(page, slider, n)
    out["server_cpu"] = (cpu_seconds(proc) - c0) * 1000 / n
    out["server_painted"] = by_server["painted"]
    page.close()
    return out


def ratio_rows(rounds: list[dict], variants: list[str], metrics: dict, ref: str) -> list[str]:
    """One row a variant: the median of each metric, and its median ratio to `ref` over the rounds."""
    rows = []
    for v in variants:
        cells = []
        for get in metrics.values():
            value = med(get(r[v]) for r in rounds)
            if v == ref:
                cells.append(f"{value:.1f}")
            else:
                ratio = med(get(r[v]) / get(r[ref]) for r in rounds)
                cells.append(f"{value:.1f} ({ratio:.3f}×)")
        rows.append(f"| {v} | " + " | ".join(cells) + " |")
    return rows


def per_round(rounds: list[dict], variants: list[str], get, ref: str) -> list[str]:
    return [f"| {v} | " + ", ".join(f"{get(r[v]) / get(r[ref]):.3f}" for r in rounds) + " |"
            for v in variants if v != ref]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", nargs="+", default=["export", "served"], choices=["export", "served"])
    ap.add_argument("--base", default="8570d2b")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--moves", type=int, default=40)
    ap.add_argument("--cpu", type=int, default=20, help="moves traced for the main thread's CPU a move")
    ap.add_argument("--without", action="append", default=[], help="also the export without this patch")
    ap.add_argument("--also", action="append", default=[], help="also the export of this git ref")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    started, load_before = dt.datetime.now(dt.UTC), load_average()
    raw: dict = {"args": {k: str(v) for k, v in vars(args).items()},
                 "started": f"{started:%Y-%m-%d %H:%M} UTC", "load_before": load_before}
    lines = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack, sync_playwright() as p:
        tmp = Path(tmp)
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        on, off = WithScript(chromium, None), WithScript(chromium, STOCK)
        if "export" in args.part:
            from app.export import export

            this = export(tmp / "this.html")
            pages = {"seam on": (on, this), "seam off": (off, this),
                     f"{args.base} (before)": (on, base_export(args.base, tmp))}
            for patch in args.without:
                pages[f"without {patch}"] = (on, export_without(patch, tmp))
            for k, ref in enumerate(args.also):
                (tmp / f"also-{k}").mkdir()
                pages[ref] = (on, base_export(ref, tmp / f"also-{k}"))
            names = list(pages)
            rounds = []
            for k in range(args.rounds):
                order = names[k % len(names):] + names[: k % len(names)]
                rnd = {"load": load_average()}
                for v in order:
                    browser, path = pages[v]
                    rnd[v] = export_turn(browser, path, args.moves, args.cpu)
                rounds.append(rnd)
                print("export", k + 1, {v: f"{med(rnd[v]['moves']):.1f} ms, cpu {rnd[v].get('cpu', 0):.1f}"
                                        for v in names}, flush=True)
            raw["export"] = rounds
            metrics = {"move, median (ms)": lambda e: med(e["moves"]), "TTI (ms)": lambda e: e["tti"],
                       "chapter ⇄ tired (ms)": lambda e: med(e["shape"])}
            if args.cpu:
                metrics["main thread CPU a move (ms)"] = lambda e: e["cpu"]
            lines += ["### Export (1400 × 1500, file://)", "",
                      "| page | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
            lines += ratio_rows(rounds, names, metrics, "seam on")
            lines += ["", "Each round's ratio to seam on, move median:", "", *PER_ROUND_HEAD]
            lines += per_round(rounds, names, lambda e: med(e["moves"]), "seam on")
            if args.cpu:
                lines += ["", "… main thread CPU a move:", "", *PER_ROUND_HEAD]
                lines += per_round(rounds, names, lambda e: e["cpu"], "seam on")
            lines += ["", "Seam as each page found it: " + "; ".join(
                f"{v}: {rounds[0][v]['seam']}" for v in names) + "; load at each round: "
                + "; ".join(" ".join(r["load"]) for r in rounds) + ".", ""]
        if "served" in args.part:
            trees = {"this": ROOT, "base": tree_at(args.base, tmp / "base-tree")}
            served = {(t, k): stack.enter_context(serve(APPS[k][0], tree))
                      for t, tree in trees.items() for k in ("ours", "t64")}
            base_draws = WithScript(chromium, BASE_SERVER_DRAWS)
            variants = {"seam on": ("this", on, None), "seam off": ("this", off, None),
                        f"{args.base} (before)": ("base", on, base_draws)}
            names = list(variants)
            rounds = []
            for k in range(args.rounds):
                order = names[k % len(names):] + names[: k % len(names)]
                rnd = {"load": load_average()}
                for v in order:
                    tree, browser, base_browser = variants[v]
                    for key in ("ours", "t64"):
                        url, proc = served[(tree, key)]
                        rnd[(v, key)] = served_turn(browser, key, url, proc, args.moves, args.cpu,
                                                    base_browser)
                rounds.append(rnd)
                print("served", k + 1, {f"{v} {key}": f"{med(rnd[(v, key)]['painted']):.1f}"
                                        for v in names for key in ("ours", "t64")}, flush=True)
            raw["served"] = [{"load": r["load"], **{f"{v} / {key}": x for (v, key), x in
                                                    ((kk, vv) for kk, vv in r.items() if kk != "load")}}
                             for r in rounds]
            metrics = {"repainted, page draws (ms)": lambda e: med(e["painted"]),
                       "repainted, server draws (ms)": lambda e: med(e["server_painted"]),
                       "first render (ms)": lambda e: e["first"],
                       "server CPU a move (ms)": lambda e: e["server_cpu"]}
            if args.cpu:
                metrics["main thread CPU a move (ms)"] = lambda e: e["cpu"]
            for key, t in (("ours", 4), ("t64", 64)):
                by_variant = [{v: r[(v, key)] for v in names} for r in rounds]
                lines += [f"### Served, T = {t}", "",
                          "| page | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
                lines += ratio_rows(by_variant, names, metrics, "seam on")
                lines += ["", "Each round's ratio to seam on, page draws:", "", *PER_ROUND_HEAD]
                lines += per_round(by_variant, names, lambda e: med(e["painted"]), "seam on")
                if args.cpu:
                    lines += ["", "… main thread CPU a move:", "", *PER_ROUND_HEAD]
                    lines += per_round(by_variant, names, lambda e: e["cpu"], "seam on")
                lines += ["", "Seam as each page found it: " + "; ".join(
                    f"{v}: {rounds[0][(v, key)]['seam']}" for v in names) + ".", ""]
            lines += ["Load at each round: " + "; ".join(" ".join(r["load"]) for r in rounds) + ".", ""]
        chromium.close()
    raw["load_after"] = load_average()
    command = " ".join(argv if argv is not None else sys.argv[1:])
    head = (f"`bench/bench_seam_ab.py {command}`, {raw['started']}; load average {' '.join(load_before)} "
            f"before, {' '.join(raw['load_after'])} after.")
    text = "\n".join([head, "", *lines])
    print(text)
    if args.json:
        raw["markdown"] = text
        args.json.write_text(json.dumps(raw, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
