"""Where a classroom send's server CPU goes: py-spy on both backends during sends only.

    python bench/profile_send.py --students 100 --sends 6 --pyspy /path/to/py-spy --out /tmp/send

Same set-up as bench/bench_class.py (two backends, Redis, N Wire students); py-spy (not a requirement of
the project: give its path) samples each backend while the sends go out, and writes collapsed stacks
(OUT-PID.txt), which `--top` sums per function (own time and with callees).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_class import cpu_seconds, head, note, wait_until  # noqa: E402
from bench.load_test import Wire  # noqa: E402
from widgets.broadcast import LAST_SEND_KEY, SEND_CHANNEL, Send  # noqa: E402


async def run(urls, redis_url, pids, n, sends, pyspy, out):
    import redis.asyncio

    students = []
    for k in range(0, n, 10):
        batch = [Wire(urls[i % len(urls)]) for i in range(k, min(n, k + 10))]
        students += await asyncio.gather(*(w.open() for w in batch))
    note(f"{len(students)} students connected")
    client = redis.asyncio.Redis.from_url(redis_url)
    heads = [head("exercise-1"), head("chapter")]
    await asyncio.sleep(2)
    spies = [
        subprocess.Popen(
            [pyspy, "record", "--pid", str(pid), "--format", "raw", "--rate", "200", "-o", f"{out}-{pid}.txt",
             "--nonblocking"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for pid in pids
    ]
    await asyncio.sleep(1.5)
    for r in range(sends):
        before = [w.updates for w in students]
        send = Send(params=heads[r % 2])
        c0, t0 = cpu_seconds(pids), time.perf_counter()
        await client.set(LAST_SEND_KEY, send.to_json())
        await client.publish(SEND_CHANNEL, send.to_json())
        await wait_until(lambda before=before: all(w.updates > b for w, b in zip(students, before)), 60)
        note(f"send {r}: {time.perf_counter() - t0:.2f} s, CPU {cpu_seconds(pids) - c0:.2f} s")
        await asyncio.sleep(0.7)
    for spy in spies:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)
    await asyncio.gather(*(w.close() for w in students), return_exceptions=True)


def top(files, k=45):
    own, total = collections.Counter(), collections.Counter()
    samples = 0
    for f in files:
        for line in Path(f).read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            count = int(count)
            frames = stack.split(";")
            samples += count
            own[frames[-1]] += count
            for fr in set(frames):
                total[fr] += count
    print(f"{samples} samples")
    print("== with callees")
    for fr, c in total.most_common(k):
        print(f"{100 * c / samples:5.1f}%  {fr}")
    print("== own")
    for fr, c in own.most_common(25):
        print(f"{100 * c / samples:5.1f}%  {fr}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--students", type=int, default=100)
    p.add_argument("--sends", type=int, default=6)
    p.add_argument("--pyspy", default="py-spy")
    p.add_argument("--out", default="/tmp/send-profile")
    p.add_argument("--top", nargs="*")
    ns = p.parse_args()
    if ns.top:
        top(ns.top)
        return
    from app.redis_server import redis_url
    from app.run_cluster import cluster

    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    with cluster(2, session_lifetime_min=2) as c:
        urls = [f"http://127.0.0.1:{port}/main" for port, _ in c["backends"]]
        pids = [proc.pid for _, proc in c["backends"]]
        asyncio.run(run(urls, redis_url(c["redis_port"]), pids, ns.students, ns.sends, ns.pyspy, ns.out))
        print(" ".join(f"{ns.out}-{pid}.txt" for pid in pids))


if __name__ == "__main__":
    main()
