"""How soon the teacher's class view counts a student who arrives or leaves (issue 25: within 1 s).

    flock /tmp/bench.lock .venv/bin/python bench/class_count.py --out bench/class-count-DATE.json

The launcher's cluster (nginx, two processes, Redis), the teacher's page in Chromium, and students who
arrive one at a time (bench/rejoiner.py, the Bokeh protocol, spread over both processes by nginx) and then
leave one at a time. For each: seconds from the student's page being ready (its document_ready sent) or
its websocket closed, until the teacher's page shows the new count (read in the page every 20 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import load_average  # noqa: E402
from bench.fault import pct  # noqa: E402
from bench.rejoiner import Student  # noqa: E402

KEY = "bench-count-teacher-key-0123456789"


def watch_counts(url: str, seen: list, ready: threading.Event, stop: threading.Event) -> None:
    """The teacher's page; every change of its student count, with when (time.time())."""
    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM, CHROMIUM_FLAGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page()
        page.goto(f"{url}/teacher?key={KEY}")
        page.wait_for_selector("text=students connected", timeout=120000)
        page.evaluate("""() => {
            window.countsSeen = [];
            const m = Bokeh.documents[0].get_model_by_name('class-counts');
            const note = () => window.countsSeen.push([Date.now() / 1000, m.text.replace(/<[^>]+>/g, '')]);
            m.connect(m.properties.text.change, note);
            note();
        }""")
        ready.set()
        while not stop.is_set():
            time.sleep(0.2)
        seen.extend(page.evaluate("() => window.countsSeen"))
        browser.close()


def first_showing(seen: list, n: int, after: float) -> float | None:
    for at, text in seen:
        if at >= after and text.startswith(f"{n} student"):
            return at
    return None


async def run(url: str, n: int, gap: float, seen: list, stop: threading.Event) -> dict:
    from widgets.state import HeadState

    students, arrived, left = [], [], []
    for k in range(n):
        s = Student(url, HeadState(), name=f"s{k}")
        await s.join()
        arrived.append((k + 1, time.time()))
        students.append(s)
        await asyncio.sleep(gap)
    for k, s in enumerate(students):
        await s.close()
        left.append((n - k - 1, time.time()))
        await asyncio.sleep(gap)
    await asyncio.sleep(2)
    stop.set()
    return {"arrived": arrived, "left": left}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=12)
    p.add_argument("--gap", type=float, default=2.5, help="seconds between two arrivals (and leavings)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    from app.run_cluster import cluster

    results: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "loadavg_start": load_average()}
    with cluster(2, teacher_key=KEY, say=lambda s: None, expect=args.students) as c:
        seen: list = []
        ready, stop = threading.Event(), threading.Event()
        teacher = threading.Thread(target=watch_counts, args=(c["url"], seen, ready, stop))
        teacher.start()
        ready.wait(180)
        times = asyncio.run(run(c["url"], args.students, args.gap, seen, stop))
        teacher.join(60)
    delays = {}
    for kind in ("arrived", "left"):
        got = [first_showing(seen, count, at) for count, at in times[kind]]
        delays[kind] = [round(g - at, 3) if g else None for g, (_, at) in zip(got, times[kind], strict=True)]
    found = [d for ds in delays.values() for d in ds if d is not None]
    results.update(
        delays_s=delays,
        missed=sum(d is None for ds in delays.values() for d in ds),
        p50_s=statistics.median(found) if found else None,
        p95_s=pct(found, 95),
        max_s=max(found) if found else None,
        loadavg_end=load_average(),
    )
    print(json.dumps(results, indent=1))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
