"""Where a session's memory goes, by kind of Bokeh model: the explorer's page against the same-shape floor.

    .venv/bin/python bench/session_memory.py [--sessions 5] [--rounds 3]

Builds whole session documents in this process, as the server does (the explorer: HeadExplorer and the
served template, app/served_page.py; the floor: bench/floor_shape_app.py's page), interleaved in rounds,
and measures with tracemalloc: the Python memory one session holds, then, per kind of Bokeh model, how many
the document has and what they hold (each model's own properties, measured by rebuilding it from its
non-default properties; the models it refers to are counted under their own kind). Whatever is not in
Bokeh models (Panel's panes and template, param objects, HeadState, callbacks) is the difference. Then,
for the explorer, what each library allocated for a session (tracemalloc, by the innermost frame in a
library or in this project) and, of Bokeh's share, which of the project's files (or Panel's) made it.
Prints JSON with /proc/loadavg.
"""

from __future__ import annotations

import argparse
import gc
import json
import runpy
import statistics
import sys
import time
import tracemalloc
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def explorer_doc():
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from app.pool import page_for_session
    from app.served_page import page_for

    doc = Document()
    with set_curdoc(doc), doc.models.freeze():
        explorer = page_for_session({}).explorer  # as a session makes it (no pool: its editor built on open)
        page_for(explorer).server_doc(doc, title="One attention head")
    return doc


def floor_doc():
    from bokeh.document import Document
    from bokeh.io.doc import set_curdoc

    doc = Document()
    set_curdoc(doc)
    runpy.run_path(str(ROOT / "bench" / "floor_shape_app.py"))
    return doc


def held_per_session(make, n: int) -> float:
    """Bytes of Python memory still held per session after building n of them (all kept alive)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    docs = [make() for _ in range(n)]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del docs
    return held / n


def own_size(model, seen: set) -> int:
    """Bytes of a model and of the values it holds, not counting other models (nor anything seen before)."""
    from bokeh.model import Model

    total = 0
    todo = [model]
    while todo:
        x = todo.pop()
        if id(x) in seen or (isinstance(x, Model) and x is not model):
            continue
        seen.add(id(x))
        total += sys.getsizeof(x)
        if isinstance(x, dict):
            todo.extend(x.keys())
            todo.extend(x.values())
        elif isinstance(x, (list, tuple, set, frozenset)):
            todo.extend(x)
        elif hasattr(x, "__dict__"):
            todo.append(vars(x))
        if hasattr(x, "__slots__"):
            todo.extend(getattr(x, a) for a in x.__slots__ if isinstance(a, str) and hasattr(x, a))
    return total


def by_kind(doc) -> dict:
    """{kind: [count, bytes]} for every Bokeh model of `doc`: each model's own object graph, stopping at
    other models (they count under their own kind) and at objects shared with a model counted before."""
    kinds: dict = defaultdict(lambda: [0, 0])
    seen: set = set()
    for m in doc.models:
        kinds[type(m).__name__][0] += 1
        kinds[type(m).__name__][1] += own_size(m, seen)
    return dict(sorted(kinds.items(), key=lambda kv: -kv[1][1]))


def library(filename: str) -> str:
    if "site-packages/" in filename:
        return filename.split("site-packages/")[1].split("/")[0]
    if str(ROOT) in filename:
        return "project"
    return "other"


def by_library(make, n: int = 3) -> dict:
    """KB a session allocates, by library; and Bokeh's part by the first file outside Bokeh that asked."""
    gc.collect()
    tracemalloc.start(25)
    before = tracemalloc.take_snapshot()
    docs = [make() for _ in range(n)]
    gc.collect()
    stats = tracemalloc.take_snapshot().compare_to(before, "traceback")
    tracemalloc.stop()
    del docs
    libs: Counter = Counter()
    bokeh_by_caller: Counter = Counter()
    for st in stats:
        files = [f.filename for f in reversed(st.traceback)]  # innermost first
        ours = [f for f in files if library(f) != "other"]
        lib = library(ours[0]) if ours else "other"
        libs[lib] += st.size_diff
        if lib == "bokeh":
            outer = [f for f in ours if library(f) != "bokeh"]
            caller = f"{library(outer[0])}:{Path(outer[0]).name}" if outer else "bokeh"
            bokeh_by_caller[caller] += st.size_diff
    kb = lambda c: {k: round(v / n / 1024) for k, v in c.most_common(10)}  # noqa: E731
    return {"by_library_kb": kb(libs), "bokeh_by_caller_kb": kb(bokeh_by_caller)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    import panel as pn

    from app.serving import skip_document_validation

    skip_document_validation()
    pn.extension()
    explorer_doc(), floor_doc()  # imports and caches, not counted
    report: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rounds": []}
    for _ in range(args.rounds):
        rd = {"load": loadavg()}
        for name, make in (("explorer", explorer_doc), ("floor", floor_doc)):
            rd[name] = held_per_session(make, args.sessions)
        rd["ratio"] = rd["explorer"] / rd["floor"]
        report["rounds"].append(rd)
    report["median_kb"] = {
        k: statistics.median(r[k] for r in report["rounds"]) / 1024 for k in ("explorer", "floor")
    }
    report["median_ratio"] = statistics.median(r["ratio"] for r in report["rounds"])
    for name, make in (("explorer", explorer_doc), ("floor", floor_doc)):
        doc = make()
        kinds = by_kind(doc)
        report[f"{name}_models"] = len(doc.models)
        report[f"{name}_bokeh_models_kb"] = sum(b for _, b in kinds.values()) / 1024
        report[f"{name}_by_kind"] = {k: [c, round(b / 1024, 1)] for k, (c, b) in kinds.items()}
        report[f"{name}_kinds_count"] = dict(Counter(type(m).__name__ for m in doc.models).most_common(8))
    report["explorer_allocated"] = by_library(explorer_doc)
    report["load_end"] = loadavg()
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
