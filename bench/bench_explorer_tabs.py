"""What the two explorer tabs cost the static export, and what their ports cost, in headless Chromium.

    .venv/bin/python bench/bench_explorer_tabs.py [--rounds 3] [--moves 50] [--ports 5]

In one run, interleaved round by round (A B A B …):
* A: the export as app/export.py writes it, with the "Why ÷√d" and "Long-context cost" tabs;
* B: the same export with an empty "more" area (app/export_explorers.explorer_tabs replaced by a stub):
  the baseline, so the ratio A / B is what the tabs add;
for each: file size, time to interactive from file:// and the head's slider → repaint median
(bench/bench_export.py's probes).  Then, in page A, the ports' own times: a new seed (the whole sweep,
9 widths × 128 trials × 65 keys on the defaults), a new width (one point, the sweep kept) and a cost
change (view data), each against Python's time for the same work in this process.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bokeh.models import Div  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

import app.export_explorers as tabs_module  # noqa: E402
from app.export import export  # noqa: E402
from bench.bench_export import measure_floor, summary  # noqa: E402
from bench.common import load_average, write_results  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402
from widgets import cost_viewdata  # noqa: E402
from widgets.cost_state import CostSettings, js_config  # noqa: E402
from widgets.saturation_state import point, sweep  # noqa: E402

PORTS_JS = """
([n, costConfig]) => {
  const sat = SaturationExplorer, cost = CostExplorer;
  const time = (f) => { const t0 = performance.now(); f(); return performance.now() - t0; };
  const out = {seed: [], width: [], cost: []};
  const widths = [2, 4, 8, 16, 32, 64, 128, 256, 512];
  for (let k = 0; k < n; k++) {
    out.seed.push(time(() => sat.saturationCurve(widths, 100 + k, 64, 128)));
    out.width.push(time(() => sat.saturationPoint(100 + k, 0, 64, 128)));
    out.cost.push(time(() => cost.viewData(costConfig, {T: 1000 * (k + 1), d: 128, heads: 32, kv_heads: 8,
      layers: 32, C: 4096, element_bytes: 2, gpu_gb: 80})));
  }
  return out;
}
"""


def stub_tabs():
    return tabs_module.ExplorerTabs(
        root=Div(text="", name=tabs_module.AREA[0]),
        area=tabs_module.AREA,
        scripts=(),
        saturation=None,
        cost=None,
    )


def python_times(n: int) -> dict:
    out = {"seed": [], "width": [], "cost": []}
    for k in range(n):
        t0 = time.perf_counter()
        sweep.__wrapped__(100 + k, 64, 128)
        out["seed"].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        point.__wrapped__(100 + k, 0, 64, 128)
        out["width"].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        s = CostSettings(T=1000 * (k + 1))
        cost_viewdata.view_data(s.cost, s.gpu_gb, s.tile)
        out["cost"].append((time.perf_counter() - t0) * 1000)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--moves", type=int, default=50)
    parser.add_argument("--ports", type=int, default=5, help="repetitions of each port timing")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-explorer-tabs.md")
    args = parser.parse_args(argv)
    load_before = load_average()
    tmp = Path(tempfile.mkdtemp())
    with_tabs = export(tmp / "with-tabs.html")
    real = tabs_module.explorer_tabs
    tabs_module.explorer_tabs = stub_tabs
    try:
        without = export(tmp / "without-tabs.html")
    finally:
        tabs_module.explorer_tabs = real
    runs = {"with tabs": [], "without": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        for _ in range(args.rounds):
            for name, path in (("with tabs", with_tabs), ("without", without)):
                runs[name].append(measure_floor(browser, path, args.moves))  # start-up and moves only
        context = browser.new_context()
        page = context.new_page()
        page.goto(with_tabs.as_uri())
        page.wait_for_function("() => window.CostExplorer && window.Bokeh && Bokeh.documents.length > 0")
        js = page.evaluate(PORTS_JS, [args.ports, js_config()])
        context.close()
        browser.close()
    py = python_times(args.ports)
    load_after = load_average()

    def med(values):
        return statistics.median(values)

    tti = {name: med([r["tti"] for r in rs]) for name, rs in runs.items()}
    move = {name: med([summary(r["moves"])[0] for r in rs]) for name, rs in runs.items()}
    size = {"with tabs": with_tabs.stat().st_size, "without": without.stat().st_size}
    requests = {name: sum(r["requests"] for r in rs) for name, rs in runs.items()}
    lines = [
        "# The explorer tabs in the static export",
        "",
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC by `bench/bench_explorer_tabs.py "
        f"--rounds {args.rounds} --moves {args.moves} --ports {args.ports}`; headless Debian Chromium, "
        "file://, network blocked; "
        f"load average before {' '.join(load_before)}, after {' '.join(load_after)} (2 cores, shared).",
        "",
        "Interleaved rounds (with, without, with, without, …); medians over the rounds.",
        "",
        "| measure | with the tabs | without (baseline) | ratio |",
        "| --- | --- | --- | --- |",
        f"| file size | {size['with tabs'] / 1e6:.2f} MB | {size['without'] / 1e6:.2f} MB | "
        f"{size['with tabs'] / size['without']:.2f} |",
        f"| time to interactive | {tti['with tabs']:.0f} ms | {tti['without']:.0f} ms | "
        f"{tti['with tabs'] / tti['without']:.2f} |",
        f"| head slider → repaint, median | {move['with tabs']:.1f} ms | {move['without']:.1f} ms | "
        f"{move['with tabs'] / move['without']:.2f} |",
        f"| requests outside the file | {requests['with tabs']} | {requests['without']} | |",
        "",
        "Per round, time to interactive (ms): "
        + "; ".join(name + " " + ", ".join(f"{r['tti']:.0f}" for r in rs) for name, rs in runs.items()),
        "",
        f"The ports' own work in the page, against Python's for the same work (median of {args.ports}):",
        "",
        "| work | JavaScript (Chromium) | Python (numpy) |",
        "| --- | --- | --- |",
        f"| a new seed: the sweep over 9 widths, 128 trials × 65 keys | {med(js['seed']):.0f} ms | "
        f"{med(py['seed']):.0f} ms |",
        f"| a width off the sweep: one point | {med(js['width']):.1f} ms | {med(py['width']):.1f} ms |",
        f"| a cost change: view data | {med(js['cost']):.2f} ms | {med(py['cost']):.2f} ms |",
        "",
    ]
    return write_results(args.out, lines)


if __name__ == "__main__":
    raise SystemExit(main())
