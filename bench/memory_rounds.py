"""Server memory per session, and after a class leaves: the app beside the floor page, two allocators.

    .venv/bin/python bench/memory_rounds.py [--rounds 3] [--sessions 30] [--wait 30] [--out FILE]

Each configuration gets a classroom server of its own (app/classroom.py's flags, sessions discarded
6 s after they close), all started at once. One session is opened on each and left to expire first, so
that "idle" is a server that has already imported everything a session needs. Then the configurations
take turns, in rounds (A B C D A B C D ...): N websocket sessions (bench/load_test.py's Wire) open, move
their slider once, and close; the peak is read while they are open and the process's memory again
`--wait` seconds after they closed. The load average is recorded with every class.

* If closed sessions leaked, the peak would climb by a class's worth every round.
* Per session = (peak − idle) / N; the floor page (bench/floor_app.py: one slider, one heatmap) shows
  what a Bokeh + Panel session costs before this app adds its models.
* `python -m app.classroom --return-memory` (PYTHONMALLOC=malloc) makes Python take every object from the
  C allocator instead of its own pools, which the server's malloc_trim after a class can hand back to the
  system (app/serving.py).
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

from app.classroom import build_argv, server_env  # noqa: E402
from app.serving import free_port, stop_process, wait_for_http  # noqa: E402
from bench.load_test import Wire  # noqa: E402

CONFIGS = (  # (page, started as with --return-memory)
    ("app/main.py", False),
    ("app/main.py", True),
    ("bench/floor_app.py", False),
    ("bench/floor5_app.py", False),
)
EXPIRE_S = 25  # sessions are discarded ≤ 16 s after closing (6 s lifetime + 10 s check); then the release


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


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def start(page: str, return_memory: bool):
    port = free_port()
    app = ROOT / page
    origins = [f"127.0.0.1:{port}"]
    cmd = build_argv(port, "127.0.0.1", origins, 1, session_lifetime_min=0.1, admin=False, app=app)
    env = server_env(return_memory)
    server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    allocator = "C malloc (`--return-memory`)" if return_memory else "Python's own (default)"
    return server, f"http://127.0.0.1:{port}/{app.stem}", {"page": page, "allocator": allocator, "rounds": []}


def measure_all(rounds: int, sessions: int, wait: float) -> list[dict]:
    """Every configuration's server at once; then their classes in turn, round after round."""
    servers = [start(page, back) for page, back in CONFIGS]
    try:
        procs = []
        for server, url, _ in servers:
            wait_for_http(url)
            proc = psutil.Process(server.pid)
            asyncio.run(one_class(url, 1, proc))  # imports everything a session needs
            procs.append(proc)
        time.sleep(EXPIRE_S)
        for (_, _, out), proc in zip(servers, procs):
            out["idle_mb"] = rss_mb(proc)
        for k in range(rounds):
            for (_, url, out), proc in zip(servers, procs):
                load = loadavg()
                peak = asyncio.run(one_class(url, sessions, proc))
                time.sleep(wait)
                after = rss_mb(proc)
                out["rounds"].append({"round": k + 1, "load": load, "peak_mb": peak, "after_mb": after})
                print(out["page"], out["allocator"], out["idle_mb"], out["rounds"][-1], flush=True)
    finally:
        for server, _, _ in servers:
            stop_process(server)
    results = [out for _, _, out in servers]
    for out in results:
        peaks = [r["peak_mb"] for r in out["rounds"]]
        out["per_session_kb"] = (max(peaks) - out["idle_mb"]) * 1024 / sessions
        out["after_vs_idle"] = out["rounds"][-1]["after_mb"] / out["idle_mb"]
    return results


def table(results: list[dict], wait: float) -> str:
    lines = [
        "| page | allocator | idle | peak with a class open, each round | per session"
        f" | {wait:.0f} s after the last class left | load average per class |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        peaks = ", ".join(f"{x['peak_mb']:.1f}" for x in r["rounds"])
        after = r["rounds"][-1]["after_mb"]
        vs_idle = (r["after_vs_idle"] - 1) * 100
        lines.append(
            f"| `{r['page']}` | {r['allocator']} | {r['idle_mb']:.1f} MB | {peaks} MB"
            f" | {r['per_session_kb']:.0f} kB | {after:.1f} MB ({vs_idle:+.0f} % of idle)"
            f" | {', '.join(x['load'].split()[0] for x in r['rounds'])} |"
        )
    return "\n".join(lines)


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--wait", type=float, default=30.0, help="seconds after each class closes")
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    args = ap.parse_args(argv)
    results = measure_all(args.rounds, args.sessions, args.wait)
    text = table(results, args.wait)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return results


if __name__ == "__main__":
    main()
