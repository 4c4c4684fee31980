"""Train it yourself (issue 29): the page's trainer against numpy, the explorer while it trains, Stop, size.

    flock /tmp/bench.lock .venv/bin/python bench/bench_train.py [--rounds 3] [--runs RUN ...] [--moves 30]

Every round, in this order:
* for each of `--runs` (default: one run of each shipped task): the run trained in numpy
  (core.lab.runs.train, seed 0, with its snapshots, as `python -m core.train --write` trains it) and in
  headless Chromium (the exported file, file://, every non-file request blocked: the lab's Train button,
  timed from the click to the page's "Done"), and the two last lines compared (they must be equal);
* the explorer's slider → weights repainted (as bench/bench_export.py times a move: the clock stops at the
  first animation frame after the 'weights-cells' source changed), `--moves` moves with no run training,
  then as many while the triggers run trains in the lab's worker, the page at its top, in a window
  1400 × 3200 px (the explorer and the lab's open panel both in sight, the panel redrawn as it trains:
  judged) and 1400 × 1000 (the panel out of sight, as a student dragging a slider above it sees the page);
* Stop: a triggers run started, stopped after a second: the time from the click to the page saying
  "Stopped at step N" (the worker read the stop, trains no more) and to the run's last line (the model
  evaluated where it stopped);
* the file's size, and (once) the size of the export main's commit builds.
Ratios are the median over rounds; the load average is recorded before and after.
"""

from __future__ import annotations

import argparse
import datetime as dt
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
from bench.bench_export import TIMED_SETS_JS, slider_values  # noqa: E402
from bench.common import block_all_but, load_average, write_results  # noqa: E402
from core.lab.runs import RUNS, final_line, train  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

DEFAULT_RUNS = ("previous-token", "positional-lookup", "triggers")
HEIGHTS = (3200, 1000)  # the panel in sight (judged), out of sight
STATUS = ".lab-train-status"


def open_lab(browser, url: str, height: int = 1000):
    """The exported file in a fresh context, offline, with the lab's Train panel open."""
    context = browser.new_context(viewport={"width": 1400, "height": height})
    blocked = block_all_but(context, ("file:", "data:", "blob:"))
    page = context.new_page()
    page.goto(url)
    page.locator("details.lab-train").wait_for(timeout=60_000)
    page.locator("details.lab-train summary").click()
    return context, page, blocked


def chromium_run(browser, url: str, name: str) -> tuple[float, str]:
    """Seconds from the Train click to "Done", and the page's last line."""
    context, page, blocked = open_lab(browser, url)
    page.locator("select.lab-run").select_option(name)
    page.locator("input.lab-train-seed").fill("0")
    t0 = time.perf_counter()
    page.locator("button.lab-train-go").click()
    done = f"() => document.querySelector('{STATUS}').textContent.startsWith('Done')"
    page.wait_for_function(done, timeout=600_000, polling=20)
    seconds = time.perf_counter() - t0
    line = page.locator(STATUS).inner_text().split(" s. ", 1)[1]
    context.close()
    assert not blocked, blocked
    return seconds, line


