"""A walk step and a reveal against a slider move on the same page, interleaved: the export, the served page.

    flock /tmp/bench.lock .venv/bin/python bench/bench_lessons.py [--rounds 3] [--cycles 30]
        [--out bench/RESULTS-lessons.md]

Issue 24's target: a walk step or a reveal repainted ≤ 1.2× a slider move's repaint on the same page. Each
round opens a fresh tab of each page (the export from file://, the served page from `panel serve
app/main.py`, in turn) and runs `--cycles` cycles of three actions, so the three are interleaved on one page
and one machine load:

* a slider move: JavaScript sets the token slider x-3-0's Bokeh model value;
* a walk step: the "Next step" button's view is clicked (its `click()`, as a click or Enter does), walking
  back and forth over steps 2 to 6;
* a reveal: "Reveal without predicting" is clicked on the open question exercise-1 (whose answer changes
  the head).

Each is timed alike: it begins in a frame's requestAnimationFrame callback (after a frame that ran on
time), and the clock stops at the first requestAnimationFrame by which it is drawn (the weights-cells source
has changed; the walk's text shows the new step). Both pages draw all three in the task of the action (the
served page's own drawing, static/explorer_page.js follow), so that is the next frame, ~16.7 ms on the
headless frame clock, or a later one if the action's work and paint overrun the frame.
  Untimed: the question is closed and asked again after each reveal.

Between two timed actions the page waits for the served page's server to have applied every press
(the channel's `presses`) and for two frames, so no action's tail lands in the next one's time. Each round's
median per action, the ratios to the slider move's, the median ratio over rounds and /proc/loadavg go to
`--out`; raw times to `--json`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from bench_latency import serve  # noqa: E402
from common import block_all_but, load_average, write_results  # noqa: E402
from conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

from app.export import export  # noqa: E402

TARGET = 1.2
QUESTION = "exercise-1"

# One cycle: a slider move, a walk step, a reveal (then the question asked again, untimed).
JS_CYCLE = """async ({value, step}) => {
    const doc = Bokeh.documents[0];
    const frame = () => new Promise((r) => requestAnimationFrame(() => r(performance.now())));
    const model = (name) => doc.get_model_by_name(name);
    const click = (name) => Bokeh.index.find_one(model(name)).button_el.click();
    const channel = model('head-channel');
    const settled = async () => {  // the server has every press (served page), then two quiet frames
        const page = HeadExplorerPage.pages[0];
        for (let k = 0; channel && page.served && k < 500 && !pendingDone(page); k++) {
            await new Promise((r) => setTimeout(r, 10));
        }
        await frame(); await frame();
    };
    const pendingDone = (page) => page.state && channel.presses >= window.__presses;
    const changed = (source) => new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no change of ' + source.name)), 15000);
        const slot = () => { source.change.disconnect(slot); clearTimeout(timer); resolve(); };
        source.change.connect(slot);
    });
    const weights = model('weights-cells');
    // t0, the action, then the first frame once the action is drawn (`drawn()` says whether it is)
    const timed = async (act, drawn, what) => {
        // begin at a frame: quiet ones first (the action before may have run its frame long)
        let before = await frame();
        for (let k = 0; k < 30; k++) {
            const now = await frame();
            const quiet = now - before < 20;
            before = now;
            if (quiet) break;
        }
        const t0 = performance.now();
        act();
        let t = await frame();
        for (let k = 0; !drawn() && k < 900; k++) t = await frame();
        if (!drawn()) throw new Error(what + ' was not drawn');
        return t - t0;
    };
    const out = {};
    // a slider move
    let seen = false;
    const saw = () => { seen = true; };
    weights.change.connect(saw);
    out.slider = await timed(() => { model('x-3-0').value = value; }, () => seen, 'the slider move');
    weights.change.disconnect(saw);
    await settled();
    // a walk step (Next or Previous, to `step`)
    const walkText = () => model('lesson-walk').text;
    const want = `Step ${step} of 6`;
    const name = walkText().indexOf(`Step ${step - 1} of 6`) >= 0 ? 'walk-next' : 'walk-prev';
    window.__presses = (window.__presses || 0) + 1;
    out.walk = await timed(() => click(name), () => walkText().indexOf(want) >= 0, 'the walk step');
    await settled();
    // a reveal
    seen = false;
    weights.change.connect(saw);
    window.__presses += 1;
    out.reveal = await timed(() => click('reveal'), () => seen, 'the reveal');
    weights.change.disconnect(saw);
    await settled();
    // the question closed and asked again, untimed
    window.__presses += 1;
    click('close-question');
    await settled();
    const asked = changed(weights);
    model('ask').value = QUESTION;
    await asked;
    await settled();
    return out;
}""".replace("QUESTION", json.dumps(QUESTION))


def open_page(browser, url: str):
    """A fresh tab, offline but for the page's own server (the export asks for nothing)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    served = url.split("?")[0].rsplit("/", 1)[0] if url.startswith("http") else "file:"
    page = context.new_page()
    page.blocked = block_all_but(context, ("file:", "data:", "blob:", served))
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_function(
        "() => window.HeadExplorerPage && HeadExplorerPage.pages.length === 1 && Bokeh.documents[0]"
        ".get_model_by_name('lesson-walk') && Bokeh.index.find_one(Bokeh.documents[0]"
        ".get_model_by_name('reveal'))",
        timeout=60000,
    )
    # the served page's own drawing set up (the export's binding is, once its `reveal` has a view)
    page.wait_for_function(
        "() => { const c = Bokeh.documents[0].get_model_by_name('head-channel');"
        " return !c || c.drawn_by === 'page'; }",
        timeout=60000,
    )
    page.evaluate(
        "() => { const c = Bokeh.documents[0].get_model_by_name('head-channel');"
        " window.__presses = c ? c.presses : 0; }"
    )
    page.errors = errors
    return page


