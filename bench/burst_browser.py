"""A burst of slider values in a real page: how long until the page shows the last one, against one move.

    .venv/bin/python bench/burst_browser.py [--rounds 5] [--burst 100] [--json out.json]

Serves app/main.py (`panel serve`, as bench/bench_latency.py does) and drives it from headless Chromium, in
rounds: 10 single moves (slider set → the weights source changed in the page; the median is "one move"),
then `--burst` values set in one synchronous loop: the time from the first of them until the last change
of the weights source; and both to the first animation frame after that change ("painted": the page
showing it), the ratio judged now that the page draws a move itself before any answer.
The page must end on the core's weights for exactly the last value (checked every
round). Each round is run twice on the same page and server, A then B: "latest", the page as served
(static/bokeh_seam.js sendLatest: one value in flight, the newest held until the server answers), and
"every", the same page with BokehJS's own sending put back for that run (every value a message at once,
as before). Prints JSON with /proc/loadavg; the verdict is the median of the rounds' ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

from bench.bench_latency import START_TEXT, load, moves, open_page, serve  # noqa: E402
from widgets.state import HeadState  # noqa: E402

JS_BURST = """async ({values, every}) => {
    // every: BokehJS's own _document_changed for this burst (static/bokeh_seam.js keeps it as .original)
    const proto = Bokeh.require('client/session').ClientSession.prototype;
    window.__latest = window.__latest || proto._document_changed;
    proto._document_changed = every ? window.__latest.original : window.__latest;
    const sends = Bokeh.require('client/connection').ClientConnection.prototype;
    window.__send = window.__send || sends.send;
    let sent = 0, last_sent = 0;
    sends.send = function (m) {
        if (m.msgtype() === 'PATCH-DOC') { sent += 1; last_sent = performance.now(); }
        return window.__send.call(this, m);
    };
    const doc = Bokeh.documents[0];
    const source = doc.get_model_by_name('weights-cells');
    const slider = doc.get_model_by_name('x-3-0');
    let last = 0, changes = 0, painted = 0;
    source.change.connect(() => {
        last = performance.now();
        changes += 1;
        requestAnimationFrame(() => { painted = performance.now(); });
    });
    const t0 = performance.now();
    for (const v of values) slider.value = v;
    // wait until the last value sent has been answered and nothing has changed for 1 s (or 15 s in all)
    const settled = () => performance.now() - Math.max(last, t0) >= 1000 && last >= last_sent;
    while (!settled() && performance.now() - t0 < 15000) await new Promise(r => setTimeout(r, 20));
    proto._document_changed = window.__latest;
    sends.send = window.__send;
    const v = Array.from(source.data.value);
    const n = Math.round(Math.sqrt(v.length));
    return {shown_ms: last - t0, painted_ms: painted - t0, changes, sent, row: v.slice(3 * n, 4 * n)};
}"""


def expected_row(x: float) -> np.ndarray:
    s = HeadState()
    s.set_x(3, 0, x)
    return np.asarray(s.head.weights[3], dtype=float)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--burst", type=int, default=100)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    slider = {"name": "x-3-0", "title": None}
    out = {"load_start": load(), "rounds": []}
    with serve("app/main.py") as (url, _proc), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page, _ = open_page(browser, url, START_TEXT)
            moves(page, slider, 5)
            for k in range(args.rounds):
                for client in ("latest", "every"):
                    single = moves(page, slider, 10)
                    one = statistics.median(single["arrived"])
                    one_painted = statistics.median(single["painted"])
                    values = [
                        round(-1.0 + (1.9 / args.burst) * i + 0.01 * (k % 2), 3) for i in range(args.burst)
                    ]
                    r = page.evaluate(JS_BURST, {"values": values, "every": client == "every"})
                    row = np.nan_to_num(np.array(r["row"], dtype=float))
                    out["rounds"].append(
                        {
                            "round": k + 1,
                            "client": client,
                            "load": load(),
                            "one_move_ms": one,
                            "burst_shown_ms": r["shown_ms"],
                            "messages_sent": r["sent"],
                            "updates": r["changes"],
                            "ratio": r["shown_ms"] / one,
                            # to the first frame after the last change, as the page shows it: the page now
                            # draws a move itself in the same task (static/explorer_page.js follow), so
                            # "arrived" no longer waits for the server while the burst's 100 slider
                            # updates (~0.15 ms each in the widget) still take their time
                            "one_move_painted_ms": one_painted,
                            "burst_painted_ms": r["painted_ms"],
                            "ratio_painted": r["painted_ms"] / one_painted,
                            "last_value_shown": bool(np.allclose(row, expected_row(values[-1]), atol=1e-9)),
                        }
                    )
                    print(json.dumps(out["rounds"][-1]), flush=True)
            page.close()
        finally:
            browser.close()
    for client in ("latest", "every"):
        for ratio in ("ratio", "ratio_painted"):
            out[f"median_{ratio}_{client}"] = statistics.median(
                r[ratio] for r in out["rounds"] if r["client"] == client
            )
    out["load_end"] = load()
    print(json.dumps({k: v for k, v in out.items() if k != "rounds"}))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
