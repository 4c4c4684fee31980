"""Does the layout that fits its width cost a move anything? The export before and after, measured together.

    .venv/bin/python bench/bench_layout.py [--base COMMIT] [--moves 100] [--rounds 3]

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

from bench.bench_export import TTI_PROBE  # noqa: E402
from bench.bench_lab import MOVES_JS  # noqa: E402
from bench.common import load_average, write_results  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

BASE = "7f1ed6d"  # the last commit before the layout that fits its width


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-layout.md")
    args = parser.parse_args(argv)
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
        "# The layout that fits its width: slider → repaint, before and after",
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
    return write_results(args.out, lines)


if __name__ == "__main__":
    raise SystemExit(main())
