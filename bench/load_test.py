"""Classroom load bench: N real websocket sessions (bokeh.client) + a few Chromium pages.

    python bench/load_test.py --sessions 50 --duration 60            # starts its own server
    python bench/load_test.py --sessions 50 --duration 60 --through-nginx --processes 2
    python bench/load_test.py --target http://127.0.0.1:5006/main    # an already running server

Each session moves slider x-3-0 four times a second and times move → the
server's new 'weights-cells' data arriving back on its client document.
Reports latency percentiles, errors, cross-session leaks, server CPU and
RSS (idle, with N sessions, across 1000 moves per session, 60 s after
close), and two faults: a client killed mid-drag (SIGKILL, no close) and a
client flooding moves while the others keep going.  A bench, not a test.
Only loopback is contacted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing as mp
import os
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MOVE_TIMEOUT = 10.0
SLIDER = "x-3-0"
SOURCE = "weights-cells"


# -- one client session ---------------------------------------------------------


class Client:
    """A bokeh.client session on the explorer that can move a slider and wait for the answer."""

    def __init__(self, url: str):
        import panel.models  # noqa: F401  (registers Panel's models in this process)
        from bokeh.client import pull_session

        self.session = pull_session(url=url)
        self.doc = self.session.document
        self.src = self.doc.get_model_by_name(SOURCE)
        self.slider = self.doc.get_model_by_name(SLIDER)
        if self.src is None or self.slider is None:
            raise RuntimeError(f"{SOURCE} or {SLIDER} is not in the served document")
        self.updates = 0
        self.foreign = 0  # slider values the server wrote that this client never set
        self.doc.on_change(self._on_change)

    def _on_change(self, event) -> None:
        model = getattr(event, "model", None)
        if model is self.src:
            self.updates += 1
        elif (
            getattr(event, "setter", None) is self.session
            and getattr(model, "name", "") .startswith("x-")
            and getattr(event, "attr", "") == "value"
            and getattr(event, "new", None) != getattr(event, "old", None)
        ):
            self.foreign += 1

    def spin(self, predicate, timeout: float) -> bool:
        """Run the client's IO loop until predicate() or timeout; False on timeout."""
        conn = self.session._connection
        loop = conn._loop
        timed_out = []

        def give_up():
            timed_out.append(True)
            loop.stop()

        handle = loop.call_later(timeout, give_up)
        conn._loop_until(predicate)
        loop.remove_timeout(handle)
        return not timed_out

    def move(self, value: float, timeout: float = MOVE_TIMEOUT) -> float:
        """Set the slider; seconds until the server's weights arrive (TimeoutError if they do not)."""
        before = self.updates
        t0 = time.perf_counter()
        self.slider.value = value
        if not self.spin(lambda: self.updates > before, timeout):
            raise TimeoutError("no update from the server")
        return time.perf_counter() - t0

    def send_only(self, value: float) -> None:
        self.slider.value = value  # queued on the client's loop; flushed by the next spin

    def roundtrip(self) -> None:
        self.session._connection.force_roundtrip()

    def matches_own_state(self) -> bool:
        """Are the weights on show the ones this client's own sliders produce?"""
        import numpy as np

        from widgets.state import HeadState

        sliders = [m for m in self.doc.models if getattr(m, "name", "") and m.name.startswith("x-")]
        if not sliders:
            return True
        T = 1 + max(int(m.name.split("-")[1]) for m in sliders)
        C = 1 + max(int(m.name.split("-")[2]) for m in sliders)
        X = np.zeros((T, C))
        for m in sliders:
            _, t, c = m.name.split("-")
            X[int(t), int(c)] = m.value
        state = HeadState()
        if state.X.shape != X.shape or not state.apply(X=X):
            return True  # a different preset is on show; nothing to compare against
        expected = np.sort(np.asarray(state.head.weights, dtype=float).ravel())
        shown = np.sort(np.asarray(self.src.data["value"], dtype=float).ravel())
        return expected.shape == shown.shape and bool(np.allclose(expected, shown, atol=1e-6))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.session.close()


