"""Slider-to-repaint latency of the served explorer against its floors and a baseline, interleaved.

    .venv/bin/python bench/bench_latency.py [--rounds 3] [--moves 60] [--apps ours,ours-server,shape,t64]
        [--long 1000] [--out bench/RESULTS-latency.md]

Every app is served at once, each by its own `panel serve` process: app/main.py (ours), the same-shape
floor bench/floor_shape_app.py (the figures and text a move of the explorer changes, nothing else),
bench/baseline_app.py (Panel widgets, 50 ms debounce), bench/app_t64.py (ours on 64 tokens),
bench/floor_app.py and bench/floor5_app.py (one and five bare heatmaps). Then, in each of `--rounds`
rounds, every app in turn (A B C A B C ...): a fresh tab's first render (navigation start → the chapter's
weights line visible), 5 warm-up moves and `--moves` timed moves, and the server process's CPU time over
them. A move is: JavaScript sets the token slider's Bokeh model value (ours by name x-3-0, the baseline's
by title it[0]) → the server recomputes → the weights-cells source changes in the browser ("arrived") →
one requestAnimationFrame ("repainted"). The explorer draws a student's own moves in the page before the
server answers (static/explorer_page.js follow): `ours` and `t64` time that, the page as served;
`ours-server` and `t64-server` then set the page's channel to "the server draws" (widgets/channel.py
`drawn_by`, as a page whose own drawing failed does), so the server's answer alone draws each move, and
each move waits for it: the server's CPU per move is judged there. Each round's ratio and the median
ratio are written to a markdown table with /proc/loadavg at each round; `--long` also counts the
explorer's browser models before and after that many moves. Raw results go to `--json`.
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
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psutil
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import CHROMIUM, CHROMIUM_FLAGS, SERVER_DRAWS  # noqa: E402

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


# A closed tab's session is torn down (its document destroyed, then Panel's and app/serving.py's garbage
# collections 5 s later, later still on a busy machine: ~175 ms of CPU for the explorer, ~85 ms for the
# same-shape floor) this soon after it closed, not 15-32 s later (Bokeh's default), when it would land in
# another round's timed moves and be counted as per-move CPU. Each app's turn starts no sooner than SETTLE_S
# after its previous tab closed.
SESSION_LIFETIME_MS = 500
SETTLE_S = 12.0


@contextmanager
def serve(app: str, tree: Path = ROOT):
    """`panel serve APP` (from `tree`, this checkout unless told) on a free loopback port; yields (url,
    psutil.Process).  Patient when busy; closed sessions are torn down within a second."""
    port = free_port()
    stem = Path(app).stem
    log = open(Path(tempfile.gettempdir()) / f"bench-serve-{stem}.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "panel",
            "serve",
            str(tree / app),
            "--port",
            str(port),
            "--address",
            "127.0.0.1",
            "--allow-websocket-origin",
            f"127.0.0.1:{port}",
            "--check-unused-sessions",
            str(SESSION_LIFETIME_MS),
            "--unused-session-lifetime",
            str(SESSION_LIFETIME_MS),
        ],
        cwd=tree,
        stdout=log,
        stderr=subprocess.STDOUT,
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


def open_page(browser, url: str, wait_text: str, then: str | None = None):
    """A fresh page at `url` once `wait_text` shows, and the ms from navigation to then; `then`: JavaScript
    run in it after that."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url, wait_until="commit")
    page.wait_for_selector(f"text={wait_text}", timeout=60000)
    first = page.evaluate("() => performance.now()")  # ms since navigation start
    if then:
        page.evaluate(then)
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


# The served page draws a student's own moves (static/explorer_page.js follow); after SERVER_DRAWS only the
# server's answers draw them: the round trip, and the server's work per move, as before follow.
APPS = {  # key: (script, slider, the text that says the page is working[, a script run once it is])
    "ours": ("app/main.py", {"name": "x-3-0", "title": None}, START_TEXT),
    "ours-server": ("app/main.py", {"name": "x-3-0", "title": None}, START_TEXT, SERVER_DRAWS),
    "shape": ("bench/floor_shape_app.py", {"name": "x-3-0", "title": None}, START_TEXT),
    "baseline": ("bench/baseline_app.py", {"name": None, "title": "it[0]"}, START_TEXT),
    "t64": ("bench/app_t64.py", {"name": "x-63-0", "title": None}, "weights = ["),
    "t64-server": ("bench/app_t64.py", {"name": "x-63-0", "title": None}, "weights = [", SERVER_DRAWS),
    "floor": ("bench/floor_app.py", {"name": "x-3-0", "title": None}, START_TEXT),
    "floor5": ("bench/floor5_app.py", {"name": "x-3-0", "title": None}, START_TEXT),
}
LABELS = {
    "ours": "the explorer (app/main.py), drawing the student's own moves",
    "ours-server": "the explorer, drawn by the server's answers only",
    "shape": "same-shape floor (bench/floor_shape_app.py)",
    "baseline": "Panel-widget baseline (bench/baseline_app.py)",
    "t64": "the explorer on 64 tokens (bench/app_t64.py), drawing its own moves",
    "t64-server": "the explorer on 64 tokens, drawn by the server's answers only",
    "floor": "one-heatmap floor (bench/floor_app.py)",
    "floor5": "five-heatmap floor (bench/floor5_app.py)",
}


