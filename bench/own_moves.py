"""Staleness as a student sees it, in Chromium, while a simulated class overloads the server: the served
page drawing the student's own moves (static/explorer_page.js follow) against the server drawing them.

    .venv/bin/python bench/own_moves.py --rounds 3 --times 2 --rate 4 [--one-x 270] [--pages 2]
    (--through-nginx --processes 2: two backends behind nginx, as bench/class_load.py)

One server (app.classroom's flags). Its capacity is measured first (bench/class_load.py `capacity`, moves
a second answered) unless `--one-x` gives it. Then, in each round, for each way in turn (the order
alternates between rounds):
* `own`: the page as served; `server`: the same page with its channel set to "the server draws" once it
  is loaded (widgets/channel.py `drawn_by`), so only the server's answers draw it (as before follow);
* a simulated class of `--times` × capacity ÷ `--rate` students moving `--rate` times a second
  (bench/class_load.py `drag`: the Bokeh protocol, one value in flight, as the page sends) is connected
  and started; `--pages` Chromium pages (each its own session, opened before the class starts) then move
  the slider x-3-0 `--rate` times a second, `--moves` times, each value set in the page as the slider's
  widget sets it;
* in each page, every animation frame reads the weights source and finds which move it shows, against
  the weights this script computed for each move's value with the core (to 1e-9). A move's staleness:
  from the moment it was set to the first frame showing it or a later move. `reverts`: frames showing an
  older move than an earlier frame did (an answer to an old move drawn over a newer one); `wrong`: frames,
  after the first move showed, that show none of the moves.
Reports each class's browser p50/p95 (all pages' moves), reverts, wrong, time-outs (a move never shown
within 10 s), the simulated class's own p95 and answered moves a second (the load was there), the load
average; and the median over rounds of each way's p95. No timed asserts anywhere: figures only.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from bench.class_load import capacity, finish, loadavg, settle, spawn  # noqa: E402
from bench.load_test import collect, pct, server  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS, SERVER_DRAWS  # noqa: E402
from widgets.state import HeadState  # noqa: E402
from widgets.viewdata import view_data  # noqa: E402

SLIDER = (3, 0)  # the chapter's query token "it", first component
TIMEOUT_S = 10.0


def move_values(n: int) -> list[float]:
    """Distinct values on the slider's grid, none of them the start's (whose weights are on screen first)."""
    start = float(HeadState().X[SLIDER])
    values = []
    k = 0
    while len(values) < n:
        v = round(-1.5 + 0.05 * (k % 60) + 0.01 * (k // 60), 2)
        if v != start:
            values.append(v)
        k += 1
    return values


def expected_weights(values: list[float]) -> list[list[float]]:
    """The weights source's `value` column for each move, from the core (widgets.viewdata)."""
    out = []
    for v in values:
        s = HeadState()
        s.set_x(*SLIDER, v)
        cells = view_data(s.head, s.query, s.labels, s.dims)["cells"]["weights"]
        out.append([float(x) for x in cells["value"]])
    return out


# In the page: one frame loop that records which move the weights show, and the moves set on a schedule.
START_JS = """
([name, values, expected, rate, tolerance]) => {
  const doc = Bokeh.documents[0];
  const slider = doc.get_model_by_name(name);
  const weights = doc.get_model_by_name('weights-cells');
  const col = () => (weights.data instanceof Map ? weights.data.get('value') : weights.data.value);
  const same = (a, b) => a.length === b.length && b.every((y, i) => {
    const x = a[i];
    return (Number.isNaN(x) && Number.isNaN(y)) || Math.abs(x - y) <= tolerance;
  });
  const shows = () => {
    const c = Array.from(col());
    for (let k = expected.length - 1; k >= 0; k--) if (same(c, expected[k])) return k;
    return -1;
  };
  const rec = window.__moves = { set: [], frames: [], done: false };
  let last = null;
  function frame(t) {
    const k = shows();
    if (k !== last) { rec.frames.push([performance.now(), k]); last = k; }
    if (!rec.done) requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);
  const t0 = performance.now() + 50;
  values.forEach((v, k) => {
    const at = t0 + (1000 * k) / rate;
    const go = () => {
      const now = performance.now();
      if (now < at - 1) { setTimeout(go, at - now); return; }
      rec.set.push(now);
      slider.value = v;
    };
    setTimeout(go, at - performance.now());
  });
  return true;
}
"""


def staleness(rec: dict, n: int) -> dict:
    """Per move: first frame at or after it was set that shows it or a later move."""
    frames, sets = rec["frames"], rec["set"]
    stale, timeouts, reverts, wrong = [], 0, 0, 0
    best = -1
    for _, k in frames:
        if k < best:
            if k == -1:
                wrong += 1
            else:
                reverts += 1
        best = max(best, k)
    for k, t_set in enumerate(sets):
        shown = next((t for t, j in frames if t >= t_set and j >= k), None)
        if shown is None or shown - t_set > 1000 * TIMEOUT_S:
            timeouts += 1
        else:
            stale.append(shown - t_set)
    timeouts += n - len(sets)
    return {"stale_ms": stale, "timeouts": timeouts, "reverts": reverts, "wrong": wrong}


def open_pages(browser, url: str, way: str, n: int) -> list:
    pages = []
    for _ in range(n):
        ctx = browser.new_context(viewport={"width": 1400, "height": 1500})
        page = ctx.new_page()
        page.errors = []
        page.on("pageerror", lambda e, page=page: page.errors.append(str(e)))
        page.on("console", lambda m, page=page: page.errors.append(m.text) if m.type == "error" else None)
        page.goto(url, timeout=120_000)
        page.wait_for_function(
            "() => window.Bokeh && Bokeh.documents.length && Bokeh.documents[0].get_model_by_name('x-3-0')",
            timeout=120_000,
        )
        page.wait_for_function("() => window.HeadExplorerPage && HeadExplorerPage.pages.length > 0")
        if way == "server":
            page.evaluate(SERVER_DRAWS)
        pages.append(page)
    return pages