def one_round(browser, kind: str, url: str, cycles: int) -> dict:
    page = open_page(browser, url)
    times: dict[str, list[float]] = {"slider": [], "walk": [], "reveal": []}
    steps = [2, 3, 4, 5, 6, 5, 4, 3]
    for k in range(cycles + 3):  # 3 warm-up cycles
        value = round(0.2 + 0.05 * (k % 2 + 1), 2)
        got = page.evaluate(JS_CYCLE, {"value": value, "step": steps[k % len(steps)]})
        if k >= 3:
            for name in times:
                times[name].append(got[name])
    errors = list(page.errors) + [f"blocked {u}" for u in page.blocked]
    page.context.close()
    return {"kind": kind, "times": times, "errors": errors}


def med(xs) -> float:
    return statistics.median(xs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cycles", type=int, default=30)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-lessons.md")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    loads = [load_average()]
    rounds = []
    with ExitStack() as stack, sync_playwright() as p:
        file_url = export(Path(tempfile.mkdtemp()) / "head.html").as_uri()
        served_url, _ = stack.enter_context(serve("app/main.py"))
        pages = {
            "export": f"{file_url}#walk=1&exercise={QUESTION}",
            "served": f"{served_url}?walk=1&exercise={QUESTION}",
        }
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        for r in range(args.rounds):
            for kind, url in pages.items():  # A B A B …
                measured = one_round(browser, kind, url, args.cycles)
                rounds.append({"round": r, **measured, "load": load_average()})
                print(kind, r, {k: round(med(v), 1) for k, v in rounds[-1]["times"].items()}, flush=True)
        browser.close()
    loads.append(load_average())
    lines = [
        "# A walk step and a reveal against a slider move, on the same page",
        "",
        f"Run {dt.date.today().isoformat()} by `flock /tmp/bench.lock .venv/bin/python "
        f"bench/bench_lessons.py --rounds {args.rounds} --cycles {args.cycles}` (its docstring says how each "
        "action is timed).",
        f"Load average at the start: {' '.join(loads[0])}; at the end: {' '.join(loads[-1])}.",
        "",
        f"Target (issue 24): a walk step or a reveal repainted ≤ {TARGET}× a slider move's repaint on the "
        "same page. Medians of each round's actions (ms, from the action to the first frame after it is "
        "drawn), the actions interleaved on one page (a slider move, a walk step, a reveal, …).",
        "",
        "| page | round | load | slider move | walk step | reveal | walk / slider | reveal / slider |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    verdict = []
    for kind in ("export", "served"):
        mine = [r for r in rounds if r["kind"] == kind]
        for r in mine:
            s, w, v = (med(r["times"][k]) for k in ("slider", "walk", "reveal"))
            lines.append(
                f"| {kind} | {r['round'] + 1} | {r['load'][0]} | {s:.1f} | {w:.1f} | {v:.1f} | "
                f"{w / s:.2f}× | {v / s:.2f}× |"
            )
        walk = med([med(r["times"]["walk"]) / med(r["times"]["slider"]) for r in mine])
        reveal = med([med(r["times"]["reveal"]) / med(r["times"]["slider"]) for r in mine])
        verdict.append((kind, walk, reveal))
    lines += [
        "",
        "| page | walk step / slider move (median ratio) | reveal / slider move (median ratio) | met? |",
        "| --- | --- | --- | --- |",
    ]
    for kind, walk, reveal in verdict:
        ok = "yes" if walk <= TARGET and reveal <= TARGET else "no"
        lines.append(f"| {kind} | {walk:.2f}× | {reveal:.2f}× | {ok} |")
    errors = [e for r in rounds for e in r["errors"]]
    lines += ["", f"Console errors: {len(errors)}." + (f" First: {errors[0]}" if errors else "")]
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds, "loads": loads}, indent=1))
    return write_results(args.out, lines)


if __name__ == "__main__":
    raise SystemExit(main())
