"""Does the layout that fits its width cost a move anything? The export before and after, measured together.

    .venv/bin/python bench/bench_layout.py [--base COMMIT] [--moves 100] [--rounds 3]
    .venv/bin/python bench/bench_layout.py --fit [--fit-base COMMIT]

`--fit` measures instead how the two further explorers ("Why ÷√d", "Long-context cost") fit 390, 760 and
1400 px, served and exported, at FIT_BASE and at the working tree: how far the page scrolls sideways,
how far their parts run past the window (what a reader must scroll inside a panel to see), and how many
figure titles are cut (tests/test_a11y_browser.py PARTS_CUT). A layout, not a clock: one pass each.

The token sliders now share a document root with the weights and the blend (one wrapping row, so they stay
beside each other at every width), and the figures may wrap and shrink. A slider move rewrites the slider's
own title and the figures' sources; if that re-laid out the whole shared root, a move would cost more.

Builds the export at COMMIT (default: the commit this layout started from, read with `git archive`) and
at the working tree, and measures slider → weights repainted (bench/bench_export.py's probe: set
`x-3-0`, stop the clock at the first animation frame after the weights source changed) in headless
Chromium: before and after at 1400 px, then before and after at 390 px (a phone; before, the page ran
past its right edge there), interleaved in rounds (A B C D A B C D ...). Reports each page's median over
all its moves and its ratios to "before" at the same width; writes bench/RESULTS-layout.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from app.serving import free_port, stop_process, wait_for_http  # noqa: E402
from bench.bench_export import TTI_PROBE  # noqa: E402
from bench.bench_lab import MOVES_JS  # noqa: E402
from bench.common import load_average, write_results  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402
from tests.test_a11y_browser import FURTHER_PARTS, PAGE_WIDER_THAN_VIEW  # noqa: E402

TIMING_HEADING = "# The layout that fits its width: slider → repaint, before and after"
# How far the visible parts of `names` (any Bokeh document) run past the window's right edge, and the
# figure titles wider than their figure's room.
PARTS_PAST_EDGE = """(names) => {
  const vw = document.documentElement.clientWidth, titles = [];
  const ctx = document.createElement("canvas").getContext("2d");
  let past = 0;
  for (const doc of Bokeh.documents) for (const name of names) {
    const m = doc.get_model_by_name(name);
    let view = null;
    try { view = m && Bokeh.index.get_one(m); } catch (e) { continue; }
    if (!view || !view.el.checkVisibility({visibilityProperty: true})) continue;
    const r = view.el.getBoundingClientRect();
    past = Math.max(past, Math.round(r.right - vw));
    if (!view.frame) continue;
    const own = m.title && m.title.text ? [m.title] : [];
    for (const t of [...own, ...(m.above || []).filter((a) => a.type === "Title" && a !== m.title)]) {
      ctx.font = `${t.text_font_style} ${t.text_font_size} ${t.text_font}`;
      if (ctx.measureText(t.text).width > r.width - view.frame.bbox.left) titles.push(t.text);
    }
  }
  return {past, titles};
}"""

BASE = "7f1ed6d"  # the last commit before the layout that fits its width
FIT_BASE = "4158a23"  # the last commit before the further explorers fit a phone
FIT_WIDTHS = (390, 760, 1400)
FIT_TABS = (("Why ÷√d", "seed"), ("Long-context cost", "T exactly"))


def export_at(commit: str, out: Path, tmp: Path) -> Path:
    """The export as the code at `commit` writes it."""
    src = tmp / f"src-{commit}"
    src.mkdir()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(src, filter="data")
    subprocess.run([sys.executable, "-m", "app.export", str(out)], cwd=src, check=True, capture_output=True)
    return out


def moves(browser, path: Path, width: int, n: int) -> list[float]:
    context = browser.new_context(viewport={"width": width, "height": 900})
    local = ("file:", "data:")
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(local) else r.abort())
    page = context.new_page()
    page.add_init_script(TTI_PROBE)
    page.goto(path.as_uri())
    page.wait_for_function("() => window.__tti !== undefined", timeout=30000)
    times = page.evaluate(MOVES_JS, n)
    context.close()
    return times


@contextlib.contextmanager
def served_at(src: Path):
    """`panel serve` of the app in `src` on a free loopback port; yields the page's URL."""
    port = free_port()
    args = [sys.executable, "-m", "panel", "serve", str(src / "app" / "main.py"), "--port", str(port),
            "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(args, cwd=src, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/main")
        yield f"http://127.0.0.1:{port}/main"
    finally:
        stop_process(proc)


def fit_rows(browser, url: str) -> dict:
    """(tab, width) -> (page's sideways scroll, parts past the window's edge, cut titles), in px and count."""
    page = browser.new_page(viewport={"width": FIT_WIDTHS[-1], "height": 900})
    page.goto(url)
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=60_000)
    rows = {}
    for tab, field in FIT_TABS:
        page.get_by_role("tab", name=tab).click()
        page.get_by_label(field, exact=True).wait_for(timeout=30_000)
        for width in FIT_WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(600)
            scroll = page.evaluate(PAGE_WIDER_THAN_VIEW)
            parts = page.evaluate(PARTS_PAST_EDGE, FURTHER_PARTS)
            rows[tab, width] = (scroll, parts["past"], len(parts["titles"]))
    page.close()
    return rows


