"""The static export against a floor file, in headless Chromium, interleaved in rounds.

    .venv/bin/python bench/bench_export.py [--rounds 5] [--moves 60] [--heights 1500 900] [--out FILE]

Each round opens, in this order, the export (file://, every non-file request blocked and counted) in a
window 1400 px wide and each of `--heights` high (1500: all five figures in sight; 900: a laptop's window,
the scores and projections below the fold, where the page writes them only once they scroll into view or
the moves stop) and the floor (a self-contained file with one slider and one 4 × 4 heatmap whose
CustomJS writes 16 new values a move: BokehJS inline and nothing else), each in a fresh browser context,
and measures:
* time to interactive: from navigation start (performance.now() = 0) to the first animation frame in
  which the steps panel shows the chapter's weights and, in the export, the binding is ready (its sliders
  drive the weights from then on). The floor's TTI is the same frame condition on its one slider,
  heatmap and steps Div (no binding to wait for). The export's first part is the weights, the blend,
  the token sliders, the steps and the "Going further" tabs; it reads and makes its other parts (the
  control panel, the editor, the scores and projections: app/export.py LATER) after that, one in each
  idle moment, and the time they are all made ("complete") is reported beside it; the moves start once
  it is complete;
* slider → repaint: `doc.get_model_by_name('x-3-0').value = v` set in the page (v alternating so every
  move changes the weights); the clock stops at the first animation frame after the 'weights-cells'
  source changed.  One move at a time; the median of each round's moves;
* in the export only: a preset that changes the shape (the chapter's 4 tokens ⇄ "tired", 10 tokens, C = 4)
  set on the preset picker, to the first frame after the weights were rewritten (every figure in sight is
  written in that frame), and to the first frame after the new sliders (and the editor's grids, when in
  sight) stand, which the page makes in a task after the figures' frame; each switch from a settled
  page; and, to see where a move's time goes, the pure logic alone (`apply` + `render` of
  static/explorer.js) on the same moves;
* the same time to interactive for a third file, "first part, stock Bokeh": the export's first part (the
  weights, the blend, the token sliders and the steps, as widgets/page.py makes them) in Bokeh's own
  `file_html` with nothing of the explorer (no binding, no patch, no other parts): what BokehJS alone takes
  to show what the export must show before it is interactive, against which the export's own start-up
  cost is read;
* with `--cpu N`, after the timed moves, N more moves under Chromium's trace: the renderer's main-thread CPU
  time a move (the trace's thread time of its tasks: script, style, layout, paint, commit), export and
  floor. The repaint time is a count of frames (16.7 ms each) and swings with the load; the CPU a move
  swings less, and says how far the export's frame is from fitting in one.
Each page is opened SETTLE_S after the one before it was closed. Ratios are the median over rounds of
export / floor; the load average is recorded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from app.export import export  # noqa: E402
from bench.common import block_all_but, load_average  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402
from widgets.viewdata import step_line_html  # noqa: E402

# As the steps panel's HTML holds it: each printed vector in a no-wrap span.
CHAPTER_WEIGHTS = step_line_html("weights = [0.13, 0.56, 0.14, 0.18]")

TTI_PROBE = """
(() => {
  const want = __WANT__;
  function poll() {
    try {
      const doc = window.Bokeh && window.Bokeh.documents && window.Bokeh.documents[0];
      const steps = doc && doc.get_model_by_name('steps');
      const pages = window.HeadExplorerPage ? HeadExplorerPage.pages : null;
      const bound = !pages || (pages[0] && pages[0].ready);
      if (steps && bound && steps.text.includes(want)) {
        window.__tti = performance.now();
        complete();
        return;
      }
    } catch (e) {}
    requestAnimationFrame(poll);
  }
  // the export makes some parts only after it is interactive (static/explorer_page.js embed): when all are
  function complete() {
    const pages = window.HeadExplorerPage ? HeadExplorerPage.pages : null;
    if (!pages || pages[0].complete !== false) { window.__complete = performance.now(); return; }
    requestAnimationFrame(complete);
  }
  requestAnimationFrame(poll);
})();
""".replace("__WANT__", json.dumps(CHAPTER_WEIGHTS))

# Sets `model.prop` to each of `values` in turn; times each to the first frame after `source` changed.
TIMED_SETS_JS = """
async ([model, prop, source, values]) => {
  const doc = Bokeh.documents[0];
  const target = doc.get_model_by_name(model);
  const src = doc.get_model_by_name(source);
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  let pending = null;
  src.change.connect(() => { if (pending) { const r = pending; pending = null; r(); } });
  const times = [];
  await frame();
  for (const v of values) {
    const changed = new Promise(r => { pending = r; });
    const t0 = performance.now();
    target[prop] = v;
    await Promise.race([changed, new Promise((_, no) => setTimeout(() => no(new Error('timeout')), 10000))]);
    await frame();
    times.push(performance.now() - t0);
  }
  return times;
}
"""

# A preset that changes the shape, set on the picker: each timed to the first frame after the weights were
# rewritten ("repainted"), and to the first frame after the page's new sliders stand ("sliders"; the
# binding makes them in a task after the figures' frame). Each switch starts from a settled page (the
# last one's sliders made, then `settle` ms), as a reader's next click would.
SHAPE_SETS_JS = """
async ([values, settle]) => {
  const doc = Bokeh.documents[0];
  const picker = doc.get_model_by_name('preset');
  const src = doc.get_model_by_name('weights-cells');
  const box = doc.get_model_by_name('token-sliders'); // a new shape's sliders: its children change
  let built = 0;
  box.properties.children.change.connect(() => { built = performance.now(); });
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  const pause = (ms) => new Promise(r => setTimeout(r, ms));
  let pending = null;
  src.change.connect(() => { if (pending) { const r = pending; pending = null; r(); } });
  const repainted = [], sliders = [];
  await frame();
  for (const v of values) {
    const changed = new Promise(r => { pending = r; });
    const t0 = performance.now();
    picker.value = v;
    await Promise.race([changed, pause(10000).then(() => { throw new Error('timeout'); })]);
    await frame();
    repainted.push(performance.now() - t0);
    const until = performance.now() + 10000;
    while (!(built > t0) && performance.now() < until) await pause(5);
    await frame();
    sliders.push(performance.now() - t0);
    await pause(settle);
    await frame();
  }
  return [repainted, sliders];
}
"""

# The pure logic alone (static/explorer.js apply + render) on the states the moves visit.
LOGIC_JS = """
(values) => {
  const page = HeadExplorerPage.pages[0];
  let s = page.state;
  const times = [];
  for (const v of values) {
    const t0 = performance.now();
    s = page.logic.apply(s, {do: 'x', token: 3, component: 0, value: v});
    page.logic.render(s);
    times.push(performance.now() - t0);
  }
  return times;
}
"""


TRACE_CATEGORIES = "devtools.timeline,disabled-by-default-devtools.timeline"  # RunTask is in the second


def main_thread_events(page, moves: int) -> list:
    """The renderer main thread's trace events over `moves` slider moves made under Chromium's trace."""
    cdp = page.context.new_cdp_session(page)
    events: list = []
    done: list = []
    cdp.on("Tracing.dataCollected", lambda e: events.extend(e["value"]))
    cdp.on("Tracing.tracingComplete", lambda e: done.append(True))
    cdp.send("Tracing.start", {"categories": TRACE_CATEGORIES, "transferMode": "ReportEvents"})
    page.evaluate(TIMED_SETS_JS, ["x-3-0", "value", "weights-cells", slider_values(moves)])
    cdp.send("Tracing.end")
    while not done:
        page.wait_for_timeout(50)
    cdp.detach()
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    main = {k for k, name in names.items() if name == "CrRendererMain"}
    return [e for e in events if (e["pid"], e["tid"]) in main]


def main_thread_cpu(page, moves: int) -> float:
    """The renderer main thread's CPU time (ms) a slider move, over `moves` moves under Chromium's trace."""
    tasks = [e for e in main_thread_events(page, moves) if e.get("name") == "RunTask" and e.get("ph") == "X"]
    return sum(e.get("tdur", e["dur"]) for e in tasks) / 1000 / moves


def slider_values(n: int) -> list[float]:
    return [(0.15, 0.25, 0.35, 0.3, 0.1)[k % 5] for k in range(n)]


def summary(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


# Before each page is opened: the previous page's renderer is still being torn down for a moment, and a
# page opened meanwhile shares the two cores with it (whichever page comes first in a round paid for it).
SETTLE_S = 0.5


def open_offline(browser, url: str, height: int = 1500):
    time.sleep(SETTLE_S)
    context = browser.new_context(viewport={"width": 1400, "height": height})
    blocked = block_all_but(context, ("file:", "data:"))
    requests: list[str] = []
    page = context.new_page()
    page.on("request", lambda r: requests.append(r.url))
    page.add_init_script(TTI_PROBE)
    page.goto(url)
    page.wait_for_function("() => window.__complete !== undefined", timeout=60000)
    outside = lambda: [u for u in requests if not u.startswith(("file:", "data:"))]  # noqa: E731
    return context, page, lambda: len(blocked) + len(outside())


def measure_export(browser, path: Path, moves: int, shapes: int, height: int, cpu: int = 0) -> dict:
    context, page, requests = open_offline(browser, path.as_uri(), height)
    out = {"tti": page.evaluate("() => window.__tti"), "complete": page.evaluate("() => window.__complete")}
    out["moves"] = page.evaluate(TIMED_SETS_JS, ["x-3-0", "value", "weights-cells", slider_values(moves)])
    presets = ["tired", "chapter"] * shapes
    out["shape"], out["shape_sliders"] = page.evaluate(SHAPE_SETS_JS, [presets, 300])
    out["logic"] = page.evaluate(LOGIC_JS, slider_values(moves))
    if cpu:
        out["cpu"] = main_thread_cpu(page, cpu)
    out["requests"] = requests()
    context.close()
    return out


def measure_floor(browser, path: Path, moves: int, cpu: int = 0) -> dict:
    context, page, requests = open_offline(browser, path.as_uri())
    out = {"tti": page.evaluate("() => window.__tti")}
    out["moves"] = page.evaluate(TIMED_SETS_JS, ["x-3-0", "value", "weights-cells", slider_values(moves)])
    if cpu:
        out["cpu"] = main_thread_cpu(page, cpu)
    out["requests"] = requests()
    context.close()
    return out


def floor_page(path: Path) -> Path:
    """bench/floor_app.py's slider and heatmap in a self-contained file, a CustomJS callback writing 16 new
    values per move: what BokehJS costs here before the explorer adds anything."""
    from bokeh.embed import file_html
    from bokeh.layouts import column
    from bokeh.models import CustomJS, Div
    from bokeh.resources import INLINE

    from bench.floor_app import slider_and_heatmaps

    slider, (source,), (fig,) = slider_and_heatmaps()
    slider.js_on_change(
        "value",
        CustomJS(
            args={"source": source},
            code="const v = source.data.x.map((_, k) => 1 / (1 + Math.exp(-(cb_obj.value + 0.1 * k))));"
            " source.data = {...source.data, value: v, text: v.map(a => a.toFixed(2))};",
        ),
    )
    steps = Div(text=CHAPTER_WEIGHTS, name="steps")
    path.write_text(file_html(column(slider, fig, steps), INLINE, "floor"))
    return path


def first_part_page(path: Path) -> Path:
    """The export's first part (weights, blend, token sliders, steps) for the chapter's head, in Bokeh's own
    file_html with INLINE resources and nothing else: stock BokehJS showing the same models."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    from core.presets import PRESETS
    from widgets.page import HeadPage
    from widgets.state import HeadState

    state = HeadState()
    state.load(PRESETS["chapter"])
    page = HeadPage.for_state(state)
    path.write_text(file_html([page.roots["top"], page.roots["readout"]], INLINE, "first part"))
    return path


