"""What the figures' tables (static/a11y.js) cost a slider move, measured in the static export.

    .venv/bin/python bench/bench_a11y.py [--moves 60] [--rounds 3] [--out bench/RESULTS-a11y.md]

Four pages, measured in interleaved rounds (A B C D A B C D ...), the same way each time:
  A  the export without static/a11y.js (the floor: what the page cost before this work);
  B  with static/a11y.js, its five tables closed (how a page opens);
  C  with all five tables open, rebuilt in the light DOM at the next animation frame after a move;
  D  the other way to do it: the same five tables written as HTML into a Bokeh Div on every move (the
     readout root's heading Div, a root of two Divs), as a server-rendered table would be.
A move sets `x-3-0` (as bench/bench_export.py does) and the clock stops at the second animation frame
after the 'weights-cells' source changed, so the frame that lays out and paints the change is inside
it. Chromium's own counters (Performance.getMetrics: TaskDuration, ScriptDuration, LayoutDuration,
RecalcStyleDuration) give the main thread's busy time per move over the same moves, which the frame clock
does not round. The served page runs the same static/a11y.js on the same sources, so it pays what the
export pays.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from app.export import A11Y_JS, _script, render  # noqa: E402
from bench.common import load_average, write_results  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

MOVES_JS = """
async ([n, mode]) => {
  const doc = Bokeh.documents[0];
  const slider = doc.get_model_by_name('x-3-0');
  const src = doc.get_model_by_name('weights-cells');
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  let heading = null;
  if (mode === 'div') {  // every figure's table as Div HTML, rewritten on each move
    heading = doc.get_model_by_name('readout').children[0];
    const figures = ['weights', 'scores', 'scaled', 'qkv'];
    src.change.connect(() => {
      const html = figures.map(f => A11y.tableHtml(A11y.cellsTable(doc.get_model_by_name(f + '-cells').data,
        doc.get_model_by_name(f + '-outline').data), f)).join('');
      heading.text = '<h2>The steps for the chosen query</h2>' + html;
    });
  }
  let pending = null;
  src.change.connect(() => { if (pending) { const r = pending; pending = null; r(); } });
  const values = [0.15, 0.25, 0.35, 0.3, 0.2];
  const times = [];
  await frame(); await frame();
  for (let k = 0; k < n; k++) {
    let v = values[k % values.length];
    if (v === slider.value) v = v + 0.05;
    const changed = new Promise(r => { pending = r; });
    const t0 = performance.now();
    slider.value = v;
    await changed;
    await frame();
    await frame();
    times.push(performance.now() - t0);
  }
  return times;
}
"""

PAGES = {
    "A": ("without static/a11y.js", "plain", "closed"),
    "B": ("static/a11y.js, tables closed", "a11y", "closed"),
    "C": ("static/a11y.js, all five tables open", "a11y", "open"),
    "D": ("tables as Bokeh Div HTML, rewritten each move", "a11y", "div"),
}


def pages(tmp: Path) -> dict[str, Path]:
    text = render()
    plain = text.replace(_script(A11Y_JS.read_text()), "")
    assert plain != text
    out = {"a11y": tmp / "a11y.html", "plain": tmp / "plain.html"}
    out["a11y"].write_text(text)
    out["plain"].write_text(plain)
    return out


# In page C after the moves: updating all five open tables from their sources, as static/a11y.js does
# after a move, plus the layout that follows (forced at once here), timed directly. And in page B: how
# often static/a11y.js's MutationObservers (it follows BokehJS's views by the changes to their DOM) are
# called in a move, and their time.
REBUILD_JS = """
(n) => {
  const slider = Bokeh.documents[0].get_model_by_name('x-3-0');
  let total = 0;
  for (let k = 0; k < n; k++) {
    slider.value = k % 2 ? 0.25 : 0.3;  // the export's handler runs now and marks the open tables stale
    const t0 = performance.now();
    A11y.renderOpen();
    document.body.offsetHeight;  // and the layout the browser would do in the frame
    total += performance.now() - t0;
  }
  return total / n;
}
"""
# Before page B loads: every MutationObserver's callback counted and timed (static/a11y.js's are the
# page's only ones).
OBSERVERS_TIMED = """
window.__observed = {calls: 0, ms: 0};
const Native = window.MutationObserver;
window.MutationObserver = class extends Native {
  constructor(callback) {
    super((records, observer) => {
      const t0 = performance.now();
      try { callback(records, observer); } finally {
        window.__observed.calls += 1;
        window.__observed.ms += performance.now() - t0;
      }
    });
  }
};
"""
OBSERVED_JS = """
async (n) => {
  const slider = Bokeh.documents[0].get_model_by_name('x-3-0');
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  window.__observed = {calls: 0, ms: 0};
  for (let k = 0; k < n; k++) { slider.value = k % 2 ? 0.25 : 0.3; await frame(); await frame(); }
  return [window.__observed.calls / n, window.__observed.ms / n];
}
"""

METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")


def metrics(cdp) -> dict[str, float]:
    got = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {k: got[k] for k in METRICS}


def measure(browser, path: Path, mode: str, moves: int) -> tuple[list[float], dict[str, float]]:
    """Each move's latency (ms), and Chromium's main-thread time per move (ms) by kind."""
    page = browser.new_page(viewport={"width": 1400, "height": 1500})
    observed = mode == "closed" and path.name == "a11y.html"
    if observed:
        page.add_init_script(OBSERVERS_TIMED)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    page.goto(path.as_uri())
    page.wait_for_function(
        "() => window.Bokeh && Bokeh.documents.length && Bokeh.documents[0].get_model_by_name('steps')"
    )
    page.wait_for_timeout(300)
    if mode == "open":  # opened before the clock starts: opening builds the tables once
        page.evaluate(
            "() => document.querySelectorAll('details.figure-table').forEach(d => { d.open = true; })"
        )
        page.wait_for_timeout(300)
    before = metrics(cdp)
    times = page.evaluate(MOVES_JS, [moves, mode])
    after = metrics(cdp)
    extra = {}
    if mode == "open":
        extra["rebuild"] = page.evaluate(REBUILD_JS, 30)
    if observed:
        extra["observer_calls"], extra["observer_ms"] = page.evaluate(OBSERVED_JS, 20)
    page.close()
    return times, {**{k: 1000 * (after[k] - before[k]) / moves for k in METRICS}, **extra}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-a11y.md")
    args = parser.parse_args(argv)
    load_before = load_average()
    medians: dict[str, list[float]] = {k: [] for k in PAGES}
    busy: dict[str, list[dict]] = {k: [] for k in PAGES}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        files = pages(Path(tmp))
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        for r in range(args.rounds):
            for key, (_, file, mode) in PAGES.items():
                times, per_move = measure(browser, files[file], mode, args.moves)
                medians[key].append(statistics.median(times))
                busy[key].append(per_move)
                print(
                    f"round {r + 1} {key}: median {medians[key][-1]:.1f} ms, main thread {per_move}",
                    flush=True,
                )
        version = browser.version
        browser.close()
    load_after = load_average()
    base = statistics.median(medians["A"])
    lines = [
        "# What the figures' tables cost a move (static/a11y.js)",
        "",
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"Chromium {version}, headless; `bench/bench_a11y.py --moves {args.moves} --rounds {args.rounds}`; "
        f"load average {', '.join(load_before)} before and {', '.join(load_after)} after (1, 5, 15 min).",
        "",
        "| page | move → painted, median of the rounds' medians (per round) | ratio to A "
        "| main thread per move: all tasks / script / layout / style (median of rounds) | ratio to A |",
        "|---|---|---|---|---|",
    ]
    task = {k: statistics.median(b["TaskDuration"] for b in busy[k]) for k in PAGES}
    for key, (label, _, _) in PAGES.items():
        m = statistics.median(medians[key])
        rounds = ", ".join(f"{v:.1f}" for v in medians[key])
        parts = " / ".join(f"{statistics.median(b[k] for b in busy[key]):.1f}" for k in METRICS)
        ratio = task[key] / task["A"]
        lines.append(
            f"| {key}: {label} | {m:.1f} ms ({rounds}) | {m / base:.2f} | {parts} ms | {ratio:.2f} |"
        )
    rebuild = statistics.median(b["rebuild"] for b in busy["C"])
    calls = statistics.median(b["observer_calls"] for b in busy["B"])
    observed = statistics.median(b["observer_ms"] for b in busy["B"])
    lines += [
        "",
        f"Timed directly, in the same runs: updating the five open tables from their sources and "
        f"laying them out takes {rebuild:.2f} ms per move (page C, median of the rounds); with the tables "
        f"closed nothing is rebuilt, and static/a11y.js's MutationObservers are called {calls:.1f} times a "
        f"move, for {observed:.2f} ms in all (page B).",
        "",
        (__doc__ or "").split("\n\n", 2)[2].strip(),
        "",
    ]
    return write_results(args.out, lines)


if __name__ == "__main__":
    raise SystemExit(main())
