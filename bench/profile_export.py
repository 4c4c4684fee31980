"""Where the export's time goes: Chromium's sampling profiler over the start-up and over shape changes.

    .venv/bin/python bench/profile_export.py

Prints the page's marks (static/explorer_page.js: `head-embed-start`, `-json` (document deserialised),
`-views` (the first roots' views made), `head-bind-*`, `head-add-<root>` / `head-added-<root>` for each
root added later, `head-embed-complete`), then the functions with the most self time (BokehJS's are named
by its minified bundle's function names where it keeps them) and the time split by script: BokehJS, the
page's own scripts, the browser. Each shape change is profiled alone, to the frame after the weights
changed.
"""

from __future__ import annotations

import collections
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from app.export import export  # noqa: E402
from bench.bench_export import TIMED_SETS_JS, TTI_PROBE  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402


def self_times(profile: dict) -> collections.Counter:
    nodes = {n["id"]: n for n in profile["nodes"]}
    dt = collections.Counter()
    for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
        frame = nodes[sample]["callFrame"]
        dt[(frame["functionName"] or "(anonymous)", frame["url"].rsplit("/", 1)[-1][:30])] += delta / 1000
    return dt


def report(title: str, dt: collections.Counter, top: int = 14) -> None:
    total = sum(dt.values())
    print(f"\n## {title}: {total:.0f} ms sampled")
    by_kind = collections.Counter()
    for (name, _url), ms in dt.items():
        kind = "idle" if name == "(idle)" else "browser (GC, layout, style, paint)" if name in (
            "(program)", "(garbage collector)") else "scripts"
        by_kind[kind] += ms
    for kind, ms in by_kind.most_common():
        print(f"- {kind}: {ms:.0f} ms")
    for (name, url), ms in dt.most_common(top):
        print(f"  {ms:7.1f} ms  {name}  {url}")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = export(Path(tmp) / "head.html")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1500})
            cdp = page.context.new_cdp_session(page)
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 200})
            page.add_init_script(TTI_PROBE)
            cdp.send("Profiler.start")
            page.goto(path.as_uri())
            page.wait_for_function("() => window.__tti !== undefined", timeout=60000)
            start = cdp.send("Profiler.stop")["profile"]
            marks = page.evaluate(
                "() => ({tti: window.__tti, dcl: performance.getEntriesByType('navigation')[0]"
                ".domContentLoadedEventEnd, marks: performance.getEntriesByType('mark')"
                ".map(m => [m.name, m.startTime])})"
            )
            print(f"time to interactive {marks['tti']:.0f} ms; DOMContentLoaded {marks['dcl']:.0f} ms; "
                  + ", ".join(f"{n} {t:.0f} ms" for n, t in marks["marks"]))
            report("start-up", self_times(start))
            # Each switch profiled alone, from the set to the first frame after the weights changed (the
            # binding makes the new sliders after that frame: they are left out, then waited for).
            page.wait_for_function("() => HeadExplorerPage.pages[0].complete", timeout=60000)
            repaint, times = collections.Counter(), []
            for name in ["tired", "chapter"] * 3:
                cdp.send("Profiler.start")
                times.append(page.evaluate(TIMED_SETS_JS, ["preset", "value", "weights-cells", [name]])[0])
                repaint += self_times(cdp.send("Profiler.stop")["profile"])
                page.wait_for_timeout(400)
            print("\nshape changes, to the figures' repaint (ms):", ", ".join(f"{t:.0f}" for t in times))
            report("six shape changes, to the figures' repaint", repaint)
            browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