def measure_first_part(browser, path: Path) -> dict:
    context, page, requests = open_offline(browser, path.as_uri())
    out = {"tti": page.evaluate("() => window.__tti"), "requests": requests()}
    context.close()
    return out


def height_line(height: int, rounds: list) -> str:
    """One table row: the median ratios and times over rounds at one window height."""
    med = statistics.median
    tti = med(e["tti"] / f["tti"] for e, f in rounds)
    move = med(med(e["moves"]) / med(f["moves"]) for e, f in rounds)
    move_e = med(med(e["moves"]) for e, _ in rounds)
    move_f = med(med(f["moves"]) for _, f in rounds)
    shape_med, shape_p90 = summary([t for e, _ in rounds for t in e["shape"]])
    sliders_med, _ = summary([t for e, _ in rounds for t in e["shape_sliders"]])
    complete = med(e["complete"] for e, _ in rounds)
    return (
        f"| 1400 × {height} | {tti:.2f}× | {complete:.0f} ms | {move:.2f}× | {move_e:.1f} / {move_f:.1f} "
        f"| {shape_med:.0f} / {shape_p90:.0f} ms | {sliders_med:.0f} ms |"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--moves", type=int, default=60)
    parser.add_argument("--shapes", type=int, default=5, help="tired ⇄ chapter switches per round")
    parser.add_argument(
        "--heights",
        type=int,
        nargs="+",
        default=[1500, 900],
        help="window heights (px, 1400 wide) the export is measured at, each round; the first is judged",
    )
    parser.add_argument("--cpu", type=int, default=0, help="moves traced for the main-thread CPU a move")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-export.md")
    args = parser.parse_args(argv)
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = export(tmp / "head.html")
        size = path.stat().st_size
        floor = floor_page(tmp / "floor.html")
        first_part = first_part_page(tmp / "first-part.html")
        rounds, stock = [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            for _ in range(args.rounds):
                es = {}
                for h in args.heights:
                    es[h] = measure_export(browser, path, args.moves, args.shapes, h, args.cpu)
                stock.append(measure_first_part(browser, first_part))
                f = measure_floor(browser, floor, args.moves, args.cpu)
                rounds.append((es, f))
            browser.close()
    by_height = {h: [(es[h], f) for es, f in rounds] for h in args.heights}
    others = [height_line(h, by_height[h]) for h in args.heights[1:]]
    rounds = by_height[args.heights[0]]
    load_after = load_average()
    med = statistics.median
    tti_ratio = med(e["tti"] / f["tti"] for e, f in rounds)
    move_ratio = med(med(e["moves"]) / med(f["moves"]) for e, f in rounds)
    all_shape = sorted(t for e, _ in rounds for t in e["shape"])
    shape_med, shape_p90 = summary(all_shape)
    sliders_med, sliders_p90 = summary(sorted(t for e, _ in rounds for t in e["shape_sliders"]))
    tti_e, complete = med(e["tti"] for e, _ in rounds), med(e["complete"] for e, _ in rounds)
    logic_med = med(t for e, _ in rounds for t in e["logic"])
    requests = sum(e["requests"] for e, _ in rounds) + sum(s["requests"] for s in stock)
    stock_ratio = med(s["tti"] / f["tti"] for s, (_, f) in zip(stock, rounds))
    over_stock = med(e["tti"] / s["tti"] for s, (e, _) in zip(stock, rounds))
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"
    chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip()
    ok = lambda good: "yes" if good else "no"  # noqa: E731
    per_round = [
        f"| {k + 1} | {e['tti']:.0f} | {stock[k]['tti']:.0f} | {f['tti']:.0f} | {e['tti'] / f['tti']:.2f} "
        f"| {med(e['moves']):.1f} "
        f"| {med(f['moves']):.1f} | {med(e['moves']) / med(f['moves']):.2f} | {med(e['shape']):.0f} "
        f"| {med(e['shape_sliders']):.0f} |"
        for k, (e, f) in enumerate(rounds)
    ]
    text = "\n".join(
        [
            "# Static export against the floor file",
            "",
            f"Run {dt.datetime.now().strftime('%Y-%m-%d %H:%M')} on {machine}; {chromium}, headless; "
            f"`bench/bench_export.py --rounds {args.rounds} --moves {args.moves} --shapes {args.shapes}"
            f"{f' --cpu {args.cpu}' if args.cpu else ''}`; "
            f"load average (1, 5, 15 min) {' '.join(load_before)} before, {' '.join(load_after)} after "
            "(the machine was shared with other jobs).",
            "",
            "| measure | target | measured | met? |",
            "|---|---|---|---|",
            f"| file size | ≤ 2.5 MB | {size / 1e6:.2f} MB ({size:,} bytes) | {ok(size <= 2_500_000)} |",
            f"| network requests (non-file), all rounds | 0 | {requests} | {ok(requests == 0)} |",
            f"| time to interactive, export / floor (median of rounds) | ≤ 1.3× | {tti_ratio:.2f}× "
            f"| {ok(tti_ratio <= 1.3)} |",
            f"| slider → weights repainted, export / floor (median of rounds' medians) | ≤ 1.25× "
            f"| {move_ratio:.2f}× | {ok(move_ratio <= 1.25)} |",
            *(
                [
                    f"| … main-thread CPU a move (Chromium trace, `--cpu {args.cpu}`), export / floor "
                    f"(median of rounds) | – | {med(e['cpu'] / f['cpu'] for e, f in rounds):.2f}× "
                    f"({med(e['cpu'] for e, _ in rounds):.1f} / {med(f['cpu'] for _, f in rounds):.1f} ms) "
                    "| – |"
                ]
                if args.cpu
                else []
            ),
            f"| a preset that changes the shape (chapter ⇄ tired) → repainted, median / p90 | ≤ 150 ms "
            f"| {shape_med:.0f} / {shape_p90:.0f} ms | {ok(shape_med <= 150)} |",
            f"| … the same, to the new sliders made (a task after the figures), median / p90 | – "
            f"| {sliders_med:.0f} / {sliders_p90:.0f} ms | – |",
            f"| time to interactive, export, median (floor) | – | {tti_e:.0f} ms "
            f"({med(f['tti'] for _, f in rounds):.0f} ms) | – |",
            f"| … the first part alone in stock Bokeh (no explorer code), median; / floor | – "
            f"| {med(s['tti'] for s in stock):.0f} ms; {stock_ratio:.2f}× | – |",
            f"| … the export / the first part in stock Bokeh | – | {over_stock:.2f}× | – |",
            f"| … every part of the export made (the lower roots, after that), median | – "
            f"| {complete:.0f} ms | – |",
            f"| … the pure logic of a slider move (`apply` + `render`), median | – | {logic_med:.2f} ms "
            "| – |",
            "",
            *(
                [
                    f"The same in a shorter window (1400 px wide; the first line above is at "
                    f"{args.heights[0]} px high, where all five figures are in sight):",
                    "",
                    "| window | TTI ratio | every part made | move ratio | move export / floor (ms) "
                    "| shape change median / p90 | … to the new sliders, median |",
                    "|---|---|---|---|---|---|---|",
                    *others,
                    "",
                ]
                if others
                else []
            ),
            f"Per round at 1400 × {args.heights[0]} px (export, the first part in stock Bokeh, then floor, "
            "each in a fresh context; times in ms):",
            "",
            "| round | TTI export | TTI first part, stock | TTI floor | ratio | move export | move floor "
            "| ratio | shape change | … to the sliders |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *per_round,
            "",
            "Method: see the docstring of `bench/bench_export.py`. The headless frame clock (≈16.7 ms) sets "
            "a floor under every repaint time.",
            "",
        ]
    )
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