def one_round(browser, key: str, url: str, proc, n: int) -> dict:
    """One app's turn in a round: a fresh page's first render, then n timed moves in it."""
    _, slider, wait_text, *init = APPS[key]
    page, first = open_page(browser, url, wait_text, *init)
    moves(page, slider, 5)  # warm-up, not counted
    c0 = cpu_seconds(proc)
    m = moves(page, slider, n)
    cpu = (cpu_seconds(proc) - c0) * 1000 / n
    out = {
        "first_render_ms": first,
        "server_cpu_ms_per_move": cpu,
        "painted": summary(m["painted"]),
        "arrived": summary(m["arrived"]),
        "errors": page.errors,
        "models": page.evaluate("() => Bokeh.documents[0].all_models.size"),
    }
    page.close()
    return out


def load() -> str:
    """/proc/loadavg's 1, 5 and 15 minute averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def fmt_ms(x: float) -> str:
    return f"{x:.1f} ms"


METRICS = (  # (key in a round's result, title, how to read it)
    ("painted", "slider → weights repainted, median of the round's moves"),
    ("server_cpu_ms_per_move", "server CPU per move"),
    ("first_render_ms", "first render (navigation → chapter's weights on screen)"),
)


def value_of(rnd: dict, metric: str) -> float:
    v = rnd[metric]
    return v["median"] if isinstance(v, dict) else v


RATIOS = (  # (numerator, denominator, metric, target, what the target says)
    ("ours", "shape", "painted", 1.2, "repaint ≤ 1.2× the same-shape floor"),
    ("ours-server", "shape", "painted", None, "repaint by the server's answer alone / the same-shape floor"),
    # each of the server's moves computed (the page waits for the answer), as the floor's are
    ("ours-server", "shape", "server_cpu_ms_per_move", 1.3, "server CPU per move ≤ 1.3× the same-shape floor"),  # noqa: E501
    ("ours", "shape", "first_render_ms", 1.2, "first render ≤ 1.2× the same-shape floor"),
    ("t64", "ours", "painted", 2.0, "T = 64 repaint ≤ 2× T = 4"),
    ("t64-server", "ours-server", "painted", None, "T = 64 / T = 4, by the server's answers alone"),
    ("ours", "baseline", "painted", None, "repaint, ours / Panel-widget baseline"),
    ("ours", "baseline", "server_cpu_ms_per_move", None, "server CPU, ours / Panel-widget baseline"),
    ("shape", "floor5", "painted", None, "repaint, same-shape floor / five-heatmap floor"),
)


def write_markdown(path: Path, r: dict) -> None:
    rounds = r["rounds"]
    lines = [
        "# Slider latency, interleaved: the explorer against its same-shape floor, baseline and floors",
        "",
        f"Measured {r['date']} ({r['started']} – {r['ended']} UTC) by `bench/bench_latency.py --rounds"
        f" {len(rounds)} --moves {r['moves']}`: every app served at once by its own `panel serve`"
        " process, then driven in rounds, each round visiting every app in turn ("
        + " ".join(r["order"])
        + f"), so all of them see the same machine. Headless Debian Chromium, {os.cpu_count()} cores,"
        " loopback."
        " /proc/loadavg at the start of each round: "
        + "; ".join(rd["load"] for rd in rounds)
        + f"; at the end {r['load_end']}.",
        "",
        "## Ratios, per round and median (a target is judged on the median)",
        "",
        "| ratio | "
        + " | ".join(f"round {k + 1}" for k in range(len(rounds)))
        + " | median | target | verdict |",
        "|---|" + "---|" * (len(rounds) + 3),
    ]
    for a, b, metric, target, title in RATIOS:
        if a not in r["order"] or b not in r["order"]:
            continue
        qs = [value_of(rd[a], metric) / value_of(rd[b], metric) for rd in rounds]
        med = statistics.median(qs)
        verdict = "" if target is None else ("met" if med <= target else "**missed**")
        lines.append(
            f"| {title} | "
            + " | ".join(f"{q:.2f}" for q in qs)
            + f" | **{med:.2f}** | {'' if target is None else f'≤ {target}'} | {verdict} |"
        )
    lines += [
        "",
        "## Absolute values, median over rounds (each round: the median of its moves)",
        "",
        "| app | repainted | arrived (no rAF) | repaint p95 | server CPU / move | first render | models |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in r["order"]:

        def med(metric, field="median", key=key):
            return statistics.median(
                rd[key][metric][field] if isinstance(rd[key][metric], dict) else rd[key][metric]
                for rd in rounds
            )

        lines.append(
            f"| {LABELS[key]} | {fmt_ms(med('painted'))} | {fmt_ms(med('arrived'))} | "
            f"{fmt_ms(med('painted', 'p95'))} | {fmt_ms(med('server_cpu_ms_per_move'))} | "
            f"{fmt_ms(med('first_render_ms'))} | {rounds[-1][key]['models']} |"
        )
    if r.get("long"):
        lg = r["long"]
        lines += [
            "",
            f"Browser model count of the explorer before → after {lg['moves']} moves:"
            f" {lg['before']} → {lg['after']}.",
        ]
    lines += [
        "",
        "A move: JavaScript sets the slider's Bokeh model value; measured until the `weights-cells` source"
        " changes in the browser (“arrived”), then one `requestAnimationFrame` (“repainted”). Moves are"
        " sequential (the next one is set after the previous one is painted). Server CPU is the serving"
        " process's user + system time over the timed moves ÷ moves. First render: a fresh tab, navigation"
        " start → the chapter's weights line on screen. The same-shape floor (bench/floor_shape_app.py) has"
        " the explorer's four heatmaps, blend scatter and steps text with the same sizes, rewritten on every"
        " move, and nothing else.",
        "",
    ]
    if r.get("notes"):
        lines += ["## Notes", "", *r["notes"], ""]
    path.write_text("\n".join(lines))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--moves", type=int, default=60, help="timed moves per app per round")
    ap.add_argument("--apps", default="ours,shape,baseline,t64,floor,floor5")
    ap.add_argument("--long", type=int, default=0, help="moves of the explorer before a second model count")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-latency.md")
    ap.add_argument("--json", type=Path, default=Path(tempfile.gettempdir()) / "bench-latency.json")
    args = ap.parse_args(argv)
    order = args.apps.split(",")
    now = dt.datetime.now(dt.UTC)
    r: dict = {
        "date": now.date().isoformat(),
        "started": now.strftime("%H:%M"),
        "order": order,
        "moves": args.moves,
        "rounds": [],
    }
    with ExitStack() as stack, sync_playwright() as p:
        servers = {key: stack.enter_context(serve(APPS[key][0])) for key in order}
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            closed = {}  # when each app's last tab closed: its teardown must not fall in timed moves
            for key in order:  # warm every server (a first session imports more), not counted
                open_page(browser, servers[key][0], *APPS[key][2:])[0].close()
                closed[key] = time.monotonic()
            for k in range(args.rounds):
                rd = {"load": load()}
                for key in order:
                    time.sleep(max(0.0, closed[key] + SETTLE_S - time.monotonic()))
                    rd[key] = one_round(browser, key, *servers[key], args.moves)
                    closed[key] = time.monotonic()
                r["rounds"].append(rd)
                print(
                    json.dumps(
                        {
                            "round": k + 1,
                            **{
                                key: (
                                    value_of(rd[key], "painted"),
                                    rd[key]["server_cpu_ms_per_move"],
                                    rd[key]["first_render_ms"],
                                )
                                for key in order
                            },
                        }
                    ),
                    flush=True,
                )
            if args.long and "ours" in servers:
                _, slider, wait_text = APPS["ours"]
                page, _ = open_page(browser, servers["ours"][0], wait_text)
                before = page.evaluate("() => Bokeh.documents[0].all_models.size")
                for _ in range(0, args.long, 200):
                    moves(page, slider, 200)
                r["long"] = {
                    "moves": args.long,
                    "before": before,
                    "after": page.evaluate("() => Bokeh.documents[0].all_models.size"),
                }
                page.close()
        finally:
            browser.close()
    r["ended"] = dt.datetime.now(dt.UTC).strftime("%H:%M")
    r["load_end"] = load()
    args.json.write_text(json.dumps(r, indent=1))
    if args.out.name != "-":
        write_markdown(args.out, r)
    return r


if __name__ == "__main__":
    main()
