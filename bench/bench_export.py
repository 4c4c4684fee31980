"""The static export against the served widget, measured in headless Chromium.

    .venv/bin/python bench/bench_export.py [--moves 200] [--out bench/RESULTS-export.md]

Measures, in one run:
* the exported file's size;
* time to interactive from file://: from navigation start (performance.now() = 0) to the first
  animation frame in which the steps panel shows the chapter's weights, with every non-file
  request blocked and counted;
* slider → repaint latency, for the export and for `panel serve`, measured the same way: in the
  page, `doc.get_model_by_name('x-3-0').value = v` is set (v alternating between 0.15 … 0.35 so
  every move changes the weights); the clock stops at the first animation frame after the
  'weights-cells' source has changed (a `change` signal of that model).  One move at a time,
  the next starts after the previous one was painted; median and p90 over N moves;
* for the export, where a move's time goes: the synchronous time of the glue's handler
  (performance.now() around `HeadExport.handle`: compute plus every model write), and of
  `AttentionHead.attend` + `viewData` alone; the rest is BokehJS re-rendering in the frame;
* what `panel convert app/main.py --to pyodide-worker` would download (URLs read from its
  output; nothing is downloaded).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from app.export import export  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS, serve  # noqa: E402
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
      if (steps && steps.text.includes(want)) { window.__tti = performance.now(); return; }
    } catch (e) {}
    requestAnimationFrame(poll);
  }
  requestAnimationFrame(poll);
})();
""".replace("__WANT__", json.dumps(CHAPTER_WEIGHTS))

MOVES_JS = """
async (n) => {
  const doc = Bokeh.documents[0];
  const slider = doc.get_model_by_name('x-3-0');
  const src = doc.get_model_by_name('weights-cells');
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  let pending = null;
  src.change.connect(() => { if (pending) { const r = pending; pending = null; r(); } });
  const values = [0.15, 0.25, 0.35, 0.3, 0.2];
  const times = [];
  await frame();
  for (let k = 0; k < n; k++) {
    let v = values[k % values.length];
    if (v === slider.value) v = v + 0.05;
    const changed = new Promise(r => { pending = r; });
    const t0 = performance.now();
    slider.value = v;
    await Promise.race([changed, new Promise((_, no) => setTimeout(() => no(new Error('timeout')), 10000))]);
    await frame();
    times.push(performance.now() - t0);
  }
  return times;
}
"""


# Times the export's CustomJS handler during the moves (the CustomJS code looks it up on every call).
HANDLER_PROBE = """
() => {
  const he = window.HeadExport, inner = he.handle;
  window.__handler = [];
  he.handle = function (...args) {
    const t0 = performance.now();
    try { return inner.apply(this, args); } finally { window.__handler.push(performance.now() - t0); }
  };
}
"""

# The JS core alone, on the states the moves visit.
COMPUTE_JS = """
(n) => {
  const doc = Bokeh.documents[0];
  const s = HeadExport.states.get(doc.get_model_by_name('preset')).inputs;
  const values = [0.15, 0.25, 0.35, 0.3, 0.2];
  const times = [];
  for (let k = 0; k < n; k++) {
    const X = s.X.map(r => r.slice());
    X[3][0] = values[k % values.length];
    const t0 = performance.now();
    const head = AttentionHead.attend(X, s.W_Q, s.W_K, s.W_V, {scaling: s.scaling, causal: s.causal,
      tied_qk: s.tied_qk, normaliser: s.normaliser, x_scale: s.x_scale});
    AttentionHead.viewData(head, s.query, s.tokens, [0, 1]);
    times.push(performance.now() - t0);
  }
  return times;
}
"""