def fit(args) -> int:
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / f"src-{args.fit_base}"
        before = export_at(args.fit_base, tmp / "before.html", tmp)  # unpacks the source into `src` too
        after = tmp / "after.html"
        build = [sys.executable, "-m", "app.export", str(after)]
        subprocess.run(build, cwd=ROOT, check=True, capture_output=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            results = {"export, before": fit_rows(browser, before.as_uri()),
                       "export, after": fit_rows(browser, after.as_uri())}
            with served_at(src) as url:
                results["served, before"] = fit_rows(browser, url)
            with served_at(ROOT) as url:
                results["served, after"] = fit_rows(browser, url)
            browser.close()
    load_after = load_average()
    lines = [
        "# The further explorers at a phone's, a tablet's and a desktop's width",
        "",
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, `bench/bench_layout.py --fit`; before = "
        f"{args.fit_base}. Load average before {' '.join(load_before)}, after {' '.join(load_after)}.",
        "",
        "Each cell: the page's sideways scroll / how far the explorer's parts run past the window's right"
        " edge (scrolled inside a panel, or off the page) / figure titles cut, at that width.",
        "",
        "| page | tab | " + " | ".join(f"{w} px" for w in FIT_WIDTHS) + " |",
        "| --- | --- | " + " | ".join("---" for _ in FIT_WIDTHS) + " |",
    ]
    for name, rows in results.items():
        for tab, _ in FIT_TABS:
            cells = [f"{rows[tab, w][0]} px / {rows[tab, w][1]} px / {rows[tab, w][2]}" for w in FIT_WIDTHS]
            lines.append(f"| {name} | {tab} | " + " | ".join(cells) + " |")
    lines.append("")
    old = args.out.read_text() if args.out.exists() else ""
    kept = old[old.index(TIMING_HEADING):] if TIMING_HEADING in old else ""
    return write_results(args.out, [*lines, kept])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fit", action="store_true", help="measure the further explorers' fit instead")
    parser.add_argument("--fit-base", default=FIT_BASE)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-layout.md")
    args = parser.parse_args(argv)
    if args.fit:
        return fit(args)
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        before = export_at(args.base, tmp / "before.html", tmp)
        after = tmp / "after.html"
        build = [sys.executable, "-m", "app.export", str(after)]
        subprocess.run(build, cwd=ROOT, check=True, capture_output=True)
        pages = {
            "before, 1400 px": (before, 1400),
            "after, 1400 px": (after, 1400),
            "before, 390 px": (before, 390),
            "after, 390 px": (after, 390),
        }
        times: dict[str, list[float]] = {name: [] for name in pages}
        rounds: dict[str, list[float]] = {name: [] for name in pages}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            for _ in range(args.rounds):
                for name, (path, width) in pages.items():
                    t = moves(browser, path, width, args.moves)
                    times[name] += t
                    rounds[name].append(statistics.median(t))
            browser.close()
    load_after = load_average()
    base = {w: statistics.median(times[f"before, {w} px"]) for w in (1400, 390)}
    lines = [
        TIMING_HEADING,
        "",
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, `bench/bench_layout.py --moves {args.moves} "
        f"--rounds {args.rounds}`; before = the export at {args.base}. Load average before "
        f"{' '.join(load_before)}, after {' '.join(load_after)} (2 cores, shared with other work).",
        "",
        "| page | median of all moves | per-round medians | ratio to before (same width) "
        "| median of the rounds' ratios |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in pages:
        med = statistics.median(times[name])
        per = ", ".join(f"{m:.1f}" for m in rounds[name])
        ref = "before, 390 px" if "390" in name else "before, 1400 px"
        paired = statistics.median(a / b for a, b in zip(rounds[name], rounds[ref]))
        lines.append(f"| {name} | {med:.1f} ms | {per} | {med / base[390 if '390' in name else 1400]:.2f} "
                     f"| {paired:.2f} |")
    lines += [
        "",
        "Each round opens each page once and makes the moves in it, in the order of the table (A B C D A B C",
        "D ...). A move is `x-3-0` set in the page; the clock stops at the first animation frame after the",
        "weights source changed (bench/bench_export.py's probe). The last column pairs each round's median",
        "with the same round's \"before\", which cancels some of the machine's drift from round to round.",
        "",
    ]
    old = args.out.read_text() if args.out.exists() else ""
    fit_section = old[: old.index(TIMING_HEADING)] if TIMING_HEADING in old else ""
    return write_results(args.out, [fit_section + lines[0], *lines[1:]])


if __name__ == "__main__":
    raise SystemExit(main())