def one_class(args, url, pids, browser, way: str, students: int, values, expected) -> dict:
    lead, tail = 2.0, TIMEOUT_S
    duration = lead + len(values) / args.rate + 3.0
    queue, procs, line = spawn("drag", url, students, duration, args.rate, args.per_process)
    pages = open_pages(browser, url, way, args.pages)  # opened while the class connects
    load_start = loadavg()
    start_at, stop_at = line.start(students, args.connect_budget)
    time.sleep(max(0.0, start_at + lead - time.time()))
    for page in pages:
        page.evaluate(START_JS, ["x-3-0", values, expected, args.rate, 1e-9])
    time.sleep(len(values) / args.rate + 1.0)
    deadline = time.time() + tail
    recs = []
    for page in pages:  # until each page shows the last move, at most `tail` s
        while time.time() < deadline and not page.evaluate(
            "(n) => window.__moves.frames.some(([, k]) => k === n - 1)", len(values)
        ):
            time.sleep(0.1)
        recs.append(page.evaluate("() => { window.__moves.done = true; return window.__moves; }"))
    drawn = [
        page.evaluate(
            "() => window.HeadExplorerPage && HeadExplorerPage.pages[0] ? "
            "HeadExplorerPage.pages[0].drawn : null"
        )
        for page in pages
    ]
    errors = [e for page in pages for e in page.errors]
    for page in pages:
        page.context.close()
    res = collect(queue, procs, stop_at - time.time() + 120)
    per_page = [staleness(r, len(values)) for r in recs]
    stale = [s for p in per_page for s in p["stale_ms"]]
    cls = [s for r in res for s in r["stale"]]
    return {
        "way": way,
        "students": students,
        "pages": args.pages,
        "moves_per_page": len(values),
        "load": [load_start, loadavg()],
        "browser_p50_ms": pct(stale, 50),
        "browser_p95_ms": pct(stale, 95),
        "browser_max_ms": max(stale, default=float("nan")),
        "timeouts": sum(p["timeouts"] for p in per_page),
        "reverts": sum(p["reverts"] for p in per_page),
        "wrong": sum(p["wrong"] for p in per_page),
        "page_errors": errors[:3],
        "drawn_failed_by_page": drawn,
        "frames_first_page": recs[0]["frames"] if recs else [],
        "set_first_page": recs[0]["set"] if recs else [],
        "class_p95_ms": 1000 * pct(cls, 95),
        "class_answered_per_s": sum(r["answered"] for r in res) / duration,
        "class_sent_per_s": sum(r["sent"] for r in res) / duration,
        "class_timeouts": sum(r["timeouts"] for r in res),
        "class_wrong": sum(r["wrong"] for r in res),
        "class_errors": sum(len(r["errors"]) for r in res),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--times", type=float, default=2.0, help="the class, as a multiple of the capacity")
    ap.add_argument("--rate", type=float, default=4.0, help="moves a second, each student and each page")
    ap.add_argument("--moves", type=int, default=40, help="moves of each Chromium page")
    ap.add_argument("--pages", type=int, default=2)
    ap.add_argument("--one-x", type=float, default=0.0, help="moves/s taken as 1× (else measured)")
    ap.add_argument("--sessions", type=int, default=20, help="capacity: sessions moving back to back")
    ap.add_argument("--capacity-duration", type=float, default=15.0)
    ap.add_argument("--per-process", type=int, default=25)
    ap.add_argument("--connect-budget", type=float, default=300.0)
    ap.add_argument("--through-nginx", action="store_true")
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--session-lifetime", type=float, default=0.5, metavar="MINUTES")
    ap.add_argument("--ways", default="own,server", help="which ways to run, in this order in round 1")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    logdir = ROOT / "test-artifacts" / "bench-logs"
    logdir.mkdir(parents=True, exist_ok=True)
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "load_start": loadavg(),
        "args": vars(args) | {"json": str(args.json)},
        "classes": [],
    }
    values = move_values(args.moves)
    expected = expected_weights(values)
    srv = SimpleNamespace(
        target=None,
        server_pid=[],
        through_nginx=args.through_nginx,
        processes=args.processes,
        port=0,
        session_lifetime=args.session_lifetime,
    )
    with server(srv, logdir) as (url, pids), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        one_x = args.one_x
        if not one_x:
            c = copy.copy(args)
            c.duration = args.capacity_duration
            cap = capacity(c, url, pids)
            report["capacity"] = cap
            one_x = cap["moves_per_s"]
            print(json.dumps(cap), flush=True)
            settle(args, pids, time.time())
        report["one_x_moves_per_s"] = one_x
        students = max(1, round(args.times * one_x / args.rate))
        for r in range(args.rounds):
            ways = args.ways.split(",")
            for way in ways if r % 2 == 0 else ways[::-1]:
                out = {"round": r + 1, **one_class(args, url, pids, browser, way, students, values, expected)}
                report["classes"].append(out)
                print(json.dumps(out), flush=True)
                settle(args, pids, time.time())
        browser.close()
    for way in args.ways.split(","):
        runs = [c for c in report["classes"] if c["way"] == way]
        report[f"{way}_p95_ms_median"] = statistics.median(c["browser_p95_ms"] for c in runs)
        report[f"{way}_p50_ms_median"] = statistics.median(c["browser_p50_ms"] for c in runs)
    return finish(report, args.json)


if __name__ == "__main__":
    main()