def values_for(k: int):
    """A zig-zag of distinct slider values, offset per session so neighbours differ."""
    n = 0
    while True:
        yield round(-1.5 + ((k * 7 + n) % 61) * 0.05, 2)
        n += 1


def run_session(url, k, start_at, stop_at, rate, moves, results, flood=False):
    """One session in a thread: connect, wait for start_at, move at `rate`/s until stop_at or `moves`."""
    out = {"k": k, "lat": [], "errors": [], "foreign": 0, "isolated": None, "sent": 0}
    try:
        client = Client(url)
    except Exception as exc:
        out["errors"].append(f"connect: {exc!r}")
        results.append(out)
        return
    try:
        while time.time() < start_at:
            time.sleep(min(0.05, max(0.0, start_at - time.time())))
        vals = values_for(k)
        period = 1.0 / rate if rate else 0.0
        nxt = time.time()
        n = 0
        while time.time() < stop_at and (moves is None or n < moves):
            if flood:  # `rate` moves a second without waiting for the answers; drain once a second
                for _ in range(max(1, int(rate / 10))):
                    client.send_only(next(vals))
                    out["sent"] += 1
                client.spin(lambda: True, 1.0)
                if out["sent"] % max(1, int(rate)) < max(1, int(rate / 10)):
                    client.roundtrip()
                nxt += 0.1
            else:
                try:
                    out["lat"].append((time.time(), client.move(next(vals))))
                except Exception as exc:
                    out["errors"].append(f"move: {exc!r}")
                    break
                nxt += period
            n += 1
            time.sleep(max(0.0, nxt - time.time()))
        if not flood and not out["errors"]:
            client.roundtrip()
            out["isolated"] = client.matches_own_state()
        out["foreign"] = client.foreign
    except Exception as exc:
        out["errors"].append(f"session: {exc!r}")
    finally:
        client.close()
        results.append(out)


def client_process(url, ks, start_at, stop_at, rate, moves, queue, stagger=0.0, flood=False):
    """A process holding several sessions, one thread each."""
    results: list = []
    threads = []
    for k in ks:
        th = threading.Thread(
            target=run_session, args=(url, k, start_at, stop_at, rate, moves, results, flood), daemon=True
        )
        th.start()
        threads.append(th)
        time.sleep(stagger)
    deadline = stop_at + 60
    for th in threads:
        th.join(timeout=max(1.0, deadline - time.time()))
    queue.put(results)


def vanishing_client(url, seconds):
    """Connect, drag, then die with SIGKILL: the socket is never closed by the client."""
    client = Client(url)
    vals = values_for(999)
    t_end = time.time() + seconds
    while time.time() < t_end:
        client.send_only(next(vals))
        client.spin(lambda: True, 0.5)
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGKILL)


# -- Chromium pages -------------------------------------------------------------

BROWSER_SETUP = """() => {
  const doc = Bokeh.documents[0];
  const src = doc.get_model_by_name('weights-cells');
  window.__lt = {src, slider: doc.get_model_by_name('x-3-0'), res: null, t0: 0};
  const hit = () => { const r = window.__lt.res; if (r) { window.__lt.res = null; r(performance.now() - window.__lt.t0); } };
  src.connect(src.change, hit);
  src.connect(src.properties.data.change, hit);
  return true;
}"""
BROWSER_MOVE = """(v) => new Promise((resolve) => {
  const lt = window.__lt; lt.res = resolve; lt.t0 = performance.now();
  setTimeout(() => { if (lt.res === resolve) { lt.res = null; resolve(-1); } }, 10000);
  lt.slider.value = v;
})"""


