"""Where a student's arrival costs the server CPU: the served app in this process, students arriving one
after another, the server thread's own CPU time per arrival (time.thread_time, so other processes on a
busy machine do not count) and, with --profile, cProfile by that same clock.

    .venv/bin/python bench/profile_arrival.py --students 20 --rounds 3 --profile 25
    .venv/bin/python bench/profile_arrival.py --root /path/to/other/worktree ...   # the same, for other code

An arrival is what a browser does (bench/class_load.py `open_like_a_browser`): GET the page (the server
builds the session), open its websocket with the page's token, pull the document, check it holds the
chapter's weights line. The server runs app/main.py as app.classroom's --setup runs it, with the pool
(`--expect`, app/pool.py) filled before the first student; the clients run in a thread of their own.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import threading
import time
from pathlib import Path


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = Path(__file__).resolve().parents[1]
    ap.add_argument("--root", type=Path, default=here, help="the worktree whose code to serve")
    ap.add_argument("--students", type=int, default=20, help="arrivals per round, one after another")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--expect", type=int, default=-1, help="pages built ahead (default: every arrival)")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the N costliest functions")
    ap.add_argument("--callers", action="append", default=[], help="with --profile: who calls these")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    expect = args.expect if args.expect >= 0 else args.students * args.rounds
    os.environ["EXPLORER_EXPECT"] = str(expect)
    os.chdir(root)

    import panel as pn
    from panel.io.server import get_server
    from tornado.ioloop import IOLoop

    from app import classroom
    from app import pool as pool_module
    from app.pool import pool
    from app.serving import free_port

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.class_load import open_like_a_browser

    port = free_port()
    loop = IOLoop.current()
    server = get_server(
        {"main": root / "app" / "main.py"},
        port=port,
        address="127.0.0.1",
        websocket_origin=[f"127.0.0.1:{port}"],
        start=False,
        show=False,
        loop=loop,
        check_unused_sessions=10_000,
        unused_session_lifetime=60_000,
    )
    classroom.configure_server()  # what `panel serve --setup app/classroom.py` does in each process
    server.start()
    url = f"http://127.0.0.1:{port}/main"
    profiler = cProfile.Profile(time.thread_time) if args.profile else None
    report: dict = {"root": str(root), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    per_round: list[float] = []
    marks: dict = {}

    def mark(name):  # runs on the server's thread: its CPU clock
        marks[name] = time.thread_time()
        marks[f"gc_{name}"] = gc_time[0]

    # the garbage collector's share of the server thread's time (it runs inside whatever allocates)
    server_thread, gc_time, gc_started = threading.get_ident(), [0.0], [0.0]

    def on_gc(phase, info) -> None:
        if threading.get_ident() == server_thread:
            if phase == "start":
                gc_started[0] = time.thread_time()
            else:
                gc_time[0] += time.thread_time() - gc_started[0]

    gc.callbacks.append(on_gc)

    def clients() -> None:
        try:
            p = pool()
            while p is not None and len(p) < min(expect, p.size):
                time.sleep(0.2)
            report["pool"] = len(p) if p is not None else 0
            pool_module.QUIET_S = 1e9  # no refill while students arrive: its builds would count
            report["load_start"] = open("/proc/loadavg").read().split()[:3]
            for r in range(args.rounds):
                loop.add_callback(mark, "start")
                if profiler:
                    loop.add_callback(profiler.enable)
                outs = [{} for _ in range(args.students)]
                for out in outs:
                    asyncio.run(open_like_a_browser(url, 0.0, out))
                done = threading.Event()
                stop = profiler.disable if profiler else (lambda: None)
                loop.add_callback(lambda done=done, stop=stop: (mark("end"), stop(), done.set()))
                done.wait(60)
                bad = [o for o in outs if not o.get("ok")]
                if bad:
                    raise RuntimeError(f"pages not working: {bad[:2]}")
                per_round.append((marks["end"] - marks["start"]) / args.students)
                gc_share = (marks["gc_end"] - marks["gc_start"]) / args.students
                print(
                    f"round {r + 1}: server thread CPU {1000 * per_round[-1]:.1f} ms a student, "
                    f"of which garbage collection {1000 * gc_share:.1f} ms",
                    flush=True,
                )
            report["load_end"] = open("/proc/loadavg").read().split()[:3]
        finally:
            loop.add_callback(loop.stop)

    threading.Thread(target=clients, daemon=True).start()
    loop.start()
    server.stop()
    report["server_cpu_ms_per_student"] = [round(1000 * x, 1) for x in per_round]
    report["median_ms"] = round(1000 * statistics.median(per_round), 1) if per_round else None
    if profiler:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(args.profile)
        stats.sort_stats("tottime").print_stats(args.profile)
        for name in args.callers:
            stats.print_callers(name)
        print(out.getvalue())
    print(json.dumps(report), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    pn.state.kill_all_servers() if hasattr(pn.state, "kill_all_servers") else None
    return report


if __name__ == "__main__":
    main()
