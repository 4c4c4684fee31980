"""Slider-to-repaint latency of the served explorer against the same app on Panel's defaults.

    .venv/bin/python bench/bench_latency.py [--moves 200] [--long 1000] [--out bench/RESULTS-latency.md]

One run serves, one after the other: app/main.py (ours: Bokeh widgets, no
debounce), bench/baseline_app.py (Panel widgets, 50 ms debounce),
bench/app_t64.py (ours on 64 tokens), bench/floor_app.py (one slider and
one small heatmap: the platform's floor) and bench/floor5_app.py (the floor
with five heatmaps), and drives each from headless Chromium.
A move is: JavaScript sets the token slider's Bokeh model value (ours by name
x-3-0, the baseline's by title it[0]) → the server recomputes → the
weights-cells source changes in the browser ("arrived") → one
requestAnimationFrame ("repainted").  Also measured: the server process's CPU
time per move, the first render (navigation start → the chapter's weights
line visible) and the browser's Bokeh model count before and after many moves.
Writes a markdown table; prints JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import psutil
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

from app.serving import free_port, stop_process, wait_for_http  # noqa: E402

START_TEXT = "weights = [0.13, 0.56, 0.14, 0.18]"

JS_MOVES = """async ({name, title, values}) => {
    const doc = Bokeh.documents[0];
    const source = doc.get_model_by_name('weights-cells');
    const slider = name ? doc.get_model_by_name(name)
        : [...doc.all_models].find(m => m.type === 'Slider' && m.title === title);
    if (!slider) throw new Error('no slider ' + (name || title));
    const arrived = [], painted = [];
    for (let i = 0; i < values.length; i++) {
        const changed = new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error('no update for move ' + i)), 15000);
            const slot = () => {
                source.change.disconnect(slot);
                clearTimeout(timer);
                resolve(performance.now());
            };
            source.change.connect(slot);
        });
        const t0 = performance.now();
        slider.value = values[i];
        const ta = await changed;
        const tp = await new Promise(r => requestAnimationFrame(() => r(performance.now())));
        arrived.push(ta - t0);
        painted.push(tp - t0);
    }
    return {arrived, painted};
}"""

JS_SLIDER_VALUE = """({name, title}) => {
    const doc = Bokeh.documents[0];
    const s = name ? doc.get_model_by_name(name)
        : [...doc.all_models].find(m => m.type === 'Slider' && m.title === title);
    return s.value;
}"""


@contextmanager
def serve(app: str):
    """`panel serve APP` on a free loopback port; yields (url, psutil.Process).  Patient when busy."""
    port = free_port()
    stem = Path(app).stem
    log = open(Path(tempfile.gettempdir()) / f"bench-serve-{stem}.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", str(ROOT / app), "--port", str(port), "--address",
         "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/{stem}"
    try:
        wait_for_http(url, timeout=120)
        yield url, psutil.Process(proc.pid)
    finally:
        stop_process(proc)
        log.close()


def cpu_seconds(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def values_for(n: int, current: float) -> list[float]:
    """n slider values on the 0.05 grid in [-1, 0.95], each different from the one before."""
    out, prev = [], current
    k = 0
    while len(out) < n:
        v = round(-1.0 + 0.05 * (k % 40), 2)
        k += 1
        if abs(v - prev) > 1e-9:
            out.append(v)
            prev = v
    return out


def open_page(browser, url: str, wait_text: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url, wait_until="commit")
    page.wait_for_selector(f"text={wait_text}", timeout=60000)
    first = page.evaluate("() => performance.now()")  # ms since navigation start
    page.errors = errors
    return page, first


def first_render(browser, url: str, wait_text: str, n: int = 3) -> list[float]:
    out = []
    for _ in range(n):
        page, ms = open_page(browser, url, wait_text)
        out.append(ms)
        page.close()
    return out


def moves(page, slider: dict, n: int) -> dict:
    current = page.evaluate(JS_SLIDER_VALUE, slider)
    return page.evaluate(JS_MOVES, {**slider, "values": values_for(n, current)})


def pct(xs, q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def summary(xs) -> dict:
    return {"median": statistics.median(xs), "p95": pct(xs, 0.95), "n": len(xs)}


def bench_app(browser, app: str, slider: dict, wait_text: str, n: int, long: int = 0) -> dict:
    out: dict = {"app": app}
    with serve(app) as (url, proc):
        open_page(browser, url, wait_text)[0].close()  # warm the server (first session imports more)
        out["first_render_ms"] = first_render(browser, url, wait_text)
        page, _ = open_page(browser, url, wait_text)
        moves(page, slider, 10)  # warm-up, not counted
        out["models_before"] = page.evaluate("() => Bokeh.documents[0].all_models.size")
        c0 = cpu_seconds(proc)
        m = moves(page, slider, n)
        out["server_cpu_ms_per_move"] = (cpu_seconds(proc) - c0) * 1000 / n
        out["arrived"] = summary(m["arrived"])
        out["painted"] = summary(m["painted"])
        done = n
        while done < long:
            k = min(200, long - done)
            moves(page, slider, k)
            done += k
        out["moves_total"] = done
        out["models_after"] = page.evaluate("() => Bokeh.documents[0].all_models.size")
        out["console_errors"] = page.errors
        page.close()
    return out


def fmt_ms(x: float) -> str:
    return f"{x:.1f} ms"


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def write_markdown(path: Path, r: dict) -> None:
    ours, base, t64, floor, floor5 = r["ours"], r["baseline"], r["t64"], r["floor"], r["floor5"]
    med, bmed = ours["painted"]["median"], base["painted"]["median"]
    ratio = med / bmed
    fr, bfr = statistics.median(ours["first_render_ms"]), statistics.median(base["first_render_ms"])
    cpu, bcpu = ours["server_cpu_ms_per_move"], base["server_cpu_ms_per_move"]
    date = r["date"]
    rows = [
        ("slider → weights repainted, median", "≤ 20 ms", fmt_ms(med), fmt_ms(bmed), f"{ratio:.2f}",
         verdict(med <= 20)),
        ("… ratio ours / baseline (median)", "≤ 0.35×", f"{ratio:.2f}×", "1", f"{ratio:.2f}",
         verdict(ratio <= 0.35)),
        ("slider → weights repainted, p95", "—", fmt_ms(ours["painted"]["p95"]),
         fmt_ms(base["painted"]["p95"]), f"{ours['painted']['p95'] / base['painted']['p95']:.2f}", ""),
        ("slider → weights source changed (no rAF), median", "—", fmt_ms(ours["arrived"]["median"]),
         fmt_ms(base["arrived"]["median"]), f"{ours['arrived']['median'] / base['arrived']['median']:.2f}",
         ""),
        ("server CPU per move", "≤ 2 ms", fmt_ms(cpu), fmt_ms(bcpu), f"{cpu / bcpu:.2f}", verdict(cpu <= 2)),
        ("first render (navigation → weights text), median of 3", "≤ 1.5 s", fmt_ms(fr), fmt_ms(bfr),
         f"{fr / bfr:.2f}", verdict(fr <= 1500)),
        (f"browser model count, before → after {ours['moves_total']} moves", "unchanged",
         f"{ours['models_before']} → {ours['models_after']}",
         f"{base['models_before']} → {base['models_after']}", "",
         verdict(ours["models_before"] == ours["models_after"])),
        ("T = 64: slider → weights repainted, median", "≤ 40 ms", fmt_ms(t64["painted"]["median"]), "—", "",
         verdict(t64["painted"]["median"] <= 40)),
        ("T = 64: p95 / server CPU per move", "—",
         f"{fmt_ms(t64['painted']['p95'])} / {fmt_ms(t64['server_cpu_ms_per_move'])}", "—", "", ""),
        ("floor (one slider, one 4 × 4 heatmap): repainted median / server CPU per move", "—",
         f"{fmt_ms(floor['painted']['median'])} / {fmt_ms(floor['server_cpu_ms_per_move'])}", "—", "", ""),
        ("floor: first render, median of 3", "—",
         fmt_ms(statistics.median(floor["first_render_ms"])), "—", "", ""),
        ("floor with five 4 × 4 heatmaps (as many figures as a move repaints): repainted median / server CPU"
         " per move", "—",
         f"{fmt_ms(floor5['painted']['median'])} / {fmt_ms(floor5['server_cpu_ms_per_move'])}", "—", "", ""),
    ]
    lines = [
        "# Slider latency: Bokeh widgets (ours) against Panel widgets (baseline)",
        "",
        f"Measured {date} by `bench/bench_latency.py` ({ours['arrived']['n']} timed moves per app, after"
        f" 10 warm-up moves; T = 64: {t64['arrived']['n']}), headless Debian Chromium, one machine"
        f" ({os.cpu_count()} cores), server and browser on loopback. Load average at start"
        f" {r['load'][0]}, at end {r['load'][1]}"
        " (other jobs were running; numbers on an idle machine will be lower).",
        "",
        "| metric | target | measured | baseline | ratio | verdict | date |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {m} | {t} | {v} | {b} | {q} | {ok} | {date} |" for m, t, v, b, q, ok in rows]
    lines += [
        "",
        "A move: JavaScript sets the slider's Bokeh model value; measured until the `weights-cells`"
        " source changes in the browser, then one `requestAnimationFrame` (\"repainted\"). The baseline"
        " is bench/baseline_app.py: same HeadState, same HeadPage figures and redraw, Panel widgets"
        " (50 ms debounce) for the controls, on Panel's default page (without the app's template, so"
        " also without static/bokeh_patch.js). Server CPU is the `panel serve` process's user + system"
        " time over the timed moves ÷ moves. The floor is bench/floor_app.py: one Bokeh slider and one"
        " 4 × 4 heatmap served the same way, i.e. what Bokeh, Panel and the browser cost here before the"
        " explorer adds anything; bench/floor5_app.py is the same with five heatmaps, all rewritten on"
        " every move.",
        "",
    ]
    if r.get("notes"):
        lines += ["## Notes", "", *r["notes"], ""]
    path.write_text("\n".join(lines))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--moves", type=int, default=200)
    ap.add_argument("--t64-moves", type=int, default=50, help="timed moves for the 64-token case")
    ap.add_argument("--long", type=int, default=1000, help="total moves before the second model count")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-latency.md")
    ap.add_argument("--json", type=Path, default=Path(tempfile.gettempdir()) / "bench-latency.json")
    args = ap.parse_args(argv)
    r: dict = {"date": dt.date.today().isoformat(), "load": [None, None]}
    r["load"][0] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            r["ours"] = bench_app(browser, "app/main.py", {"name": "x-3-0", "title": None}, START_TEXT,
                                  args.moves, args.long)
            r["baseline"] = bench_app(browser, "bench/baseline_app.py", {"name": None, "title": "it[0]"},
                                      START_TEXT, args.moves, args.moves)
            r["t64"] = bench_app(browser, "bench/app_t64.py", {"name": "x-63-0", "title": None},
                                 "weights = [", args.t64_moves)
            r["floor"] = bench_app(browser, "bench/floor_app.py", {"name": "x-3-0", "title": None},
                                   START_TEXT, args.moves)
            r["floor5"] = bench_app(browser, "bench/floor5_app.py", {"name": "x-3-0", "title": None},
                                    START_TEXT, args.moves)
        finally:
            browser.close()
    r["load"][1] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    args.json.write_text(json.dumps(r, indent=1))
    write_markdown(args.out, r)
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "console_errors"} if isinstance(v, dict)
                      else v for k, v in r.items()}, indent=1))
    return r


if __name__ == "__main__":
    main()