def browser_process(url, pages, start_at, stop_at, rate, queue):
    out = {"lat": [], "errors": [], "pages": pages}
    try:
        from playwright.sync_api import sync_playwright

        sys.path.insert(0, str(ROOT / "tests"))
        from conftest import CHROMIUM, CHROMIUM_FLAGS

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            tabs = []
            for _ in range(pages):
                page = browser.new_context().new_page()
                page.goto(url, timeout=120_000)
                page.wait_for_function(
                    "() => window.Bokeh && Bokeh.documents.length && "
                    "Bokeh.documents[0].get_model_by_name('weights-cells')",
                    timeout=120_000,
                )
                page.evaluate(BROWSER_SETUP)
                tabs.append(page)
            while time.time() < start_at:
                time.sleep(0.05)
            vals = [values_for(500 + i) for i in range(pages)]
            nxt = time.time()
            while time.time() < stop_at:
                for i, page in enumerate(tabs):
                    ms = page.evaluate(BROWSER_MOVE, next(vals[i]))
                    if ms < 0:
                        out["errors"].append("browser: no update within 10 s")
                    else:
                        out["lat"].append((time.time(), ms / 1000))
                nxt += 1.0 / rate
                time.sleep(max(0.0, nxt - time.time()))
            browser.close()
    except Exception as exc:
        out["errors"].append(f"browser: {exc!r}")
    queue.put(out)


# -- server metrics -------------------------------------------------------------

CLK = os.sysconf("SC_CLK_TCK")


def proc_stat(pid: int) -> tuple[float, int]:
    """(cpu seconds, rss bytes) of one process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return cpu, rss


def tree(pids: list[int]) -> list[int]:
    """The pids and all their descendants (panel --num-procs forks)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError):
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d))
    out, todo = [], list(pids)
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


class Monitor:
    def __init__(self, pids: list[int]):
        self.pids = pids
        self.samples: list[tuple[float, float, int]] = []  # (time, cpu seconds, rss bytes), summed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> tuple[float, float, int]:
        cpu = rss = 0
        for pid in tree(self.pids):
            with contextlib.suppress(OSError):
                c, r = proc_stat(pid)
                cpu += c
                rss += r
        return time.time(), cpu, rss

    def _run(self):
        while not self._stop.is_set():
            self.samples.append(self.sample())
            self._stop.wait(1.0)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)

    def cpu_percent(self, t0: float, t1: float) -> float:
        pts = [s for s in self.samples if t0 <= s[0] <= t1]
        if len(pts) < 2:
            return float("nan")
        return 100 * (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])

    def rss_at(self, t: float) -> int:
        return min(self.samples, key=lambda s: abs(s[0] - t))[2]


# -- orchestration --------------------------------------------------------------


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q / 100 * len(xs)) - 1))]


