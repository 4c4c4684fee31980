"""Do closed sessions leak?  Several classes in a row on one server, its memory after each.

    .venv/bin/python bench/memory_rounds.py [--rounds 4] [--sessions 20] [--wait 30]

Starts the classroom server (sessions discarded 6 s after they close), then per
round opens N websocket sessions (bench/load_test.py's Wire), moves each one's
slider once, closes them all and waits.  If sessions leaked, the peak would
climb by a class's worth of memory every round; if the memory kept after a
class is only held by the allocator, the next class reuses it and the peak
stays put.  Prints one line per round.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.classroom import build_argv  # noqa: E402
from app.serving import free_port, stop_process, wait_for_http  # noqa: E402
from bench.load_test import Wire  # noqa: E402


def rss_mb(proc: psutil.Process) -> float:
    return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20


async def one_class(url: str, sessions: int, proc: psutil.Process) -> float:
    """Open the sessions, move each once (so each has computed and sent), close them; peak RSS."""
    wires = [await Wire(url).open() for _ in range(sessions)]
    for k, w in enumerate(wires):
        await w.move(round(-0.5 + 0.01 * k, 2))
    peak = rss_mb(proc)
    for w in wires:
        await w.close()
    return peak


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--wait", type=float, default=30.0, help="seconds after each class closes")
    args = ap.parse_args(argv)
    port = free_port()
    cmd = build_argv(port, "127.0.0.1", [f"127.0.0.1:{port}"], 1, session_lifetime_min=0.1, admin=False)
    server = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/main"
    rows = []
    try:
        wait_for_http(url)
        proc = psutil.Process(server.pid)
        print(f"idle: {rss_mb(proc):.1f} MB", flush=True)
        for k in range(args.rounds):
            peak = asyncio.run(one_class(url, args.sessions, proc))
            time.sleep(args.wait)
            rows.append({"round": k + 1, "peak_mb": peak, "after_mb": rss_mb(proc)})
            print(
                f"class {k + 1}: {args.sessions} sessions open {peak:.1f} MB,"
                f" {args.wait:.0f} s after they closed {rows[-1]['after_mb']:.1f} MB",
                flush=True,
            )
    finally:
        stop_process(server)
    return rows


if __name__ == "__main__":
    main()