def numpy_run(name: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    result = train(RUNS[name], seed=0)
    return time.perf_counter() - t0, final_line(result)


def start_triggers(page) -> None:
    page.locator("select.lab-train-task").select_option("triggers")
    page.locator("input.lab-train-seed").fill("0")
    page.locator("button.lab-train-go").click()
    started = "() => / step [1-9]/.test(document.querySelector('.lab-train-progress').textContent)"
    page.wait_for_function(started)


def stop_and_wait(page) -> None:
    page.locator("button.lab-train-stop").click()
    page.locator("button.lab-train-go:not([disabled])").wait_for(timeout=60_000)


def repaints(browser, url: str, moves: int, height: int) -> tuple[list, list]:
    """Slider moves timed with no run training, then while the triggers run trains."""
    context, page, _ = open_lab(browser, url, height)
    page.evaluate("() => window.scrollTo(0, 0)")
    idle = page.evaluate(TIMED_SETS_JS, ["x-3-0", "value", "weights-cells", slider_values(moves)])
    start_triggers(page)
    page.evaluate("() => window.scrollTo(0, 0)")
    busy = page.evaluate(TIMED_SETS_JS, ["x-3-0", "value", "weights-cells", slider_values(moves)])
    still = page.locator(STATUS).inner_text()
    assert still.startswith("Training triggers"), still  # the run trained through every move
    stop_and_wait(page)
    context.close()
    return idle, busy


STOP_JS = """async () => {
  const status = document.querySelector('.lab-train-status');
  const button = document.querySelector('button.lab-train-stop');
  const seen = (test) => new Promise((done) => {
    const watch = new MutationObserver(() => {
      if (test(status.textContent)) { watch.disconnect(); done(performance.now()); }
    });
    watch.observe(status, { childList: true, characterData: true, subtree: true });
  });
  const stopped = seen((t) => t.startsWith('Stopped at step')), ended = seen((t) => t.startsWith('Stopped:'));
  const t0 = performance.now();
  button.click();
  return [(await stopped) - t0, (await ended) - t0];
}"""


def stop_times(browser, url: str) -> tuple[float, float]:
    """ms from the Stop click to "Stopped at step N", and to the run's last line."""
    context, page, _ = open_lab(browser, url)
    start_triggers(page)
    page.wait_for_timeout(1000)
    stopped, ended = page.evaluate(STOP_JS)
    context.close()
    return stopped, ended


def main_export_size(tmp: Path) -> int:
    """The size of the export that main's commit builds (its files taken with `git archive`)."""
    src = tmp / "main-src"
    src.mkdir()
    archive = subprocess.run(["git", "archive", "main"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    out = tmp / "main.html"
    subprocess.run([sys.executable, "-m", "app.export", str(out)], cwd=src, env=env, check=True,
                   capture_output=True)
    return out.stat().st_size


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", nargs="+", default=list(DEFAULT_RUNS), choices=list(RUNS))
    parser.add_argument("--moves", type=int, default=30)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-train.md")
    args = parser.parse_args(argv)
    load_before = load_average()
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = export(tmp / "explorer.html")
        fragment = export(tmp / "fragment.html", fragment=True)
        sizes = {"page": path.stat().st_size, "fragment": fragment.stat().st_size}
        main_size = main_export_size(tmp)
        url = path.as_uri()
        times = {n: {"numpy": [], "chromium": []} for n in args.runs}
        idle, busy, stops = {h: [] for h in HEIGHTS}, {h: [] for h in HEIGHTS}, []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            for _ in range(args.rounds):
                for name in args.runs:
                    np_s, np_line = numpy_run(name)
                    js_s, js_line = chromium_run(browser, url, name)
                    assert js_line == np_line, (js_line, np_line)
                    times[name]["numpy"].append(np_s)
                    times[name]["chromium"].append(js_s)
                    print(name, f"numpy {np_s:.1f} s, chromium {js_s:.1f} s", flush=True)
                for h in HEIGHTS:
                    i, b = repaints(browser, url, args.moves, h)
                    idle[h].append(i)
                    busy[h].append(b)
                    print("repaint", h, med(i), med(b), flush=True)
                stops.append(stop_times(browser, url))
                print("stop", stops[-1], flush=True)
            browser.close()
    load_after = load_average()
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"
    chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip()
    ok = lambda good: "yes" if good else "no"  # noqa: E731
    run_rows = []
    for name in args.runs:
        t = times[name]
        ratio = med(js / np_ for js, np_ in zip(t["chromium"], t["numpy"]))
        run_rows.append(
            f"| a run in Chromium / numpy: `{name}` ({RUNS[name].steps} steps), median of rounds | ≤ 2× "
            f"| {ratio:.2f}× ({med(t['chromium']):.1f} s / {med(t['numpy']):.1f} s) | {ok(ratio <= 2)} |"
        )
    ratio = {h: med(med(b) / med(i) for i, b in zip(idle[h], busy[h])) for h in HEIGHTS}
    ms = {h: (med(med(b) for b in busy[h]), med(med(i) for i in idle[h])) for h in HEIGHTS}
    seen, unseen = HEIGHTS
    stopped, ended = med(s for s, _ in stops), med(e for _, e in stops)
    grew = f"; main's page {main_size:,} bytes: {sizes['page'] - main_size:+,}"
    lines = [
        "# Train it yourself: the page's trainer",
        "",
        f"Run {dt.datetime.now().strftime('%Y-%m-%d %H:%M')} on {machine}; {chromium}, headless; "
        f"`bench/bench_train.py --rounds {args.rounds} --runs {' '.join(args.runs)} --moves {args.moves}`; "
        f"load average (1, 5, 15 min) {' '.join(load_before)} before, {' '.join(load_after)} after "
        "(the machine was shared with other jobs). Every run's last line in the page equalled numpy's.",
        "",
        "| measure | target | measured | met? |",
        "|---|---|---|---|",
        *run_rows,
        f"| explorer slider → weights repainted while the triggers run trains / idle, the panel in sight "
        f"(median of rounds' medians) | ≤ 1.5× | {ratio[seen]:.2f}× ({ms[seen][0]:.1f} / {ms[seen][1]:.1f} "
        f"ms) | {ok(ratio[seen] <= 1.5)} |",
        f"| … the panel out of sight | – | {ratio[unseen]:.2f}× ({ms[unseen][0]:.1f} / {ms[unseen][1]:.1f} "
        "ms) | – |",
        f"| Stop → the page says it stopped (no step after it), median | ≤ 200 ms | {stopped:.0f} ms "
        f"| {ok(stopped <= 200)} |",
        f"| Stop → the run's last line (evaluated where it stopped), median | – | {ended:.0f} ms | – |",
        f"| file size, page | ≤ 2.5 MB | {sizes['page'] / 1e6:.2f} MB ({sizes['page']:,} bytes{grew}) "
        f"| {ok(sizes['page'] <= 2_500_000)} |",
        f"| file size, fragment | ≤ 2.5 MB | {sizes['fragment'] / 1e6:.2f} MB ({sizes['fragment']:,} bytes) "
        f"| {ok(sizes['fragment'] <= 2_500_000)} |",
        "",
        "Per round (s for runs, ms for moves and Stop):",
        "",
        "| round | " + " | ".join(f"{n} numpy / Chromium" for n in args.runs)
        + " | repaint idle / training, in sight | out of sight | Stop: stopped / last line |",
        "|---|" + "---|" * (len(args.runs) + 3),
    ]
    for k in range(args.rounds):
        cells = [f"{times[n]['numpy'][k]:.1f} / {times[n]['chromium'][k]:.1f}" for n in args.runs]
        lines.append(
            f"| {k + 1} | " + " | ".join(cells)
            + "".join(f" | {med(idle[h][k]):.1f} / {med(busy[h][k]):.1f}" for h in HEIGHTS)
            + f" | {stops[k][0]:.0f} / {stops[k][1]:.0f} |"
        )
    return write_results(args.out, lines + [""])


if __name__ == "__main__":
    sys.exit(main())
