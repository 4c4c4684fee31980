"""How long the memory release after a class (app/serving.py `_return_freed_memory`) holds the server's
loop, against the number of sessions still open: its full collection walks every one of them.

    .venv/bin/python bench/release_stall.py [--open 20 60] [--repeats 3]

Builds N whole session documents in this process, as the server does (bench/session_memory.py
explorer_doc), freezes them as the server does, then times the release itself (`_return_freed_memory`:
unfreeze, collect, malloc_trim, freeze) a few times over. Prints JSON with /proc/loadavg.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.serving import _return_freed_memory, freeze_long_lived  # noqa: E402
from bench.session_memory import explorer_doc, loadavg  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--open", type=int, nargs="+", default=[20, 60])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    out = {"load_start": loadavg(), "runs": []}
    docs: list = []
    for n in sorted(args.open):
        docs += [explorer_doc() for _ in range(n - len(docs))]
        gc.collect()
        freeze_long_lived()  # as the server does after each new page
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            _return_freed_memory()
            times.append(1000 * (time.perf_counter() - t0))
        out["runs"].append(
            {
                "sessions_open": n,
                "release_ms": [round(t, 1) for t in times],
                "median_ms": round(statistics.median(times), 1),
            }
        )
        print(json.dumps(out["runs"][-1]), flush=True)
    gc.unfreeze()
    out["load_end"] = loadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
