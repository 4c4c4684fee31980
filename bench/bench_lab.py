"""The training lab's repaint against the main head's, in the same page and the same run, interleaved.

For the static export and for the served page: rounds of A (the main head: a token slider moves, until the
weights heatmap's source changed and a frame was drawn; served, that is a round trip to the server),
B (the lab: the snapshot slider moves, until the next frame after static/lab.js redrew it), C (the lab:
another run is picked, same end point). Both pages' labs are static/lab.js; served, it is in a shadow root.
The medians' ratios B/A and C/A are the result (target ≤ 1.25). Writes bench/RESULTS-lab.md's table rows
to stdout.

With `--baseline DIR` (another checkout, e.g. `git archive be66a92 | tar -x -C DIR`), that checkout's export
and served page are measured too, in the same browser, the four pages' rounds interleaved: a change to the
lab is judged against what it replaced, at the same moment's load.

    python bench/bench_lab.py [--rounds 3] [--moves 20] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.conftest import CHROMIUM, CHROMIUM_FLAGS, ROOT, serve  # noqa: E402

# The main head: its token slider moves; the clock stops at the first frame after its weights changed.
MOVES_JS = """
async (n) => {
  let doc = null;
  for (const d of Bokeh.documents) if (d.get_model_by_name('x-3-0')) doc = d;
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

# A laptop's window. Each kind of move is timed with what it changes on screen, as a student sees it: the
# page scrolled to the top for the head's moves, to the lab for the lab's (a lab below the fold would be
# laid out but not painted: cheaper than what a student switching runs gets).
VIEWPORT = {"width": 1400, "height": 1000}
TO_TOP = "() => { window.scrollTo(0, 0); }"

# The lab's moves, the same in both pages (static/lab.js draws it in both): the clock stops at the first
# frame after the control's event, by which static/lab.js has redrawn every figure (it draws synchronously).
# Served, the lab is inside a Panel JSComponent's shadow root.
LAB_JS = """
async ([n, kind]) => {
  const find = (root) => {
    const hit = root.querySelector('section.training-lab');
    if (hit) return hit;
    for (const e of root.querySelectorAll('*')) {
      const h = e.shadowRoot && find(e.shadowRoot);
      if (h) return h;
    }
    return null;
  };
  const box = find(document);
  box.scrollIntoView({ block: 'start' });
  const slider = box.querySelector('input.lab-snapshot'), select = box.querySelector('select.lab-run');
  const frame = () => new Promise(r => requestAnimationFrame(() => r()));
  const times = [];
  await frame();
  await frame(); // the scrolled-to lab drawn before the clock starts
  for (let k = 0; k < n; k++) {
    const t0 = performance.now();
    if (kind === 'snapshot') {
      slider.value = String((Number(slider.value) + 7) % (Number(slider.max) + 1));
      slider.dispatchEvent(new Event('input'));
    } else {
      select.selectedIndex = (select.selectedIndex + 1) % select.options.length; // every run in the picker
      select.dispatchEvent(new Event('change'));
    }
    await frame();
    times.push(performance.now() - t0);
  }
  return times;
}
"""


def open_served_lab(browser, base: str):
    """A page of the served app at BASE with its Training lab tab open and drawn; also how long the lab took
    from the tab's click to its weights table (ms: the runs' data arriving, static/lab.js's first draw)."""
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{base}/main")
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=60000)
    page.wait_for_timeout(1000)
    t0 = page.evaluate("() => performance.now()")
    page.locator(".bk-tab", has_text="Training lab").click()
    page.locator('section.training-lab table[data-name="weights"]').wait_for(timeout=60000)
    opened = page.evaluate("() => performance.now()") - t0
    page.wait_for_timeout(1000)
    return page, opened


def rounds(page, n_rounds: int, moves: int, out: dict | None = None) -> dict:
    out = out if out is not None else {"main head": [], "lab snapshot": [], "lab run": []}
    for _ in range(n_rounds):
        page.evaluate(TO_TOP)
        out["main head"] += page.evaluate(MOVES_JS, moves)
        out["lab snapshot"] += page.evaluate(LAB_JS, [moves, "snapshot"])
        out["lab run"] += page.evaluate(LAB_JS, [moves, "run"])
    return out


def export_of(root: Path, out: Path) -> Path:
    """The static export as the checkout at ROOT makes it (run there, so its own code is what exports)."""
    code = (f"import sys; sys.path.insert(0, {str(root)!r}); "
            f"from app.export import export; export({str(out)!r})")
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, capture_output=True)
    return out


def report(where: str, times: dict) -> list[str]:
    base = statistics.median(times["main head"])
    lines = []
    for name, t in times.items():
        m = statistics.median(t)
        lines.append(f"| {where} | {name} | {len(t)} | {m:.1f} | {m / base:.2f} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--moves", type=int, default=20)
    parser.add_argument("--baseline", type=Path, help="another checkout to measure beside this one")
    args = parser.parse_args(argv)
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    lines = ["| page | what moves | moves | median ms | ÷ main head |", "| --- | --- | --- | --- | --- |"]
    roots = {"": ROOT}
    if args.baseline:
        roots = {"": ROOT, f" ({args.baseline.name})": args.baseline.resolve()}
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        pages, opened = {}, {}
        for tag, root in roots.items():
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(export_of(root, Path(tmp) / f"explorer{len(pages)}.html").as_uri())
            page.wait_for_selector("#training-lab table[data-name=weights]")
            pages["export" + tag] = page
            base = stack.enter_context(serve(str(root / "app" / "main.py")))
            pages["served" + tag], opened["served" + tag] = open_served_lab(browser, base)
        times = {where: None for where in pages}
        for _ in range(args.rounds):  # every page's round before any page's next
            for where, page in pages.items():
                # the page measured is the one in front: in one headless browser a page behind another got
                # its frames later (the first page opened measured ~2× slower, whichever checkout it was)
                page.bring_to_front()
                times[where] = rounds(page, 1, args.moves, times[where])
        for where in sorted(pages):
            lines += report(where, times[where])
        browser.close()
    print("\n".join(lines))
    for where, ms in opened.items():
        print(f"{where}: the lab's tab opened (click to its first table) in {ms:.0f} ms")
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