def summary(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def measure_static(browser, path: Path, moves: int) -> dict:
    context = browser.new_context(viewport={"width": 1400, "height": 1500})
    blocked, requests = [], []

    def route(r):
        if r.request.url.startswith(("file:", "data:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("request", lambda r: requests.append(r.url))
    page.add_init_script(TTI_PROBE)
    page.goto(path.as_uri())
    page.wait_for_function("() => window.__tti !== undefined", timeout=30000)
    tti = page.evaluate("() => window.__tti")
    page.evaluate(HANDLER_PROBE)
    times = page.evaluate(MOVES_JS, moves)
    handler = page.evaluate("() => window.__handler")
    compute = page.evaluate(COMPUTE_JS, moves)
    outside = [u for u in requests if not u.startswith(("file:", "data:"))]
    context.close()
    return {
        "tti": tti,
        "times": times,
        "handler": handler,
        "compute": compute,
        "requests": len(blocked) + len(outside),
    }


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


def tti_and_moves(browser, url: str, moves: int, timeout_ms: int) -> dict:
    """Time to interactive of the page at `url`, then the slider → repaint times of `moves` moves."""
    context = browser.new_context(viewport={"width": 1400, "height": 1500})
    page = context.new_page()
    page.add_init_script(TTI_PROBE)
    page.goto(url)
    page.wait_for_function("() => window.__tti !== undefined", timeout=timeout_ms)
    out = {"tti": page.evaluate("() => window.__tti"), "times": page.evaluate(MOVES_JS, moves)}
    context.close()
    return out


def measure_floor(browser, path: Path, moves: int) -> dict:
    return tti_and_moves(browser, path.as_uri(), moves, 30000)


def measure_served(browser, moves: int) -> dict:
    with serve("app/main.py") as base:
        return tti_and_moves(browser, f"{base}/main", moves, 90000)


def pyodide_report(tmp: Path) -> list[str]:
    """Run panel convert (offline) and list what its output would fetch; never download."""
    out = tmp / "pyodide"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "panel",
            "convert",
            str(ROOT / "app" / "main.py"),
            "--to",
            "pyodide-worker",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [f"`panel convert --to pyodide-worker` exit code {proc.returncode}"]
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        lines.append("error: " + " / ".join(t.strip() for t in tail))
    files = sorted(out.rglob("*")) if out.exists() else []
    urls: set[str] = set()
    for f in files:
        if f.is_file():
            lines.append(f"generated `{f.name}`: {f.stat().st_size:,} bytes")
            urls |= set(re.findall(r"https?://[^\s'\"`)<>]+", f.read_text(errors="replace")))
    for u in sorted(urls):
        lines.append(f"fetches `{u}`")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--moves", type=int, default=200)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-export.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = export(tmp / "head.html")
        size = path.stat().st_size
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            static = measure_static(browser, path, args.moves)
            served = measure_served(browser, args.moves)
            floor = measure_floor(browser, floor_page(tmp / "floor.html"), args.moves)
            browser.close()
        pyodide = pyodide_report(tmp)

    s_med, s_p90 = summary(static["times"])
    v_med, v_p90 = summary(served["times"])
    h_med, h_p90 = summary(static["handler"])
    c_med, c_p90 = summary(static["compute"])
    f_med, f_p90 = summary(floor["times"])
    try:
        load = "load average {:.2f}, {:.2f}, {:.2f} (1, 5, 15 min) at the end".format(*os.getloadavg())
    except OSError:
        load = "load average unknown"
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"
    chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip()
    text = "\n".join(
        [
            "# Static export vs served widget",
            "",
            f"Run {dt.datetime.now().strftime('%Y-%m-%d %H:%M')} on {machine}; {chromium}, headless; "
            f"`bench/bench_export.py --moves {args.moves}`; {load}.",
            "",
            "| measure | static export (file://) | served (`panel serve`, loopback) |",
            "|---|---|---|",
            f"| file size | {size / 1e6:.2f} MB ({size:,} bytes) | n/a (server) |",
            f"| time to interactive (nav start → chapter weights shown) | {static['tti']:.0f} ms "
            f"| {served['tti']:.0f} ms |",
            f"| slider → repaint, median ({args.moves} moves) | {s_med:.1f} ms | {v_med:.1f} ms |",
            f"| slider → repaint, p90 | {s_p90:.1f} ms | {v_p90:.1f} ms |",
            f"| … of which the export's handler (sync JS), median / p90 | {h_med:.1f} / {h_p90:.1f} ms "
            "| n/a |",
            f"| … of which `attend` + `viewData`, median / p90 | {c_med:.2f} / {c_p90:.2f} ms | n/a |",
            f"| network requests (non-file) | {static['requests']} | n/a |",
            "",
            "The floor, in the same run: a self-contained file with one slider and one 4 × 4 heatmap whose"
            " CustomJS writes 16 new values per move (BokehJS inline, nothing else): time to interactive"
            f" {floor['tti']:.0f} ms, slider → repaint median {f_med:.1f} ms (p90 {f_p90:.1f} ms).",
            "",
            "Method: in the page, set `Bokeh.documents[0].get_model_by_name('x-3-0').value`, stop the clock "
            "at the first requestAnimationFrame after the `weights-cells` source fires `change`; moves are "
            "sequential. Time to interactive is performance.now() at the first frame in which the steps "
            "panel shows the chapter's weights (static: with all non-file requests blocked). The headless "
            "frame clock (≈16.7 ms) sets a floor under both latencies.",
            "",
            "## Panel's own Pyodide export, for comparison (nothing downloaded)",
            "",
            *[f"- {line}" for line in pyodide],
            "",
        ]
    )
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
