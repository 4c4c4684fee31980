"""Where a slider move's time goes in the browser: Chromium's sampling profiler over timed moves.

    .venv/bin/python bench/profile_moves.py [export|ours|t64] [--moves 40] [--top 25]

`export` drives the static export (1400 × 1500, all figures in sight) by its x-3-0 slider; `ours` and
`t64` serve app/main.py or bench/app_t64.py with `panel serve` and drive x-3-0 or x-63-0. Prints the median
move (to the first frame after the weights changed), the self time by function (BokehJS's by its bundle's
names) and by kind (scripts, the browser's own style/layout/paint, idle).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from bench.bench_export import TIMED_SETS_JS, TTI_PROBE, slider_values  # noqa: E402
from bench.bench_latency import APPS, open_page, serve, values_for  # noqa: E402
from bench.profile_export import report, self_times  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402


def inclusive_times(profile: dict) -> dict:
    """Per function: the time of the samples with it anywhere on the stack (each sample counted once)."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", [])}
    out: dict = {}
    for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
        seen, node = set(), sample
        while node is not None:
            f = nodes[node]["callFrame"]
            seen.add(f["functionName"] or "(anonymous)")
            node = parent.get(node)
        for name in seen:
            out[name] = out.get(name, 0.0) + delta / 1000
    return out


def profile(page, run) -> tuple[list[float], dict]:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 200})
    cdp.send("Profiler.start")
    times = run()
    return times, cdp.send("Profiler.stop")["profile"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("target", choices=["export", "ours", "t64"], default="export", nargs="?")
    ap.add_argument("--moves", type=int, default=40)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        if args.target == "export":
            from app.export import export

            path = export(Path(tmp) / "head.html")
            page = browser.new_page(viewport={"width": 1400, "height": 1500})
            page.add_init_script(TTI_PROBE)
            page.goto(path.as_uri())
            page.wait_for_function("() => window.__tti !== undefined", timeout=60000)
            page.evaluate(TIMED_SETS_JS, ["x-3-0", "value", "weights-cells", slider_values(5)])
            times, prof = profile(page, lambda: page.evaluate(
                TIMED_SETS_JS, ["x-3-0", "value", "weights-cells", slider_values(args.moves)]))
        else:
            script, slider, wait_text = APPS[args.target]
            with serve(script) as (url, _proc):
                page, _ = open_page(browser, url, wait_text)
                name = slider["name"]
                page.evaluate(TIMED_SETS_JS, [name, "value", "weights-cells", values_for(5, 0.5)])
                times, prof = profile(page, lambda: page.evaluate(
                    TIMED_SETS_JS, [name, "value", "weights-cells", values_for(args.moves, 0.5)]))
        browser.close()
    print(f"{args.target}: {len(times)} moves, median {statistics.median(times):.1f} ms")
    report(f"{args.moves} moves", self_times(prof), top=args.top)
    print("\n## inclusive, per move")
    for name, ms in sorted(inclusive_times(prof).items(), key=lambda kv: -kv[1])[: args.top * 2]:
        print(f"  {ms / len(times):6.2f} ms  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