@contextlib.contextmanager
def server(args, logdir: Path):
    """Yield (url of /main, [server pids])."""
    if args.target:
        yield args.target, [int(p) for p in args.server_pid]
        return
    from app.run_cluster import cluster

    if args.through_nginx:
        with cluster(args.processes, args.port, session_lifetime_min=args.session_lifetime,
                     log_dir=logdir) as c:
            yield f"{c['url']}/main", [p.pid for _, p in c["backends"]]
    else:
        import subprocess

        from app.classroom import build_argv
        from app.run_cluster import free_port, wait_for_http

        port = args.port or free_port()
        argv = build_argv(port, "127.0.0.1", [], args.processes,
                          session_lifetime_min=args.session_lifetime, admin=False)
        log = open(logdir / f"server-{port}.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_http(f"http://127.0.0.1:{port}/main")
            yield f"http://127.0.0.1:{port}/main", [proc.pid]
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


def spawn_clients(ctx, url, ks, start_at, stop_at, rate, moves, per_proc, stagger, flood=False):
    queue = ctx.Queue()
    procs = []
    for i in range(0, len(ks), per_proc):
        p = ctx.Process(target=client_process,
                        args=(url, ks[i:i + per_proc], start_at, stop_at, rate, moves, queue, stagger, flood))
        p.start()
        procs.append(p)
    return queue, procs


def collect(queue, procs, timeout):
    results = []
    deadline = time.time() + timeout
    for _ in procs:
        with contextlib.suppress(Exception):
            results += queue.get(timeout=max(1.0, deadline - time.time()))
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
    return results


def run(args) -> dict:
    ctx = mp.get_context("spawn")
    logdir = Path(args.logdir)
    logdir.mkdir(parents=True, exist_ok=True)
    report: dict = {"args": vars(args), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    linger = args.session_lifetime * 60 + 12  # lifetime + one unused-session check
    with server(args, logdir) as (url, pids):
        report["url"] = url
        mon = Monitor(pids).start()
        # warm up (first session imports everything), then let its session expire: the idle baseline
        w = Client(url)
        w.move(0.5)
        w.close()
        time.sleep(linger)
        t_idle = time.time()
        report["rss_idle_mb"] = mon.sample()[2] / 2**20

        # the classroom: N sessions + a few Chromium pages
        n = args.sessions
        connect_budget = args.connect_budget
        start_at = time.time() + connect_budget
        stop_at = start_at + args.duration
        queue, procs = spawn_clients(ctx, url, list(range(n)), start_at, stop_at, args.rate, None,
                                     args.per_process, connect_budget * 0.8 / max(1, args.per_process))
        bqueue = ctx.Queue()
        bproc = None
        if args.browsers:
            bproc = ctx.Process(target=browser_process,
                                args=(url, args.browsers, start_at, stop_at, args.rate, bqueue))
            bproc.start()
        # faults, inside the run: a client killed mid-drag at 1/3, a flooder at 2/3
        t_vanish = start_at + args.duration / 3
        t_flood = start_at + 2 * args.duration / 3
        while time.time() < t_vanish:
            time.sleep(0.1)
        vanish = ctx.Process(target=vanishing_client, args=(url, 3.0))
        vanish.start()
        while time.time() < t_flood:
            time.sleep(0.1)
        fq, fprocs = spawn_clients(ctx, url, [10_000], time.time() + 3, time.time() + 3 + args.flood_seconds,
                                   args.flood_rate, None, 1, 0.0, flood=True)
        flood_window = (time.time() + 3, time.time() + 3 + args.flood_seconds)
        results = collect(queue, procs, stop_at - time.time() + 90)
        flood = collect(fq, fprocs, 30)
        vanish.join(timeout=30)
        bres = bqueue.get(timeout=120) if bproc else {"lat": [], "errors": [], "pages": 0}
        if bproc:
            bproc.join(timeout=10)
        t_end = time.time()

        lat_all = [l for r in results for (_, l) in r["lat"]]
        base = [l for r in results for (t, l) in r["lat"] if start_at + 5 <= t < t_vanish]
        during = [l for r in results for (t, l) in r["lat"] if flood_window[0] <= t <= flood_window[1]]
        errors = [e for r in results for e in r["errors"]]
        connected = [r for r in results if not any(e.startswith("connect") for e in r["errors"])]
        report.update(
            sessions=n,
            sessions_connected=len(connected),
            moves=len(lat_all),
            moves_per_s=len(lat_all) / args.duration,
            p50_ms=1000 * pct(lat_all, 50),
            p95_ms=1000 * pct(lat_all, 95),
            p99_ms=1000 * pct(lat_all, 99),
            max_ms=1000 * max(lat_all, default=float("nan")),
            errors=len(errors) + len(bres["errors"]),
            error_samples=(errors + bres["errors"])[:5],
            foreign_writes=sum(r["foreign"] for r in results),
            isolation_failures=sum(1 for r in results if r["isolated"] is False),
            isolation_checked=sum(1 for r in results if r["isolated"] is not None),
            browser_pages=bres["pages"],
            browser_moves=len(bres["lat"]),
            browser_p50_ms=1000 * pct([l for _, l in bres["lat"]], 50),
            browser_p95_ms=1000 * pct([l for _, l in bres["lat"]], 95),
            cpu_percent=mon.cpu_percent(start_at, stop_at),
            rss_with_n_mb=mon.rss_at(start_at) / 2**20,
            rss_end_of_run_mb=mon.rss_at(stop_at) / 2**20,
            baseline_p95_ms=1000 * pct(base, 95),
            flood_p95_ms=1000 * pct(during, 95),
            flood_p50_ms=1000 * pct(during, 50),
            baseline_p50_ms=1000 * pct(base, 50),
            flood_sent=sum(r["sent"] for r in flood),
            flood_rate_achieved=sum(r["sent"] for r in flood) / args.flood_seconds,
            flood_errors=[e for r in flood for e in r["errors"]][:3],
            vanish_exitcode=vanish.exitcode,
        )
        report["rss_per_session_kb"] = (report["rss_with_n_mb"] - report["rss_idle_mb"]) * 1024 / max(1, n)

        # RSS across 1000 moves per session (a few sessions, moving as fast as answers come)
        m = args.moves_sessions
        t0 = time.time() + 15
        queue, procs = spawn_clients(ctx, url, list(range(20_000, 20_000 + m)), t0, t0 + 3600, 0,
                                     args.moves, m, 0.0)
        mres = collect(queue, procs, 900)
        t1 = time.time()
        report.update(
            moves_phase_sessions=m,
            moves_phase_moves=sum(len(r["lat"]) for r in mres),
            moves_phase_errors=sum(len(r["errors"]) for r in mres),
            rss_moves_start_mb=mon.rss_at(t0 + 2) / 2**20,
            rss_moves_end_mb=mon.rss_at(t1 - 1) / 2**20,
            moves_phase_p50_ms=1000 * pct([l for r in mres for _, l in r["lat"]], 50),
        )
        report["rss_moves_mid_mb"] = mon.rss_at((t0 + t1) / 2) / 2**20

        # 60 s after every session closed (sessions are discarded after the lifetime + a check)
        time.sleep(max(args.after_close, linger))
        report["rss_after_close_mb"] = mon.sample()[2] / 2**20
        report["seconds_after_close"] = round(time.time() - t1)
        w = Client(url)
        report["alive_after"] = w.move(0.25) < MOVE_TIMEOUT
        w.close()
        mon.stop()
        report["idle_at"] = t_idle
        report["elapsed_s"] = round(time.time() - t_end)
    logs = "".join(p.read_text(errors="replace") for p in logdir.glob("*.log"))
    report["server_tracebacks"] = logs.count("Traceback")
    report["server_log_errors"] = sum(1 for line in logs.splitlines() if " ERROR" in line)
    return report


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--duration", type=float, default=60.0, help="seconds of moving (the issue asks 600)")
    p.add_argument("--rate", type=float, default=4.0, help="moves per second per session")
    p.add_argument("--browsers", type=int, default=2, help="real Chromium pages among the clients")
    p.add_argument("--target", help="URL of /main on a running server (default: start one)")
    p.add_argument("--server-pid", action="append", default=[], help="with --target: pids to measure")
    p.add_argument("--through-nginx", action="store_true")
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--session-lifetime", type=float, default=0.25, metavar="MINUTES")
    p.add_argument("--per-process", type=int, default=15, help="sessions per client process")
    p.add_argument("--connect-budget", type=float, default=60.0, help="seconds allowed to open all sessions")
    p.add_argument("--moves", type=int, default=1000, help="moves per session in the RSS-flatness phase")
    p.add_argument("--moves-sessions", type=int, default=4)
    p.add_argument("--flood-rate", type=float, default=1000.0)
    p.add_argument("--flood-seconds", type=float, default=5.0)
    p.add_argument("--logdir", default=str(ROOT / "test-artifacts" / "bench-logs"))
    p.add_argument("--after-close", type=float, default=60.0, help="seconds to wait after closing")
    p.add_argument("--json", help="also write the report here")
    args = p.parse_args(argv)
    report = run(args)
    text = json.dumps(report, indent=1, default=str)
    print(text)
    if args.json:
        Path(args.json).write_text(text)


if __name__ == "__main__":
    main()
